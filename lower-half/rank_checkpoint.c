/* The order of a rank's checkpoint phases (rank_checkpoint.h).  Each phase's work lives
 * elsewhere: parking in park.c, settling and draining in the stub (boundary.h), the image in
 * checkpoint.c; this file only says which comes after which and who hears about it. */
#define _GNU_SOURCE
#include "rank_checkpoint.h"

#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

#include "mana/boundary.h"
#include "mana/fault.h"
#include "huge_pages.h"
#include "park.h"
#include "park_children.h"
#include "state_pipes.h"

/* A state mana cannot restore (boundary.h, stub_can_checkpoint; state_pipes.h): 1 with the
 * reason. */
static int unrestorable(char *reason, size_t len)
{
  int (*can)(char *, size_t) = MANA_BOUNDARY->stub_can_checkpoint;
  return (can && !can(reason, len)) || mana_app_fds_unrestorable(reason, len);
}

/* With every rank suspended: drain the messages in flight and say so.  0 to go on, else the
 * outcome: RANK_CKPT_REPORTED when the checkpoint cannot go on (the peers were told), or
 * RANK_CKPT_LOST. */
static int drain_with_peers(const struct rank_peers *peers, const struct mana_rank_facts *facts,
                            char *reason, size_t len)
{
  int (*drain)(char *, size_t) = MANA_BOUNDARY->stub_drain;
  if (drain && drain(reason, len) != 0) {
    peers->failed(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  if (peers->drained(peers->arg) != 0)
    return RANK_CKPT_LOST;
  if (!drain && facts->world_size > 1) {
    if (!unrestorable(reason, len))
      snprintf(reason, len, "this build of mana cannot drain messages in flight between ranks");
    peers->refused(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  return 0;
}

/* MANA_FAULT=park-fail[:RANK] (fault.h): once per process. */
static int park_fault(uint32_t rank, char *reason, size_t len)
{
  static int fired;
  if (fired || !mana_fault("park-fail", (long)rank))
    return 0;
  fired = 1;
  snprintf(reason, len, "rank %u: a thread did not park (fault injected by MANA_FAULT=park-fail)",
           rank);
  return 1;
}

void mana_rank_checkpoint_prepare(void)
{
  mana_huge_pages_recollapse_stop();
}

enum rank_checkpoint_outcome mana_rank_checkpoint(const struct rank_peers *peers, const char *dir,
                                                  uint64_t gen, const struct mana_rank_facts *facts)
{
  char reason[512], name[64];
  enum park_children_outcome parked = mana_park_without_children(
      MANA_PARK_SIGNAL, MANA_RANK_PARK_TIMEOUT_MS, mana_children_wait_ms(), reason, sizeof(reason));
  if (parked == PARK_CHILDREN_REMAIN) {
    peers->refused(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  if (parked != PARK_CHILDREN_NONE || park_fault(facts->rank, reason, sizeof(reason))) {
    peers->failed(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  /* Only once parked: a thread inside MPI_Finalize parks when it returns from it.
   * MPI_Finalize is counted on the collective clock, so then every rank has entered it and
   * every rank refuses here. */
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (finalized) {
    peers->refused(peers->arg, "the application has finalized MPI on this rank");
    return RANK_CKPT_REPORTED;
  }
  const struct mana_stub_cc *cc = MANA_BOUNDARY->stub_cc;
  if (cc && cc->spoiled && cc->still_met && cc->spoiled() && !cc->still_met()) {
    /* the ranks converged on a count taken back since */
    peers->refused(peers->arg, MANA_CC_SPOILED_REASON);
    return RANK_CKPT_REPORTED;
  }
  /* Before telling the peers: a peer's thread may wait in MPI's own wait for an operation
   * this rank holds, and can only park once it completes. */
  int (*settle)(char *, size_t) = MANA_BOUNDARY->stub_settle_own_waits;
  if (settle && settle(reason, sizeof(reason)) != 0) {
    peers->failed(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  if (peers->suspended) {
    int go = peers->suspended(peers->arg);
    if (go <= 0)
      return go < 0 ? RANK_CKPT_LOST : RANK_CKPT_ENDED;
    int outcome = drain_with_peers(peers, facts, reason, sizeof(reason));
    if (outcome != 0)
      return (enum rank_checkpoint_outcome)outcome;
  }
  if (unrestorable(reason, sizeof(reason))) {
    peers->refused(peers->arg, reason);
    return RANK_CKPT_REPORTED;
  }
  struct mana_written written = {0, 0, 0};
  mana_image_name(facts->rank, name, sizeof(name));
  int rc;
  /* A forked writer would not see some state as it was (checkpoint.h): then this rank writes
   * its image itself, the application parked meanwhile.  Silently: a line on the rank's stderr
   * is the application's output (MPICH's tests compare it). */
  char why[512];
  int forked = peers->forked && !mana_checkpoint_unforkable(why, sizeof(why));
  if (forked) {
    struct mana_forked_writer writer;
    rc = mana_checkpoint_fork_writer(dir, name, gen, peers->base_dir, facts, &writer, reason,
                                     sizeof(reason));
    if (rc == 0) {
      peers->resumed(peers->arg);
      rc = mana_checkpoint_writer_wait(&writer, &written, reason, sizeof(reason));
    }
  } else {
    rc = mana_checkpoint_write(dir, name, gen, peers->base_dir, facts, peers->progress, &written,
                               reason, sizeof(reason));
  }
  if (rc != 0)
    peers->failed(peers->arg, reason);
  else
    peers->written(peers->arg, name, &written);
  /* The application ran while the writer did: keep its next fork cheap. */
  if (forked)
    mana_huge_pages_recollapse_start(mana_checkpoint_writer_nice());
  return RANK_CKPT_REPORTED;
}

void mana_rank_checkpoint_leave(int then_exit, int status)
{
  if (!then_exit) {
    mana_park_release();
    return;
  }
  /* The launcher tears the whole job down (SIGKILL) when a rank exits without finalizing,
   * which can hit a peer that has not exited yet and make the job look crashed, and a peer
   * still in MPI would see the endpoint vanish: leave as a finished MPI process.  Nothing is
   * in flight, so this thread may finalize for the parked application. */
  fflush(NULL);
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (initialized && !finalized) {
    if (MANA_BOUNDARY->stub_cancel_receives)
      MANA_BOUNDARY->stub_cancel_receives();
    PMPI_Finalize();
  }
  _exit(status);
}
