/* Thread-pointer switching for callbacks from the real MPI into application code.  MPICH calls
 * them with a lower-half FS; the application's code needs its own libc's TLS: the upper-half
 * thread pointer of the application thread whose MPI call this is, found through the lower-half
 * thread pointer it borrowed (mana/mpi_threads.h).  A callback on a lower-half thread of its own
 * (the drain completing a reduction on the checkpoint thread) runs on the main thread's, which
 * is parked then. */
#include "stub.h"

uint64_t mana_callback_enter(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t lower = mana_get_fs(b->have_fsgsbase);
  struct mana_mpi_thread *t = mana_mpi_thread_of_lower(lower);
  if (t)
    t->in_callback++;
  else
    t = &MANA_MPI_THREADS->slot[0];
  mana_set_fs(b->have_fsgsbase, t->upper_fs);
  return lower;
}

void mana_callback_leave(uint64_t saved_fs)
{
  struct mana_mpi_thread *t = mana_mpi_thread_of_lower(saved_fs);
  if (t)
    t->in_callback--;
  mana_set_fs(MANA_BOUNDARY->have_fsgsbase, saved_fs);
}
