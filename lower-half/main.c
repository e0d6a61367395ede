/* mana_lh: the lower half.  What mpirun/srun start for each rank; it prepares the address space,
 * loads the application as the upper half and hands it the real MPI through the boundary page.
 *
 * MPI is initialized lazily, when the application calls MPI_Init/MPI_Init_thread, at
 * max(requested, MPI_THREAD_SERIALIZED): programs that never call MPI do not need a PMI server,
 * the application's own thread level decides whether MPICH takes locks, and a restart (which
 * must initialize MPI before it can restore anything) uses the level recorded in the image. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <mpi.h>

#include "environment.h"
#include "loader.h"
#include "stack.h"
#include "address_space.h"
#include "lh_table.h"
#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "checkpoint.h"
#include "local_checkpoint.h"
#include "park.h"
#include "ckpt_signal_rank.h"
#include "park_storm.h"
#include "services.h"
#include "sigsys.h"
#include "mana/exe_dir.h"
#include "clock_calls.h"
#include "mana/upper_window.h"
#include "mana/launcher_rank.h"
#include "mpi_threads.h"
#include "fs_selector.h"
#include "huge_pages.h"
#include "state_sched.h"
#include "state_thread_names.h"

void mana_lh_table_fill(struct mana_lh_table *t);

static struct mana_lh_table table;

static void usage(FILE *out)
{
  fprintf(out, "usage: mana_lh APP [ARGS...]\n"
               "       mana_lh --restart IMAGE_DIR\n"
               "Runs APP as the upper half of a mana split process, or restarts this rank\n"
               "from its image in IMAGE_DIR. Normally started by mana_launch or\n"
               "mana_restart; see mana_launch(1).\n");
}

static const Elf64_auxv_t *find_auxv(char **envp)
{
  while (*envp)
    envp++;
  return (const Elf64_auxv_t *)(envp + 1);
}

/* Resolves APP as execvp would: a name without a slash is searched on PATH. */
static int resolve_app(const char *app, char *out, size_t outlen)
{
  if (strchr(app, '/'))
    return realpath(app, out) ? 0 : -1;
  const char *path = getenv("PATH");
  if (!path)
    path = "/usr/local/bin:/usr/bin:/bin";
  char *copy = strdup(path), *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char candidate[PATH_MAX];
    snprintf(candidate, sizeof(candidate), "%s/%s", *dir ? dir : ".", app);
    if (access(candidate, X_OK) == 0 && realpath(candidate, out)) {
      free(copy);
      return 0;
    }
  }
  free(copy);
  errno = ENOENT;
  (void)outlen;
  return -1;
}

static int stub_dir(char *out, size_t outlen)
{
  char exe_dir[PATH_MAX], lib[PATH_MAX + 16];
  if (mana_exe_dir(exe_dir, sizeof(exe_dir)) != 0)
    return -1;
  snprintf(lib, sizeof(lib), "%s/../lib/mana", exe_dir);
  char resolved[PATH_MAX];
  if (!realpath(lib, resolved))
    return -1;
  snprintf(out, outlen, "%s", resolved);
  return 0;
}

/* launching: this process runs the application from its start, so the main thread moves onto
 * holder 0 now; a restart does that once the image is in place (mana_restart_refill_boundary),
 * as the restored memory may need the low addresses holder 0 would take. */
static void fill_boundary(const struct mana_upper_start *up, int launching)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  int fsgs = (getauxval(AT_HWCAP2) & 2) != 0;
  mana_lh_table_fill(&table);
  mana_lh_services_fill(&table.svc);
  b->magic = MANA_BOUNDARY_MAGIC;
  b->version = MANA_BOUNDARY_VERSION;
  b->have_fsgsbase = (uint32_t)fsgs;
  b->lower_fs = launching ? mana_mpi_threads_main_fs() : mana_get_fs(fsgs);
  b->lh = &table;
  b->app_base = up->app_base;
  b->ldso_base = up->ldso_base;
  b->stack_low = up->stack_low;
  b->stack_high = up->stack_high;
  b->app_path = up->app_path;
  b->n_extra_ranges = 0;
  if (up->non_pie.end)
    b->extra_ranges[b->n_extra_ranges++] = up->non_pie;
}

/* This rank's number as the launcher tells it, before MPI is initialized. */
static unsigned long launcher_rank(void)
{
  unsigned long rank, size;
  return mana_launcher_rank((const char *const *)environ, &rank, &size) == 0 ? rank : 0;
}

/* A rank that cannot restart must not leave the others waiting in MPI_Init for it: neither
 * Hydra nor srun (without --kill-on-bad-exit) ends the job when a rank exits before it joined
 * MPI, and the healthy ranks wait in MPI_Init's barrier for ever.  Joining MPI_Init and
 * aborting through it ends the whole job within seconds (the error is already printed). */
static void take_the_job_down(void)
{
  int initialized = 0, provided;
  PMPI_Initialized(&initialized);
  if (!initialized && PMPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
    return;
  PMPI_Abort(MPI_COMM_WORLD, 1);
}

static int restart(const char *dir)
{
  char name[64], path[PATH_MAX], err[1024];
  mana_image_name((uint32_t)launcher_rank(), name, sizeof(name));
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  struct mana_upper_start none;
  memset(&none, 0, sizeof(none));
  fill_boundary(&none, 0);
  int rc = mana_restart_from(path, err, sizeof(err));
  fprintf(stderr, "mana_lh: cannot restart from %s: %s\n", path, err);
  if (rc == MANA_RESTART_FAILED_TOGETHER)
    PMPI_Finalize(); /* every rank ends here, each having said why */
  else
    take_the_job_down();
  return 1;
}

int main(int argc, char **argv, char **envp)
{
  const Elf64_auxv_t *auxv = find_auxv(envp);
  int first = 1;
  if (argc > 1 && strcmp(argv[1], "--") == 0)
    first = 2;
  char err[512];
  mana_sched_note_launch();
  if (argc == 3 && strcmp(argv[1], "--restart") == 0) {
    mana_prepare_process(argv);
    if (mana_fs_switch_configure(err, sizeof(err)) != 0) {
      fprintf(stderr, "mana_lh: %s\n", err);
      return 2;
    }
    mana_huge_pages_init();
    if (mana_build_brk_wall() != 0 || mana_reserve_window() != 0)
      return 1;
    return restart(argv[2]);
  }
  if (argc <= first || (first == 1 && argv[1][0] == '-')) {
    int help = argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  mana_prepare_process(argv);
  if (mana_fs_switch_configure(err, sizeof(err)) != 0) {
    fprintf(stderr, "mana_lh: %s\n", err);
    return 2;
  }
  mana_huge_pages_init();

  char app[PATH_MAX], stubs[PATH_MAX];
  if (resolve_app(argv[first], app, sizeof(app)) != 0) {
    fprintf(stderr, "mana_lh: %s: %s\n", argv[first], strerror(errno));
    return 127;
  }
  if (stub_dir(stubs, sizeof(stubs)) != 0) {
    fprintf(stderr, "mana_lh: the stub MPI library directory (../lib/mana beside mana_lh) is "
                    "missing; the installation is incomplete\n");
    return 1;
  }
  char **upper_env = mana_upper_environment(envp, stubs);
  if (!upper_env) {
    fprintf(stderr, "mana_lh: out of memory\n");
    return 1;
  }
  if (mana_build_brk_wall() != 0 || mana_reserve_window() != 0)
    return 1;
  mana_window_exclude_free_from_cores();

  struct mana_upper_start up;
  char app_vdso[PATH_MAX + 16];
  snprintf(app_vdso, sizeof(app_vdso), "%s/mana_vdso.so", stubs);
  if (mana_load_upper(&mana_the_window, app, app_vdso, argv + first, upper_env, auxv, &up, err,
                      sizeof(err)) != 0) {
    fprintf(stderr, "mana_lh: %s\n", err);
    return 1;
  }
  fill_boundary(&up, 1);
  if (mana_clock_fill_boundary(up.vdso_base) != 0) {
    fprintf(stderr, "mana_lh: %s lacks its re-issue trampolines; the installation is broken\n",
            app_vdso);
    return 1;
  }

  if (mana_park_install(MANA_PARK_SIGNAL) != 0 || mana_seccomp_install() != 0 ||
      mana_ckpt_signal_install() != 0 || mana_mpi_threads_start() != 0)
    return 1;
  mana_park_storm_start();
  mana_local_checkpoint_start();

  mana_thread_name_launch(app);
  fflush(NULL);
  mana_jump_to_upper(up.sp, up.entry);
}
