/* Parking points of blocking wrappers. */
#include "stub.h"
#include "records.h"
#include "stub_lock.h"

/* Callbacks run inside an MPI call that is still in progress in the lower half: a thread
 * must never park there, only once it is back in the application. */
void mana_park_point(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  const struct mana_mpi_thread *t = mana_self_thread;
  if (b->park_requested && (!t || t->in_callback == 0) && !mana_stub_lock_held() &&
      !mana_in_restart_hook && mana_rebuilding == MANA_REBUILD_NONE)
    b->lh->svc.park_self(0);
}

int mana_wait_real(MPI_Request *real, MPI_Status *status)
{
  for (;;) {
    int flag = 0;
    int rc = MANA_UNTIL(test_until, real, &flag, status);
    if (rc != MPI_SUCCESS || flag)
      return rc;
    mana_park_point();
  }
}
