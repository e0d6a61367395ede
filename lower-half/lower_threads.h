/* The signal mask of the lower half's own threads: MPICH's and UCX's (made inside
 * MPI_Init_thread) and mana's checkpoint threads.
 *
 * A signal sent to the whole process goes to any thread that does not block it.  On a
 * lower-half thread the application's handler would run on the lower half's thread pointer,
 * and the upper libc's thread-local data (errno above all) would be read and written inside
 * the lower half's.  So these threads block every signal but mana's own (SIGSYS, the fault
 * signals, and the park signal, which they answer as the lower half's): they are made while
 * their creator has this mask, and inherit it. */
#ifndef MANA_LOWER_THREADS_H
#define MANA_LOWER_THREADS_H

#include <pthread.h>
#include <signal.h>

#include "mana/signals.h"

/* Sets the mask lower-half threads are born with on the calling thread; *saved gets its own. */
static inline void mana_lower_threads_mask_enter(sigset_t *saved)
{
  sigset_t lower;
  mana_sigset_block_all(&lower);
  sigdelset(&lower, MANA_PARK_SIGNAL);
  pthread_sigmask(SIG_SETMASK, &lower, saved);
}

static inline void mana_lower_threads_mask_leave(const sigset_t *saved)
{
  pthread_sigmask(SIG_SETMASK, saved, NULL);
}

#endif
