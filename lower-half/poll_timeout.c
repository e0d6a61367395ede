/* See poll_timeout.h.
 *
 * poll takes its timeout in milliseconds, by value: when a checkpoint's park signal
 * interrupts it, nothing says how much of it is left.  Made again after the park in full, the
 * timeout would never run out in a program checkpointed more often than it; failing with
 * EINTR, the call tells the program of a signal that, natively, never came.  So a poll with a
 * timeout is trapped from upper-half code and made in the stand-in vDSO's trampoline
 * (upper-half/vdso/app_vdso.c, mana_vdso_poll_timed) as the ppoll it is equivalent to, with
 * the timeout as a timespec in the trampoline's block.  The kernel writes the time left back
 * into that timespec when a signal interrupts the call, so the park makes it again for what is
 * left (interrupted_waits.c), after a restart too (the block is on the thread's stack).
 * A poll without a timeout (negative) or with 0 is not trapped.
 *
 * epoll_wait takes its timeout the same way, and epoll_pwait2's timespec is not written back.
 * An epoll_wait with a positive timeout (or an epoll_pwait without a mask, the same call) is
 * made in mana_vdso_epoll_timed: an epoll_pwait that does not wait, and while it finds
 * nothing, a ppoll for the epoll descriptor's readiness with the time left in the block, as
 * above, both with the thread's own mask (the trampoline also serves the epoll waits with a
 * mask of their own, masked_waits.c).
 *
 * Runs in the SIGSYS handler, on the application's thread pointer: no libc. */
#define _GNU_SOURCE
#include "poll_timeout.h"

#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "mana/boundary.h"
#include "mana/signals.h"

void mana_poll_timed(ucontext_t *ctx, long nr)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  g[REG_RCX] = g[REG_RIP];
  if (nr == SYS_poll) {
    /* positive: the filter let no other through */
    g[REG_R11] = (greg_t)(uint32_t)(int)g[REG_RDX];
    g[REG_RIP] = (greg_t)MANA_BOUNDARY->vdso_poll_timed;
    return;
  }
  uint64_t mask;
  memcpy(&mask, &ctx->uc_sigmask, sizeof(mask));
  g[REG_R11] = (greg_t)mana_app_sigmask(mask);
  g[REG_RAX] = nr;
  g[REG_RIP] = (greg_t)MANA_BOUNDARY->vdso_epoll_timed;
}
