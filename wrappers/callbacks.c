/* Thread-pointer switching for callbacks from the real MPI into application code.  MPICH calls
 * them with a lower-half FS; the application's code needs its own libc's TLS: the upper-half
 * thread pointer of the application thread whose MPI call this is, found through the lower-half
 * thread pointer it borrowed (mana/mpi_threads.h).
 *
 * A callback on a lower-half thread of mana's own (the drain completing a reduction with a user
 * op on the checkpoint thread) borrows the main thread's upper-half TLS, since that thread is
 * parked then, and the service slot: an MPI call the callback makes (a user op asking for its
 * datatype's extent) crosses on the checkpoint thread's own lower-half thread pointer, so MPICH
 * sees the thread that is already inside it, and never parks, since the slot is in a callback.
 * The borrowed TLS's mana_self_thread points at the service slot for as long as the outermost
 * such callback runs. */
#include "stub.h"

static struct mana_mpi_thread *self_of_borrowed_tls;

static struct mana_mpi_thread *service_slot_of(uint64_t lower)
{
  struct mana_mpi_thread *s = &MANA_MPI_THREADS->service;
  return s->in_callback && s->lower_fs == lower ? s : NULL;
}

uint64_t mana_callback_enter(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t lower = mana_get_fs(b->have_fsgsbase);
  struct mana_mpi_thread *t = mana_mpi_thread_of_lower(lower);
  if (!t)
    t = service_slot_of(lower);
  if (t) {
    t->in_callback++;
    mana_set_fs(b->have_fsgsbase, t->upper_fs);
    return lower;
  }
  t = &MANA_MPI_THREADS->service;
  t->upper_fs = MANA_MPI_THREADS->slot[0].upper_fs;
  t->lower_fs = lower;
  t->in_lower = 0;
  t->cc_window = 0;
  t->in_callback = 1;
  mana_set_fs(b->have_fsgsbase, t->upper_fs);
  self_of_borrowed_tls = mana_self_thread;
  mana_self_thread = t;
  return lower;
}

void mana_callback_leave(uint64_t saved_fs)
{
  struct mana_mpi_thread *t = mana_mpi_thread_of_lower(saved_fs);
  if (t) {
    t->in_callback--;
  } else if ((t = service_slot_of(saved_fs)) && t->in_callback == 1) {
    mana_self_thread = self_of_borrowed_tls; /* still on the borrowed TLS */
    t->lower_fs = 0;
    t->in_callback = 0;
  } else if (t) {
    t->in_callback--;
  }
  mana_set_fs(MANA_BOUNDARY->have_fsgsbase, saved_fs);
}
