/*
 * rebuild.h - the rebuild-in-place test mode, as the restart_objects programs call it.
 *
 * Under mana the stub exports mana_test_rebuild_now(): every rank calls it at the same point,
 * and it frees the real MPI object behind every handle the program holds and makes a new one
 * from mana's records, exactly as a restart does.  The program must then behave as if nothing
 * happened.  Natively the symbol does not exist and rebuild_in_place() does nothing, so the
 * same program's output can be compared with a native run.
 *
 * MANA_TEST_REQUIRE_REBUILD=1 makes a missing symbol an error (the run under mana must really
 * rebuild).
 */
#ifndef MANA_TESTS_REBUILD_H
#define MANA_TESTS_REBUILD_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpitest.h"

/* Returns 0 when the objects were rebuilt, or natively. */
static inline int rebuild_in_place(void)
{
  int (*rebuild)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_rebuild_now");
  if (!rebuild) {
    if (getenv("MANA_TEST_REQUIRE_REBUILD")) {
      fprintf(stderr, "rebuild.h: mana_test_rebuild_now not found\n");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return 0;
  }
  return rebuild();
}

/* Logs the rebuild's outcome as a check; the line reads the same natively. */
static inline void rebuild_checked(const char *when)
{
  int rc = rebuild_in_place();
  mt_check(rc == 0, "objects rebuilt in place %s (rc %d)", when, rc);
}

#endif /* MANA_TESTS_REBUILD_H */
