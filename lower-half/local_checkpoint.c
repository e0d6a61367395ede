/* A checkpoint taken by the rank itself, without a coordinator: with
 * MANA_TEST_CHECKPOINT_AFTER_MS=T and MANA_TEST_CHECKPOINT_DIR=D, T ms after start the rank
 * parks its upper half, writes D/rank-NNNNNN.img and either exits (MANA_TEST_CHECKPOINT_KILL=1)
 * or goes on.  For tests of the image and restart machinery on programs whose ranks need not
 * agree on a safe point (no messages or collectives in flight at that moment). */
#define _GNU_SOURCE
#include "local_checkpoint.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "state_threads.h"
#include "lower_threads.h"
#include "park.h"
#include "services.h"

static int after_ms;

static uint32_t env_u32(const char *a, const char *b)
{
  const char *v = getenv(a);
  if (!v)
    v = getenv(b);
  return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

static void *run(void *arg)
{
  (void)arg;
  char err[512], name[64];
  struct timespec ts = {after_ms / 1000, (long)(after_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if (mana_restart_wait_resumed(30000) != 0) {
    fprintf(stderr, "mana_lh: local checkpoint: the restart has not finished rebuilding the "
                    "MPI objects\n");
    return NULL;
  }
  if (mana_park_all(MANA_PARK_SIGNAL, 10000, err, sizeof(err)) != 0) {
    fprintf(stderr, "mana_lh: local checkpoint: %s\n", err);
    mana_park_release();
    return NULL;
  }
  struct mana_rank_facts facts = {env_u32("PMI_RANK", "SLURM_PROCID"),
                                  env_u32("PMI_SIZE", "SLURM_NTASKS"),
                                  (uint32_t)mana_mpi_thread_level(), 0};
  mana_image_name(facts.rank, name, sizeof(name));
  uint64_t bytes = 0, hash = 0;
  if (mana_checkpoint_write(getenv("MANA_TEST_CHECKPOINT_DIR"), name, 1, &facts, NULL, &bytes,
                            &hash, err, sizeof(err)) != 0) {
    fprintf(stderr, "mana_lh: local checkpoint of rank %u failed: %s\n", facts.rank, err);
  } else if (getenv("MANA_TEST_CHECKPOINT_VERBOSE")) {
    fprintf(stderr, "mana_lh: rank %u wrote %s (%lu bytes, digest %016lx)\n", facts.rank, name,
            (unsigned long)bytes, (unsigned long)hash);
  }
  if (getenv("MANA_TEST_CHECKPOINT_KILL")) {
    /* Every rank must have written before any exits: the launcher tears the job down when the
     * first rank goes.  The application is parked outside MPI (the premise of this hook), so
     * the checkpoint thread may use MPI_COMM_WORLD. */
    int initialized = 0;
    PMPI_Initialized(&initialized);
    if (initialized)
      PMPI_Barrier(MPI_COMM_WORLD);
    _exit(0);
  }
  mana_park_release();
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
