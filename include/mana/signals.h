/* The signals mana's own mechanisms depend on, and the masks that must never block them.
 *
 * The seccomp filter (lower-half/sigsys.c) answers an upper-half mmap, mremap, munmap or
 * rt_sigaction with SIGSYS.  If SIGSYS is blocked when the trap fires, the kernel does not
 * queue it: it resets the disposition to the default and kills the process ("Bad system
 * call").  The same holds for the synchronous fault signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 * SIGTRAP): blocked, a fault kills the process instead of reaching its handler.  So every
 * mask mana sets (signal handlers' sa_mask, worker threads, the restart path) blocks
 * everything *except* these.
 *
 * The application's own masks are sanitized too (the filter traps upper-half
 * rt_sigprocmask and rt_sigaction): a thread of the application that blocks every signal
 * still gets SIGSYS, or its next malloc that needs a new mapping would kill the process, and
 * still gets the park signal, or a checkpoint could never park it; and every thread of the
 * application blocks the checkpoint signal, which only a thread of mana's takes. */
#ifndef MANA_SIGNALS_H
#define MANA_SIGNALS_H

#include <signal.h>
#include <stdint.h>

#include "mana/boundary.h"

#define MANA_SIGBIT(sig) (1ull << ((sig)-1))

/* Never blocked by any mask mana sets itself. */
#define MANA_SIGNALS_NEVER_BLOCKED                                                          \
  (MANA_SIGBIT(SIGSYS) | MANA_SIGBIT(SIGSEGV) | MANA_SIGBIT(SIGBUS) | MANA_SIGBIT(SIGILL) | \
   MANA_SIGBIT(SIGFPE) | MANA_SIGBIT(SIGTRAP))

/* Removed from every mask the application sets (its own blocking of the fault signals is
 * left alone: blocked or not, a fault there ends the process the same way). */
#define MANA_SIGNALS_APP_CANNOT_BLOCK (MANA_SIGBIT(SIGSYS) | MANA_SIGBIT(MANA_PARK_SIGNAL))

/* "Block everything" as mana means it: every signal but the ones above. */
static inline void mana_sigset_block_all(sigset_t *set)
{
  sigfillset(set);
  sigdelset(set, SIGSYS);
  sigdelset(set, SIGSEGV);
  sigdelset(set, SIGBUS);
  sigdelset(set, SIGILL);
  sigdelset(set, SIGFPE);
  sigdelset(set, SIGTRAP);
}

/* What the application can never block in this process: MANA_SIGNALS_APP_CANNOT_BLOCK.
 * Defined in the lower half. */
extern uint64_t mana_app_cannot_block;

/* What every thread of the application blocks whatever it asks: the checkpoint signal when the
 * job has one (lower-half/ckpt_signal_rank.c).  It comes from outside (Slurm, mpiexec) to the
 * whole process, and the kernel gives such a signal to a thread that does not block it: a
 * thread of the application waiting in poll, select or epoll_wait would end with EINTR if its
 * handler ran there, so only mana's own thread takes it.  Defined in the lower half. */
extern uint64_t mana_app_kept_blocked;

/* A kernel signal mask (64 bits, as rt_sigprocmask takes it) the application asked for, made
 * safe for mana. */
static inline uint64_t mana_app_sigmask(uint64_t mask)
{
  return (mask & ~mana_app_cannot_block) | mana_app_kept_blocked;
}

/* The signals whose blocking mana decides, not the application's masks. */
static inline uint64_t mana_app_managed_signals(void)
{
  return mana_app_cannot_block | mana_app_kept_blocked;
}

#endif
