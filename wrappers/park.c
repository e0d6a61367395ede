/* Parking points of blocking wrappers. */
#include "stub.h"

/* Callbacks run inside an MPI call that is still in progress in the lower half: a thread
 * must never park there, only once it is back in the application. */
static __thread int callback_depth;

int mana_callback_depth(int delta)
{
  return callback_depth += delta;
}

void mana_park_point(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  if (b->park_requested && callback_depth == 0)
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
