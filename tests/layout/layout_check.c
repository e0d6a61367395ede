/* Run under mana: proves the split-process layout from inside a running rank.
 *  - every page the application owns (its executable, the stub libmpich, its ld.so/libc copy,
 *    malloc'd memory small and large, thread stacks, anonymous mmap, mremap'd growth) lies in
 *    the upper-half window;
 *  - the real libmpich is mapped exactly once, outside the window (by the lower half);
 *  - a range the application unmaps inside the window stays reserved (PROT_NONE), so the
 *    lower half can never be handed it.
 * Prints one line per check and exits non-zero if any fails. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mana/boundary.h"

static int failures;

static void check(int ok, const char *what)
{
  printf("%s %s\n", ok ? "OK  " : "FAIL", what);
  failures += !ok;
}

static int in_window(const void *p)
{
  return (uintptr_t)p >= MANA_WINDOW_BASE && (uintptr_t)p < MANA_WINDOW_END;
}

static void *thread_main(void *arg)
{
  int local;
  *(int *)arg = in_window(&local);
  return NULL;
}

struct maps_summary {
  int app_out, app_in, stub_out, stub_in, real_mpich_in, real_mpich_exec, real_mpich_total;
  int libc_in, libc_out;
};

static struct maps_summary scan_maps(const char *app)
{
  struct maps_summary m = {0};
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  while (f && fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    char perms[8], path[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095[^\n]", &lo, &hi, perms, path) < 3)
      continue;
    int in = in_window((void *)lo) && hi <= MANA_WINDOW_END;
    if (!strcmp(path, app))
      in ? m.app_in++ : m.app_out++;
    if (strstr(path, "/lib/mana/libmpich.so"))
      in ? m.stub_in++ : m.stub_out++;
    if (strstr(path, "x86_64-linux-gnu/libmpich.so")) {
      m.real_mpich_total++;
      m.real_mpich_in += in;
      m.real_mpich_exec += perms[2] == 'x';
    }
    if (strstr(path, "/libc.so.6"))
      in ? m.libc_in++ : m.libc_out++;
  }
  if (f)
    fclose(f);
  return m;
}

static int range_is_reserved(void *p, size_t len)
{
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int reserved = 0;
  while (f && fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo <= (uintptr_t)p &&
        (uintptr_t)p + len <= hi)
      reserved = !strcmp(perms, "---p");
  }
  if (f)
    fclose(f);
  return reserved;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  char app[4096];
  if (!realpath(argv[0], app))
    snprintf(app, sizeof(app), "%s", argv[0]);

  void *small = malloc(64), *large = malloc(64 << 20);
  check(in_window(small) && in_window(large), "malloc (small and 64 MiB) inside the window");
  int local, thread_ok = 0;
  check(in_window(&local), "main thread stack inside the window");
  pthread_t t;
  pthread_create(&t, NULL, thread_main, &thread_ok);
  pthread_join(t, NULL);
  check(thread_ok, "pthread stack inside the window");
  char *anon = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  check(anon != MAP_FAILED && in_window(anon), "anonymous mmap inside the window");
  char *grown = mremap(anon, 1 << 20, 16 << 20, MREMAP_MAYMOVE);
  check(grown != MAP_FAILED && in_window(grown), "mremap growth stays inside the window");
  void *alloc_mem = NULL;
  MPI_Alloc_mem(1 << 16, MPI_INFO_NULL, &alloc_mem);
  check(in_window(alloc_mem), "MPI_Alloc_mem memory inside the window");
  MPI_Free_mem(alloc_mem);

  char *hole = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(hole, 8 << 20);
  check(in_window(hole) && range_is_reserved(hole, 8 << 20),
        "an unmapped window range stays reserved (PROT_NONE)");

  struct maps_summary m = scan_maps(app);
  check(m.app_in > 0 && m.app_out == 0, "application executable mapped only inside the window");
  check(m.stub_in > 0 && m.stub_out == 0, "stub libmpich mapped only inside the window");
  check(m.real_mpich_total > 0 && m.real_mpich_in == 0,
        "real libmpich mapped, and only outside the window");
  check(m.real_mpich_exec == 1, "real libmpich mapped once (one executable segment)");
  check(m.libc_in > 0 && m.libc_out > 0, "one libc in each half");

  free(small);
  free(large);
  munmap(grown, 16 << 20);
  MPI_Finalize();
  return failures ? 1 : 0;
}
