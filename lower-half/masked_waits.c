/* See masked_waits.h.
 *
 * sigsuspend, ppoll, pselect and epoll_pwait install a mask of the caller's for as long as
 * they wait.  A program's usual mask for them (every signal blocked but the one it waits for)
 * blocks mana's park signal too, which the rt_sigprocmask it makes otherwise cannot (sigsys.c
 * takes it out): such a thread could not be parked, and every checkpoint while it waited was
 * aborted after 10 s ("blocks the park signal").  So the seccomp filter traps these calls
 * from upper-half code, and the thread makes them in the stand-in vDSO's trampoline
 * (upper-half/vdso/app_vdso.c, mana_vdso_masked_wait) with the mask less the signals the
 * application cannot block (mana/signals.h), as rt_sigprocmask gets it.  The handler cannot
 * make them itself: a thread waiting inside it could not be parked either.
 *
 * sigtimedwait (sigwait, sigwaitinfo) is trapped too: a program's signal thread waits for
 * every signal (sigfillset), the park signal with them, and took it as its own: sigwait
 * returned 62 and the thread was never parked.  It is made in the same trampoline with mana's
 * signals (SIGSYS, the park signal, the checkpoint signal) taken out of its set; one with a
 * timeout, in the timed-wait trampoline, with the same set (timed_waits.c).
 *
 * An epoll_pwait with a mask and a timeout, or an epoll_pwait2 with a timeout (trapped with
 * or without a mask: a thread's own mask makes the same wait), takes its timeout by value, or
 * by a pointer the kernel does not write back: made again after a park it would wait in full,
 * so the park let it fail with EINTR instead.  It is made in mana_vdso_epoll_timed, as
 * epoll_wait with a timeout is (poll_timeout.c): an epoll_pwait that does not wait, and a
 * ppoll for the epoll descriptor with the time left, both with the mask.
 *
 * Runs in the SIGSYS handler, on the application's thread pointer: raw system calls only. */
#define _GNU_SOURCE
#include "masked_waits.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "app_memory.h"
#include "timed_waits.h"
#include "mana/boundary.h"
#include "mana/signals.h"

/* Where the call's mask is: its address (0: none), and the size the call says it has. */
static long mask_of(const greg_t *g, long nr, uint64_t *addr, uint64_t *size)
{
  switch (nr) {
  case SYS_rt_sigsuspend:
    *addr = (uint64_t)g[REG_RDI], *size = (uint64_t)g[REG_RSI];
    return 0;
  case SYS_rt_sigtimedwait:
    *addr = (uint64_t)g[REG_RDI], *size = (uint64_t)g[REG_R10];
    return 0;
  case SYS_ppoll:
    *addr = (uint64_t)g[REG_R10], *size = (uint64_t)g[REG_R8];
    return 0;
  case SYS_epoll_pwait:
  case SYS_epoll_pwait2:
    *addr = (uint64_t)g[REG_R8], *size = (uint64_t)g[REG_R9];
    return 0;
  case SYS_pselect6: {
    struct {
      uint64_t ss, len;
    } pair;
    long r = mana_read_app(&pair, (uint64_t)g[REG_R9], sizeof(pair));
    if (r != 0)
      return r;
    *addr = pair.ss, *size = pair.len;
    return 0;
  }
  default:
    return -ENOSYS;
  }
}

/* 1 when the call is an epoll wait with a timeout that waits (mana_vdso_epoll_timed);
 * 0 for one whose timeout is none, zero or one the kernel refuses (made as it is), or -EFAULT. */
static long epoll_timed(const greg_t *g, long nr)
{
  if (nr == SYS_epoll_pwait)
    return (int)g[REG_R10] > 0;
  if (nr != SYS_epoll_pwait2 || !g[REG_R10])
    return 0;
  struct timespec ts;
  long r = mana_read_app(&ts, (uint64_t)g[REG_R10], sizeof(ts));
  if (r != 0)
    return r;
  return ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000 && (ts.tv_sec || ts.tv_nsec);
}

long mana_masked_wait(ucontext_t *ctx, long nr, int *resumed)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  uint64_t addr = 0, size = 0, mask;
  *resumed = 0;
  long r = mask_of(g, nr, &addr, &size);
  if (r != 0)
    return r;
  if (addr) {
    if (size != sizeof(mask))
      return -EINVAL; /* as the kernel answers a sigset size other than its own */
    r = mana_read_app(&mask, addr, sizeof(mask));
    if (r != 0)
      return r;
  } else {
    /* pselect6 with a null mask in its pair, epoll_pwait2 with none: the thread's own mask
     * makes the same wait */
    memcpy(&mask, &ctx->uc_sigmask, sizeof(mask));
  }
  long timed = epoll_timed(g, nr);
  if (timed < 0)
    return timed;
  /* a mask for the call: made safe; the set sigtimedwait waits for: without mana's signals */
  uint64_t made =
      nr == SYS_rt_sigtimedwait ? mask & ~mana_app_managed_signals() : mana_app_sigmask(mask);
  /* with a timeout, in the trampoline that keeps its deadline (timed_waits.c) */
  if (nr == SYS_rt_sigtimedwait && g[REG_RDX]) {
    mana_timed_wait_enter(ctx, nr, made);
    *resumed = 1;
    return 0;
  }
  g[REG_R11] = (greg_t)made;
  g[REG_RCX] = g[REG_RIP];
  g[REG_RAX] = nr;
  g[REG_RIP] = (greg_t)(timed ? MANA_BOUNDARY->vdso_epoll_timed : MANA_BOUNDARY->vdso_masked_wait);
  *resumed = 1;
  return 0;
}
