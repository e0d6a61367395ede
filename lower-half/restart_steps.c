/* The steps of a restart other than restoring state: checking that an image fits this
 * process and this job, initializing MPI as the image's rank, and pointing the restored
 * boundary page at this lower half.  restart.c puts them in order. */
#define _GNU_SOURCE
#include "restart_steps.h"

#include "clock_calls.h"

#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "coord_layout.h"
#include "generation.h"
#include "lower_threads.h"
#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mpi_threads.h"
#include "services.h"
#include "mana/fail.h"
#include "mana/launcher_rank.h"

static int check_process(const struct mana_image_info *info, char *err, size_t errlen)
{
  struct utsname u;
  uname(&u);
  if (info->window_base != MANA_WINDOW_BASE || info->window_end != MANA_WINDOW_END) {
    return mana_fail(err, errlen, 0, "the image was written with another upper-half window");
  }
  if (strcmp(info->kernel_release, u.release) != 0) {
    return mana_fail(err, errlen, 0, "the image was written under kernel %s, this is %s",
                     info->kernel_release, u.release);
  }
  if (info->vdso_base != getauxval(AT_SYSINFO_EHDR)) {
    return mana_fail(err, errlen, 0,
                     "the vDSO is at %#lx here but was at %#lx when the image was written (is ASLR "
                     "disabled?)",
                     getauxval(AT_SYSINFO_EHDR), (unsigned long)info->vdso_base);
  }
  return 0;
}

/* Before MPI starts: a rank count that differs from the image's is an error every rank can see
 * at once (after MPI_Init, a missing rank would leave the others waiting). */
static int check_launch_size(const struct mana_image_info *info, char *err, size_t errlen)
{
  unsigned long rank, size;
  if (mana_launcher_rank((const char *const *)environ, &rank, &size) == 0 &&
      size != info->world_size) {
    return mana_fail(err, errlen, 0,
                     "the checkpoint has %u ranks but %lu ranks were started: restart with -n %u",
                     info->world_size, size, info->world_size);
  }
  return 0;
}

int mana_restart_init_mpi(const struct mana_rank_facts *facts, char *err, size_t errlen)
{
  int provided, rank = -1, size = -1;
  int level = facts->thread_level < MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED
                                                          : (int)facts->thread_level;
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask); /* for the threads MPICH and UCX make */
  int rc = PMPI_Init_thread(NULL, NULL, level, &provided);
  mana_lower_threads_mask_leave(&mask);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(rc, text, &len); /* allowed before MPI is initialized */
    return mana_fail(err, errlen, 0, "MPI_Init_thread failed: %s",
                     text[0] ? text : "unknown MPI error");
  }
  mana_mpi_thread_level_restored((int)facts->thread_level);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if ((uint32_t)size != facts->world_size || (uint32_t)rank != facts->rank) {
    return mana_fail(err, errlen, 0,
                     "the job has %d ranks and this is rank %d, but the image is of rank %u of %u: "
                     "restart with the same number of ranks",
                     size, rank, facts->rank, facts->world_size);
  }
  return 0;
}

void mana_restart_refill_boundary(const struct mana_lh_table *table)
{
  /* The restored boundary page is the old process's: point it at this lower half. */
  MANA_BOUNDARY->lh = table;
  struct mana_boundary *b = MANA_BOUNDARY;
  b->have_fsgsbase = (getauxval(AT_HWCAP2) & 2) != 0;
  /* after the restore: holder 0 may take low addresses the image's mappings need */
  b->lower_fs = mana_mpi_threads_main_fs();
  b->park_requested = 0;
  b->restarted++;
  mana_clock_fill_boundary(0); /* the offsets are the clocks' state kind's (state_clocks.c) */
}

int mana_restart_check_image(int dirfd, const char *dir, const char *name,
                             const struct mana_image_info *info, char *err, size_t errlen)
{
  if (check_launch_size(info, err, errlen) != 0 || check_process(info, err, errlen) != 0)
    return -1;
  /* A committed generation: the image must be the one its MANIFEST lists (a local checkpoint's
   * directory has none). */
  if (faccessat(dirfd, STORE_MANIFEST_FILE, F_OK, 0) != 0)
    return 0;
  struct mana_generation gen = {0};
  int rc = mana_generation_of_dir(dir, &gen, err, errlen) != 0 ||
                   mana_generation_check_image(&gen, name, info, err, errlen) != 0
               ? -1
               : 0;
  mana_generation_release(&gen);
  return rc;
}
