/* Parking points of blocking wrappers. */
#include <sched.h>

#include "stub.h"

void mana_park_point(void)
{
  while (MANA_BOUNDARY->park_requested)
    sched_yield();
}

int mana_wait_real(MPI_Request *real, MPI_Status *status)
{
  for (;;) {
    int flag = 0;
    int rc = MANA_LH_SVC(test_until, real, &flag, status);
    if (rc != MPI_SUCCESS || flag)
      return rc;
    mana_park_point();
  }
}
