/* See timed_waits.h and mana/app_clocks.h.
 *
 * sigtimedwait and semtimedop end with EINTR after any signal handler, SA_RESTART or not, and
 * take their timeout by a pointer the kernel does not write the time left back into.  A park
 * signal thus made a program's signal thread, waiting for its signal with a timeout, fail with
 * an error it had no cause for; made again as it was (interrupted_waits.c), the wait would
 * have started its timeout again in full at every checkpoint.  So both are trapped when they
 * have a timeout (sigtimedwait always is, for its set: masked_waits.c) and made in the
 * stand-in's timed-wait trampoline, which keeps their deadline on the application's clock and
 * makes them again, after a park, for what is left of it.
 *
 * Runs in the SIGSYS handler or in a handler of mana's signals, on the application's thread
 * pointer: raw system calls only. */
#define _GNU_SOURCE
#include "timed_waits.h"

#include <errno.h>

#include "interrupted_calls.h"
#include "mana/boundary.h"

void mana_timed_wait_enter(ucontext_t *ctx, long nr, uint64_t set)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  g[REG_RCX] = g[REG_RIP];
  g[REG_R11] = (greg_t)set;
  g[REG_RAX] = nr;
  g[REG_RIP] = (greg_t)MANA_BOUNDARY->vdso_timed_wait; /* main.c: every lower half has it */
}

void mana_timed_wait_rewind(ucontext_t *ctx)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  const struct mana_boundary *b = MANA_BOUNDARY;
  if ((uint64_t)g[REG_RIP] != b->vdso_timed_resume || g[REG_RAX] != -EINTR ||
      mana_app_signal_waits(ctx, 0))
    return;
  g[REG_RIP] = (greg_t)b->vdso_timed_round; /* %rsp is the block, as the round expects */
}
