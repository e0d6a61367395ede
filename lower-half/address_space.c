/* Address-space preparation (see address_space.h). */
#define _GNU_SOURCE
#include "address_space.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include "mana/boundary.h"
#include "mana/mpi_threads.h"
#include "mana/park.h"
#include "mana/upper_window.h"

/* Settings for libraries of the lower half that read their environment in constructors, before
 * main runs (libucs parses its configuration at load time): they only take effect through a
 * re-exec.  UCX's own SIGSEGV/SIGBUS handlers would fight ours; hwloc's GUI/XML plugins add a
 * hundred mappings for nothing.  A value the user set is kept. */
static const char *const lower_env[][2] = {
    {"UCX_ERROR_SIGNALS", ""},
    {"HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml,hwloc_pci"},
};

static int add_lower_env(void)
{
  char added[256] = "";
  int changed = 0;
  for (size_t i = 0; i < sizeof(lower_env) / sizeof(lower_env[0]); i++) {
    if (getenv(lower_env[i][0]))
      continue;
    setenv(lower_env[i][0], lower_env[i][1], 1);
    strncat(added, lower_env[i][0], sizeof(added) - strlen(added) - 2);
    strcat(added, ",");
    changed = 1;
  }
  if (changed)
    setenv(MANA_LH_ENV_ADDED, added, 1);
  return changed;
}

void mana_prepare_process(char **argv)
{
  if (getenv(MANA_LH_ENV_ADDED) || getenv("MANA_LH_REEXECED"))
    return; /* this is the re-executed image */
  int current = personality(0xffffffff);
  int want_aslr_off = current != -1 && !(current & ADDR_NO_RANDOMIZE) &&
                      personality((unsigned long)current | ADDR_NO_RANDOMIZE) != -1;
  /* (a seccomp'd container may forbid personality(): run with ASLR, restart is then riskier) */
  int env_changed = add_lower_env();
  if (!want_aslr_off && !env_changed)
    return;
  if (!env_changed)
    setenv("MANA_LH_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "mana_lh: warning: re-exec failed (%s); continuing\n", strerror(errno));
}

int mana_build_brk_wall(void)
{
  uintptr_t brk_now = (uintptr_t)sbrk(0);
  uintptr_t wall = (brk_now + 4095) & ~4095UL;
  void *p =
      mmap((void *)wall, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "mana_lh: cannot place the brk wall at %#lx: %s\n", (unsigned long)wall,
            strerror(errno));
    return -1;
  }
  return 0;
}

int mana_reserve_window(void)
{
  void *p = mmap((void *)MANA_WINDOW_BASE, MANA_WINDOW_SIZE, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr,
            "mana_lh: cannot reserve the upper-half window %#lx-%#lx: %s (something is already "
            "mapped there; see /proc/%d/maps)\n",
            MANA_WINDOW_BASE, MANA_WINDOW_END, strerror(errno), getpid());
    return -1;
  }
  /* The boundary page, the thread records and the MPI thread slots that follow it. */
  p = mmap((void *)MANA_WINDOW_BASE, 0x1000 + MANA_PARK_AREA_SIZE + MANA_MPI_THREADS_AREA_SIZE,
           PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) {
    perror("mana_lh: cannot map the boundary page");
    return -1;
  }
  mana_window_init(&mana_the_window, MANA_WINDOW_BASE + MANA_CONTROL_AREA_SIZE, MANA_WINDOW_END);
  return 0;
}

void mana_window_exclude_free_from_cores(void)
{
  const struct mana_window *w = &mana_the_window;
  for (uint32_t i = 0; i < w->n_free; i++)
    mana_exclude_from_cores(w->free[i].start, w->free[i].end - w->free[i].start);
}
