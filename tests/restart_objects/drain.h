/*
 * drain.h - the drain in a running job, as the drain_* programs call it.
 *
 * Under mana the stub exports mana_test_drain_now(): every rank calls it at the same point,
 * with messages, receives, sends and collectives in flight, and it does what the drain does
 * before a checkpoint (docs/checkpoint-protocol.md, section 2).  drain_and_rebuild() then also
 * rebuilds every MPI object from mana's records, as a restart does (pending receives posted
 * again, completed requests made again).  Natively both do nothing, so the program's output
 * can be compared with a native run.
 */
#ifndef MANA_TESTS_DRAIN_H
#define MANA_TESTS_DRAIN_H

#include "rebuild.h"

static inline int drain_in_place(void)
{
  int (*drain)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_drain_now");
  if (!drain) {
    if (getenv("MANA_TEST_REQUIRE_REBUILD")) {
      fprintf(stderr, "drain.h: mana_test_drain_now not found\n");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return 0;
  }
  return drain();
}

/* Messages the drains left buffered on this rank; -1 natively. */
static inline int drained_buffered(void)
{
  int (*count)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_drained_count");
  return count ? count() : -1;
}

/* restart = 0: the job goes on after the drain; 1: the objects are rebuilt as at a restart. */
static inline void drain_checked(const char *when, int restart)
{
  int rc = drain_in_place();
  mt_check(rc == 0, "drained %s (rc %d)", when, rc);
  if (restart)
    rebuild_checked(when);
}

#endif /* MANA_TESTS_DRAIN_H */
