/* See interrupted_calls.h.
 *
 * mana's handlers are installed with SA_RESTART, so a call that waited when one of mana's
 * signals came, of the kind a handler with SA_RESTART lets the kernel restart (a read or
 * write on a pipe or socket, accept, connect, wait4, flock, fcntl F_SETLKW, a POSIX message
 * queue's send or receive, the open of a FIFO: the kernel's ERESTARTSYS), is rewound by the
 * kernel to its syscall instruction and made again when the handler returns.  A signal of
 * the application's that came while mana's handler ran with every signal blocked (during a
 * checkpoint's park), or that a restart sent again (state_pending.c), is then taken first,
 * and the call waits again afterwards.  Natively that signal would have interrupted the call,
 * which then fails with EINTR when the signal's handler lacks SA_RESTART: a read on a pipe
 * that the program meant to end with alarm() waited forever instead.
 *
 * So such a call returns EINTR instead of being made again.  "Rewound" is read from the
 * registers: %rip at a syscall instruction, %rax a call of the list below, and %rcx the
 * address after that instruction, which the syscall instruction itself put there when the
 * call was made (a thread caught just before a syscall instruction rarely has it).  The
 * sleeps are not here: they end with EINTR whatever SA_RESTART says, and clock_calls.c makes
 * them go on; nor poll, select, pause, System V IPC's waits and the like, which end so too
 * (interrupted_waits.c).
 * A signal that comes between this check and the handler's return is still taken after the
 * call is made again: microseconds, against the milliseconds of a park.
 *
 * Runs on the application's thread pointer: raw system calls only. */
#define _GNU_SOURCE
#include "interrupted_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"
#include "mana/signals.h"

/* The calls that wait interruptibly and that the kernel restarts after a handler only with
 * SA_RESTART.  Not futex (glibc's waits go on after EINTR anyway) nor ioctl (what a device
 * does on a signal is its own). */
static int restarts_with_sa_restart(long nr, long arg1)
{
  switch (nr) {
  case SYS_read:
  case SYS_write:
  case SYS_pread64:
  case SYS_pwrite64:
  case SYS_readv:
  case SYS_writev:
  case SYS_preadv:
  case SYS_pwritev:
  case SYS_preadv2:
  case SYS_pwritev2:
  case SYS_open:
  case SYS_openat:
  case SYS_connect:
  case SYS_accept:
  case SYS_accept4:
  case SYS_sendto:
  case SYS_recvfrom:
  case SYS_sendmsg:
  case SYS_recvmsg:
  case SYS_sendmmsg:
  case SYS_recvmmsg:
  case SYS_wait4:
  case SYS_waitid:
  case SYS_flock:
  case SYS_mq_timedsend:
  case SYS_mq_timedreceive:
    return 1;
  case SYS_fcntl:
    return arg1 == F_SETLKW || arg1 == F_OFD_SETLKW;
  default:
    return 0;
  }
}

int mana_app_signal_waits(const ucontext_t *ctx, int only_without_restart)
{
  uint64_t pending = 0, restored;
  if (mana_raw_syscall4(SYS_rt_sigpending, (long)&pending, sizeof(pending), 0, 0) != 0)
    return 0;
  memcpy(&restored, &ctx->uc_sigmask, sizeof(restored));
  pending &= ~restored & ~mana_app_cannot_block;
  for (int sig = 1; sig <= 64; sig++) {
    if (!(pending & (1ull << (sig - 1))))
      continue;
    struct {
      uint64_t handler, flags, restorer, mask;
    } act;
    if (mana_raw_syscall4(SYS_rt_sigaction, sig, 0, (long)&act, sizeof(act.mask)) == 0 &&
        act.handler != (uint64_t)(uintptr_t)SIG_DFL &&
        act.handler != (uint64_t)(uintptr_t)SIG_IGN &&
        !(only_without_restart && (act.flags & SA_RESTART)))
      return 1;
  }
  return 0;
}

void mana_interrupted_call_settle(ucontext_t *ctx)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  const unsigned char *ip = (const unsigned char *)(uintptr_t)g[REG_RIP];
  if (g[REG_RCX] != g[REG_RIP] + 2 || !restarts_with_sa_restart(g[REG_RAX], g[REG_RSI]) ||
      ip[0] != 0x0f || ip[1] != 0x05 || !mana_app_signal_waits(ctx, 1))
    return;
  g[REG_RAX] = -EINTR;
  g[REG_RIP] += 2;
}
