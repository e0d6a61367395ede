/* A checkpoint taken by the rank itself, without a coordinator: with
 * MANA_TEST_CHECKPOINT_AFTER_MS=T and MANA_TEST_CHECKPOINT_DIR=D, T ms after start the rank
 * runs the checkpoint phases (rank_checkpoint.c) with no peers to meet, writes
 * D/rank-NNNNNN.img and either exits (MANA_TEST_CHECKPOINT_KILL=1) or goes on.  For tests of
 * the image and restart machinery on programs whose ranks need not agree on a safe point (no
 * messages or collectives in flight at that moment). */
#define _GNU_SOURCE
#include "local_checkpoint.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mana/boundary.h"
#include "mana/launcher_rank.h"
#include "lower_threads.h"
#include "rank_checkpoint.h"
#include "services.h"
#include "state_threads.h"

static int after_ms;

/* Without peers, the rank's phases report on stderr. */
struct local_report {
  uint32_t rank;
};

static void local_refused(void *arg, const char *reason)
{
  fprintf(stderr, "mana_lh: local checkpoint of rank %u refused: %s\n",
          ((struct local_report *)arg)->rank, reason);
}

static void local_failed(void *arg, const char *reason)
{
  fprintf(stderr, "mana_lh: local checkpoint of rank %u failed: %s\n",
          ((struct local_report *)arg)->rank, reason);
}

static void local_written(void *arg, const char *name, const struct mana_written *w)
{
  struct local_report *r = arg;
  if (getenv("MANA_TEST_CHECKPOINT_VERBOSE"))
    fprintf(stderr, "mana_lh: rank %u wrote %s (%lu bytes, digest %016lx)\n", r->rank, name,
            (unsigned long)w->bytes, (unsigned long)w->hash);
}

static void *run(void *arg)
{
  (void)arg;
  struct timespec ts = {after_ms / 1000, (long)(after_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if (mana_restart_wait_resumed(30000) != 0) {
    fprintf(stderr, "mana_lh: local checkpoint: the restart has not finished rebuilding the "
                    "MPI objects\n");
    return NULL;
  }
  unsigned long rank = 0, size = 1;
  mana_launcher_rank((const char *const *)environ, &rank, &size);
  struct mana_rank_facts facts = {(uint32_t)rank, (uint32_t)size, (uint32_t)mana_mpi_thread_level(),
                                  MANA_BOUNDARY_VERSION};
  struct local_report report = {facts.rank};
  struct rank_peers none = {&report,       NULL, NULL, local_refused, local_failed,
                            local_written, NULL, 0,    NULL,          NULL};
  mana_rank_checkpoint_prepare();
  mana_rank_checkpoint(&none, getenv("MANA_TEST_CHECKPOINT_DIR"), 1, &facts);
  if (getenv("MANA_TEST_CHECKPOINT_KILL")) {
    /* Every rank must have written before any exits: the launcher tears the job down when the
     * first rank goes.  The application is parked outside MPI (the premise of this hook), so
     * the checkpoint thread may use MPI_COMM_WORLD. */
    int initialized = 0;
    PMPI_Initialized(&initialized);
    if (initialized)
      PMPI_Barrier(MPI_COMM_WORLD);
    mana_rank_checkpoint_leave(1, 0);
  }
  mana_rank_checkpoint_leave(0, 0);
  return NULL;
}

void mana_local_checkpoint_start(void)
{
  const char *v = getenv("MANA_TEST_CHECKPOINT_AFTER_MS");
  if (!v || !getenv("MANA_TEST_CHECKPOINT_DIR") || (after_ms = atoi(v)) <= 0)
    return;
  pthread_t t;
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask);
  int rc = pthread_create(&t, NULL, run, NULL);
  mana_lower_threads_mask_leave(&mask);
  if (rc != 0)
    fprintf(stderr, "mana_lh: cannot start the local checkpoint thread: %s\n", strerror(rc));
}
