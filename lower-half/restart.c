/* Restarting a rank from its image, in a fresh mana_lh whose window is reserved: the order of
 * the phases, and nothing else.
 *   1. open and check the image (restart_steps.c: rank count, window, kernel, vDSO, MANIFEST);
 *   2. restore every kind of state in the order of mana_state_kinds (state.h): the resource
 *      limits, the memory, then window allocator, signal dispositions, open files, memfds,
 *      pipes, eventfds, pending signals ... (before MPI opens anything);
 *   3. re-fill the boundary's lower-half fields, re-arm parking and the seccomp filter, make
 *      the lower half's MPI threads again;
 *   4. initialize MPI at the recorded thread level and check rank and size, the shared
 *      memory's placement, then cut the application's files back (state_written_files.c) and
 *      meet every rank at a barrier;
 *   5. start collapsing the memory back into huge pages (with forked writers), the checkpoint
 *      links, recreate the parked threads and continue the main thread, which runs the stub's
 *      restart hook before releasing the others (state_threads.c). */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "coordinator_link.h"
#include "generation.h"
#include "huge_pages.h"
#include "ckpt_signal_rank.h"
#include "image.h"
#include "local_checkpoint.h"
#include "lower_threads.h"
#include "mana/boundary.h"
#include "mana/fault.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mpi_threads.h"
#include "park.h"
#include "restart_steps.h"
#include "sigsys.h"
#include "state.h"
#include "state_threads.h"
#include "mana/fail.h"

/* With huge pages on, the memory was read back into 4 KiB pages (image.h says why): map its
 * full 2 MiB ranges huge again while the application runs, as after a forked writer, so that
 * the next fork stays cheap.  Before any thread can begin a checkpoint, which stops it. */
static void collapse_restored_pages(void)
{
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask);
  mana_huge_pages_recollapse_start(mana_checkpoint_writer_nice());
  mana_lower_threads_mask_leave(&mask);
}

int mana_restart_from(const char *path, char *err, size_t errlen)
{
  char dir_buf[4096], name_buf[4096];
  snprintf(dir_buf, sizeof(dir_buf), "%s", path);
  snprintf(name_buf, sizeof(name_buf), "%s", path);
  const char *dir = dirname(dir_buf), *name = basename(name_buf);
  struct mana_image_reader *r = NULL;
  struct mana_image_info info;
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    return mana_fail(err, errlen, errno, "cannot open %s", dir);
  }
  if (mana_image_open(&r, dirfd, name, &info, err, errlen) != 0 ||
      mana_restart_check_image(dirfd, dir, name, &info, err, errlen) != 0)
    return -1;
  /* The pages an incremental image keeps in older generations' images. */
  static struct mana_generation_resolver older;
  mana_generation_resolver_init(&older, dir, info.rank);
  mana_image_set_resolver(r, mana_generation_resolve, &older);
  const struct mana_rank_facts *saved_facts;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_RANK, (const void **)&saved_facts, &len) != 0 ||
      len != sizeof(*saved_facts)) {
    return mana_fail(err, errlen, 0, "%s: no rank record", path);
  }
  struct mana_rank_facts facts = *saved_facts;
  /* Before anything is restored: the stub in the image reads the boundary page with the
   * layout it was built with, which this lower half would fill with its own. */
  uint32_t contract = MANA_BOUNDARY_VERSION + mana_fault("restart-other-build", (long)facts.rank);
  if (facts.boundary_version != contract)
    return mana_fail(err, errlen, 0,
                     "the image was written by another build of mana (the contract between its "
                     "halves is version %u, this mana's is %u): restart it with the mana that "
                     "wrote it",
                     facts.boundary_version, contract);
  const struct mana_lh_table *table = MANA_BOUNDARY->lh;
  for (size_t i = 0; mana_state_kinds[i]; i++)
    if (mana_state_kinds[i]->restore(r, err, errlen) != 0)
      return -1;
  mana_image_close(r);
  close(dirfd);

  mana_restart_refill_boundary(table);
  if (mana_park_install(MANA_PARK_SIGNAL) != 0 || mana_seccomp_install() != 0) {
    return mana_fail(err, errlen, 0, "cannot re-arm parking and the seccomp filter");
  }
  mana_sigsys_kept_blocked_restored();
  if (mana_ckpt_signal_install() != 0) /* after the restore: it keeps the application's aside */
    return mana_fail(err, errlen, 0, "cannot install the checkpoint signal's handler");
  if (mana_mpi_threads_restore(err, errlen) != 0)
    return -1;
  if (mana_fault("restart-kill", (long)facts.rank))
    raise(SIGKILL); /* the other ranks are in (or on their way to) MPI_Init */
  if (mana_restart_init_mpi(&facts, err, errlen) != 0 ||
      mana_state_signals_reapply(err, errlen) != 0)
    return -1;
  mana_state_file_maps_remove_restored();
  mana_state_sysv_shm_remove_restored();
  int placement = mana_state_file_maps_check_placement(err, errlen);
  if (placement != 0)
    return placement > 0 ? MANA_RESTART_FAILED_TOGETHER : -1;
  /* Every rank cuts its files back before any resumes: two ranks may append to one file. */
  if (mana_state_written_files_cut_back(err, errlen) != 0)
    return -1;
  if (PMPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
    return mana_fail(err, errlen, 0, "the ranks could not meet after cutting their files back");
  /* The links below can ask for a checkpoint at once; they wait for mana_restart_wait_resumed,
   * as until then the threads are resuming with every signal blocked and cannot park. */
  mana_threads_prepare_resume();
  collapse_restored_pages();
  mana_local_checkpoint_start(); /* a restarted job can be checkpointed again */
  mana_coordinator_link_start();
  return mana_threads_resume(err, errlen);
}
