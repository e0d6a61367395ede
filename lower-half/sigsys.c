/* Seccomp filter and SIGSYS handler that keep upper-half mappings inside the window.
 *
 * Trapped, and only when the instruction pointer is in upper-half code:
 *   mmap without MAP_FIXED / MAP_FIXED_NOREPLACE   (the kernel would choose the address)
 *   mremap with MREMAP_MAYMOVE but not MREMAP_FIXED (the kernel would choose the address)
 *   munmap                                          (a hole the kernel could hand to the lower half)
 *   rt_sigaction                                    of SIGSYS, the park signal or the
 *                                                    checkpoint signal (ckpt_signal_rank.c): the
 *                                                    application's runtime (gfortran's backtrace
 *                                                    handler, say) must not replace ours, so its
 *                                                    disposition is kept aside, not installed;
 *                                                    of any other signal: installed with SIGSYS
 *                                                    and the park signal taken out of sa_mask,
 *                                                    and a handler with the stub's dispatcher
 *                                                    in its place, which runs it on the
 *                                                    application's thread pointer (the
 *                                                    application's own disposition kept in the
 *                                                    stub's table and reported back)
 *   rt_sigprocmask                                  made with SIGSYS and the park signal taken
 *                                                    out of the new mask (mana/signals.h: a
 *                                                    trap while SIGSYS is blocked kills the
 *                                                    process) and the checkpoint signal put in
 *   execve, execveat                                made with the mask the application sees,
 *                                                    which the new program starts with (not
 *                                                    with the SIGSYS handler's, nor with the
 *                                                    checkpoint signal blocked for mana)
 *   pipe, pipe2, socketpair, socket,                made as asked, and the new object noted as
 *   eventfd(2), signalfd(4), timerfd_create,        the application's (app_fd_origin.c): a
 *   epoll_create(1), inotify_init(1), timer_create  restart cannot give all of them back, and
 *                                                    gives POSIX timers back by id; a signalfd
 *                                                    without mana's signals in its mask
 *   shmget, shmat, shmdt, shmctl                    System V shared memory: attached in the
 *                                                    window, the application's ids kept valid
 *                                                    across restarts (sysv_shm_calls.c)
 *   open, openat with O_WRONLY or O_RDWR, creat     made as asked, and the file noted as one
 *                                                    the application wrote (written_files.c):
 *                                                    a restart takes back its growth (an open
 *                                                    that waits, a FIFO's for its reader,
 *                                                    holds a checkpoint until it returns)
 *   nanosleep, clock_nanosleep                      made in the stand-in vDSO's sleep
 *                                                    trampoline, which a checkpoint's signal
 *                                                    does not cut short (clock_calls.c)
 *   poll, epoll_wait (epoll_pwait without a mask)   made in the stand-in's trampolines with a
 *   with a positive timeout                         ppoll, whose time left survives a park
 *                                                    (poll_timeout.c)
 *   rt_sigsuspend; ppoll, pselect6, epoll_pwait(2)  made in the stand-in's trampoline with the
 *   with a signal mask; epoll_pwait2 with a         mask less what mana keeps open, or the
 *   timeout                                         thread could not be parked while it
 *                                                    waits; an epoll wait with a timeout in one
 *                                                    that keeps the time left (masked_waits.c)
 *   rt_sigtimedwait (sigwait, sigwaitinfo)          made in the same trampoline without mana's
 *                                                    signals in its set, or a signal thread's
 *                                                    sigwait on every signal takes the park
 *                                                    signal (masked_waits.c); with a timeout,
 *                                                    in the timed-wait trampoline, which makes
 *                                                    it again after a park for the time left
 *   semtimedop with a timeout                       the same (timed_waits.c)
 *   clock_gettime, futex waits with a               only while the application's clocks are
 *   CLOCK_MONOTONIC deadline, timer_settime,        offset (a restart on another boot,
 *   timerfd_settime (absolute)                      clock_calls.c): given the kernel's time;
 *                                                    a wait goes on in a trampoline
 *   (calls from the stand-in's trampolines are let through)
 * Everything else, and every call from the lower half, runs untouched.
 *
 * The handler runs on whatever thread trapped, with that thread's FS (usually the upper half's),
 * so it must not touch TLS: no libc calls that set errno, raw syscalls only. */
#define _GNU_SOURCE
#include "sigsys.h"
#include "masked_waits.h"
#include "poll_timeout.h"
#include "timed_waits.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/park.h"
#include "mana/raw_syscall.h"
#include "mana/signals.h"
#include "park.h"
#include "mana/upper_window.h"
#include "huge_pages.h"
#include "address_space.h"
#include "app_fd_origin.h"
#include "app_memory.h"
#include "clock_calls.h"
#include "sysv_shm_calls.h"
#include "written_files.h"

struct mana_trap_stats mana_trap_stats;
int mana_fork_advice_asked;

/* ---- raw syscalls (no errno, no TLS) ---- */

static long raw_mmap(uint64_t addr, uint64_t len, long prot, long flags, long fd, long off)
{
  return mana_raw_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
}

/* Puts a PROT_NONE reservation over [addr, addr+len) in one step (MAP_FIXED replaces whatever is
 * there), so the range is never a hole. */
static int reserve(uint64_t addr, uint64_t len)
{
  long r = raw_mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                    -1, 0);
  if (r < 0)
    return (int)r;
  mana_exclude_from_cores(addr, len);
  return 0;
}

static uint64_t page_up(uint64_t v)
{
  return (v + 4095) & ~4095UL;
}

/* ---- the three trapped calls ---- */

static long serve_mmap(uint64_t hint, uint64_t len, long prot, long flags, long fd, long off)
{
  (void)hint; /* address hints are advisory; the window decides */
  struct mana_window *w = &mana_the_window;
  if (len == 0)
    return -EINVAL;
  if (flags & MAP_32BIT) /* cannot be honoured inside the window; let the kernel place it */
    return raw_mmap(hint, len, prot, flags, fd, off);
  bool huge = mana_huge_pages_for(len, flags);
  uint64_t align = (flags & MAP_HUGETLB) || huge ? MANA_HUGE_PAGE : 4096;
  uint64_t addr = mana_window_alloc(w, len, align);
  if (addr == 0) {
    mana_trap_stats.failures++;
    return -ENOMEM;
  }
  long r = raw_mmap(addr, len, prot, flags | MAP_FIXED, fd, off);
  if (r < 0) {
    reserve(addr, page_up(len));
    mana_window_free(w, addr, len);
    return r;
  }
  if (huge)
    mana_huge_pages_advise(addr, len);
  return r;
}

static long serve_munmap(uint64_t addr, uint64_t len)
{
  struct mana_window *w = &mana_the_window;
  if ((addr & 4095) || len == 0)
    return -EINVAL;
  if (!mana_window_contains(w, addr, page_up(len)))
    return mana_raw_syscall6(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0);
  int r = reserve(addr, page_up(len));
  if (r < 0)
    return r;
  mana_window_free(w, addr, len);
  return 0;
}

static long serve_mremap(uint64_t old, uint64_t old_len, uint64_t new_len, long flags)
{
  struct mana_window *w = &mana_the_window;
  old_len = page_up(old_len);
  new_len = page_up(new_len);
  if (new_len <= old_len) { /* shrinking never moves: do it in place and keep the tail reserved */
    long r = mana_raw_syscall6(SYS_mremap, (long)old, (long)old_len, (long)new_len, 0, 0, 0);
    if (r >= 0 && new_len < old_len && mana_window_contains(w, old + new_len, old_len - new_len)) {
      reserve(old + new_len, old_len - new_len);
      mana_window_free(w, old + new_len, old_len - new_len);
    }
    return r;
  }
  uint64_t dest = mana_window_alloc(w, new_len, 4096);
  if (dest == 0) {
    mana_trap_stats.failures++;
    return -ENOMEM;
  }
  long r = mana_raw_syscall6(SYS_mremap, (long)old, (long)old_len, (long)new_len,
                             flags | MREMAP_MAYMOVE | MREMAP_FIXED, (long)dest, 0);
  if (r < 0) {
    mana_window_free(w, dest, new_len);
    return r;
  }
  if (mana_window_contains(w, old, old_len)) {
    /* The old range is a hole now.  NOREPLACE: if a lower-half thread took it in the instant
     * since the move, leave its mapping alone and lose the range from the allocator. */
    long q = raw_mmap(old, old_len, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    if (q == (long)old) {
      mana_exclude_from_cores(old, old_len);
      mana_window_free(w, old, old_len);
    }
  }
  return r;
}

uint64_t mana_app_cannot_block = MANA_SIGNALS_APP_CANNOT_BLOCK;
uint64_t mana_app_kept_blocked;

/* The SIGSYS, park-signal and checkpoint-signal dispositions the upper half asked for.  Kept,
 * reported back, never installed: mana's handlers must stay. */
static struct mana_sigaction app_sigsys, app_park, app_ckpt;
static int ckpt_signo;

static struct mana_sigaction *kept_aside(uint64_t sig)
{
  if (sig == SIGSYS)
    return &app_sigsys;
  if (sig == MANA_PARK_SIGNAL)
    return &app_park;
  if (ckpt_signo && sig == (uint64_t)ckpt_signo)
    return &app_ckpt;
  return NULL;
}

void mana_sigsys_keep_aside(int sig, const void *app_act)
{
  __builtin_memcpy(&app_ckpt, app_act, sizeof(app_ckpt));
  ckpt_signo = sig;
  mana_app_kept_blocked = 1ull << (sig - 1);
  MANA_PARK->kept_blocked = mana_app_kept_blocked;
}

void mana_sigsys_kept_blocked_restored(void)
{
  MANA_PARK->kept_blocked_before = MANA_PARK->kept_blocked;
  MANA_PARK->kept_blocked = 0;
}

int mana_sigsys_kept_aside(int sig, void *app_act)
{
  if (!ckpt_signo || sig != ckpt_signo)
    return 0;
  if (app_act)
    __builtin_memcpy(app_act, &app_ckpt, sizeof(app_ckpt));
  return 1;
}

/* Handlers the upper half installed before the stub registered its dispatcher (bit sig - 1):
 * a library whose constructor ran before the stub's, as one linked after libmpich does (a
 * profiler's SIGPROF, a sanitizer's SIGSEGV).  They went to the kernel as asked;
 * mana_sigsys_adopt_early_handlers moves them behind the dispatcher.  early_acts keeps them as
 * the application gave them, for sigaction to report. */
static uint64_t early_handlers;
static struct mana_sigaction early_acts[65];

static void note_early(uint64_t sig, const struct mana_sigaction *act)
{
  if (sig < 1 || sig > 64 || sig == SIGKILL || sig == SIGSTOP)
    return;
  uint64_t bit = 1ull << (sig - 1);
  if (act->handler == (uint64_t)(uintptr_t)SIG_DFL ||
      act->handler == (uint64_t)(uintptr_t)SIG_IGN) {
    __atomic_fetch_and(&early_handlers, ~bit, __ATOMIC_ACQ_REL);
    return;
  }
  __builtin_memcpy(&early_acts[sig], act, sizeof(*act));
  __atomic_fetch_or(&early_handlers, bit, __ATOMIC_ACQ_REL);
}

void mana_sigsys_adopt_early_handlers(void)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  struct mana_sigaction *own = b->stub_app_sigactions;
  if (!own || !b->stub_signal_dispatch)
    return;
  uint64_t bits = __atomic_exchange_n(&early_handlers, 0, __ATOMIC_ACQ_REL);
  for (int sig = 1; sig <= 64; sig++) {
    if (!(bits & (1ull << (sig - 1))))
      continue;
    struct mana_sigaction now;
    if (mana_raw_syscall4(SYS_rt_sigaction, sig, 0, (long)&now, 8) != 0 ||
        now.handler != early_acts[sig].handler)
      continue; /* changed since: through the dispatcher already, or to SIG_DFL/SIG_IGN */
    /* As serve_sigaction does: the application's first, then the kernel's. */
    own[sig].mask = early_acts[sig].mask;
    own[sig].restorer = early_acts[sig].restorer;
    own[sig].flags = early_acts[sig].flags;
    __atomic_store_n(&own[sig].handler, early_acts[sig].handler, __ATOMIC_RELEASE);
    now.handler = b->stub_signal_dispatch;
    if (mana_raw_syscall4(SYS_rt_sigaction, sig, (long)&now, 0, 8) != 0)
      __builtin_memset(&own[sig], 0, sizeof(own[sig]));
  }
}

static long serve_sigaction(uint64_t sig, uint64_t act, uint64_t oldact, uint64_t setsize)
{
  if (setsize != 8)
    return -EINVAL;
  struct mana_sigaction *kept = kept_aside(sig);
  if (kept) {
    struct mana_sigaction prev = *kept;
    if (act)
      __builtin_memcpy(kept, (const void *)act, sizeof(*kept));
    if (oldact)
      __builtin_memcpy((void *)oldact, &prev, sizeof(prev));
    return 0;
  }
  const struct mana_boundary *b = MANA_BOUNDARY;
  struct mana_sigaction *own = b->stub_app_sigactions;
  if (!own || !b->stub_signal_dispatch || sig < 1 || sig > 64 || sig == SIGKILL || sig == SIGSTOP)
    own = NULL; /* before the stub registered its dispatcher: installed as asked */
  struct mana_sigaction safe, prev, own_before;
  if (own)
    own_before = own[sig];
  if (own && oldact) {
    long r = mana_raw_syscall4(SYS_rt_sigaction, (long)sig, 0, (long)&prev, 8);
    if (r != 0)
      return r;
    if (prev.handler == b->stub_signal_dispatch)
      prev = own[sig];
  }
  if (act) {
    __builtin_memcpy(&safe, (const void *)act, sizeof(safe));
    /* The application's own, for sigaction to report and the dispatcher to run: written
     * before the kernel's, so that a signal taken in between finds it. */
    if (own && safe.handler != (uint64_t)(uintptr_t)SIG_DFL &&
        safe.handler != (uint64_t)(uintptr_t)SIG_IGN) {
      own[sig].mask = safe.mask;
      own[sig].restorer = safe.restorer;
      own[sig].flags = safe.flags;
      __atomic_store_n(&own[sig].handler, safe.handler, __ATOMIC_RELEASE);
      safe.handler = b->stub_signal_dispatch;
    }
    safe.mask = mana_app_sigmask(safe.mask);
  }
  long r = mana_raw_syscall4(SYS_rt_sigaction, (long)sig, act ? (long)&safe : 0,
                             own ? 0 : (long)oldact, 8);
  if (r == 0 && act && !b->stub_signal_dispatch)
    note_early(sig, (const struct mana_sigaction *)act);
  if (r != 0 && own) /* refused: the application's disposition is the one before */
    own[sig] = own_before;
  if (r == 0 && own && oldact)
    __builtin_memcpy((void *)oldact, &prev, sizeof(prev));
  return r;
}

/* The entry of the thread with upper-half thread pointer fs; with claim, one is taken for it
 * if it has none (NULL when all are taken: its view is then the real mask). */
static struct mana_app_mask *app_mask_of(uint64_t fs, int claim)
{
  struct mana_app_mask *m = MANA_PARK->app_masks;
  for (int i = 0; i < MANA_MAX_APP_MASKS; i++) {
    uint64_t owner = __atomic_load_n(&m[i].upper_fs, __ATOMIC_ACQUIRE);
    if (owner == fs)
      return &m[i];
    if (owner == 0) {
      if (!claim)
        return NULL;
      uint64_t expected = 0;
      if (__atomic_compare_exchange_n(&m[i].upper_fs, &expected, fs, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return &m[i];
      if (expected == fs)
        return &m[i];
    }
  }
  return NULL;
}

uint64_t mana_sigsys_app_view(uint64_t mask)
{
  const struct mana_app_mask *view = app_mask_of(mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase), 0);
  return (mask & ~mana_app_kept_blocked) | (view ? view->blocked : 0);
}

uint64_t mana_sigsys_restarted_mask(uint64_t mask, uint64_t upper_fs)
{
  uint64_t before = MANA_PARK->kept_blocked_before;
  const struct mana_app_mask *view = app_mask_of(upper_fs, 0);
  uint64_t asked = view ? view->blocked : 0;
  return mana_app_sigmask((mask & ~before) | (asked & before));
}

/* A signalfd reads the signals of its mask that are pending, blocked or not: one with the
 * park signal in it (sigfillset, the usual way) took a park signal meant for the thread
 * waiting in its read, and the application read signal 62 while the checkpoint waited for
 * that thread.  So mana's signals are taken out of the mask, as out of the thread's. */
static long serve_signalfd(long nr, long fd, uint64_t mask_at, uint64_t size, long flags)
{
  uint64_t mask;
  if (size != sizeof(mask))
    return mana_raw_syscall4(nr, fd, (long)mask_at, (long)size, flags);
  if (mana_read_app(&mask, mask_at, sizeof(mask)) != 0)
    return -EFAULT;
  mask &= ~mana_app_managed_signals();
  return mana_raw_syscall4(nr, fd, (long)&mask, (long)size, flags);
}

/* The thread's mask is the one the signal frame restores when the handler returns: the new
 * mask is written there, never with SIGSYS or the park signal in it, always with the
 * checkpoint signal.  What the application sees is the mask it asked for: the real one with
 * the bits of those signals as it asked them. */
static long serve_sigprocmask(ucontext_t *ctx, uint64_t how, uint64_t set, uint64_t oldset,
                              uint64_t setsize)
{
  uint64_t *mask = (uint64_t *)(void *)&ctx->uc_sigmask;
  uint64_t fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  struct mana_app_mask *view = app_mask_of(fs, 0);
  uint64_t cur = (*mask & ~mana_app_kept_blocked) | (view ? view->blocked : 0), want;
  if (setsize != 8)
    return -EINVAL;
  if (set) {
    uint64_t given;
    __builtin_memcpy(&given, (const void *)set, sizeof(given));
    if (how == SIG_BLOCK)
      want = cur | given;
    else if (how == SIG_UNBLOCK)
      want = cur & ~given;
    else if (how == SIG_SETMASK)
      want = given;
    else
      return -EINVAL;
    *mask = mana_app_sigmask(want) & ~(MANA_SIGBIT(SIGKILL) | MANA_SIGBIT(SIGSTOP));
    uint64_t asked = want & mana_app_managed_signals();
    if (asked && !view)
      view = app_mask_of(fs, 1);
    if (view)
      view->blocked = asked;
  }
  if (oldset)
    __builtin_memcpy((void *)oldset, &cur, sizeof(cur));
  return 0;
}

/* The new program starts with the thread's mask at the call, which in this handler is the
 * handler's: so the call is made with the mask the application sees, and if it fails the
 * handler's is put back. */
static long serve_exec(const ucontext_t *ctx, long nr, const long *args)
{
  uint64_t app, handler;
  __builtin_memcpy(&app, &ctx->uc_sigmask, sizeof(app));
  app = mana_sigsys_app_view(app);
  mana_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&app, (long)&handler, 8);
  long ret = mana_raw_syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
  mana_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&handler, 0, 8);
  return ret;
}

static void on_sigsys(int sig, siginfo_t *info, void *ctx_)
{
  (void)sig;
  ucontext_t *ctx = ctx_;
  greg_t *g = ctx->uc_mcontext.gregs;
  const long args[6] = {g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]};
  long ret;
  switch (info->si_syscall) {
  case SYS_mmap:
    mana_trap_stats.mmaps++;
    ret = serve_mmap(g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
    break;
  case SYS_munmap:
    mana_trap_stats.munmaps++;
    ret = serve_munmap(g[REG_RDI], g[REG_RSI]);
    break;
  case SYS_mremap:
    mana_trap_stats.mremaps++;
    ret = serve_mremap(g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10]);
    break;
  case SYS_rt_sigaction:
    mana_trap_stats.signal_calls++;
    ret = serve_sigaction(g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10]);
    break;
  case SYS_rt_sigprocmask:
    mana_trap_stats.signal_calls++;
    ret = serve_sigprocmask(ctx, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10]);
    break;
  case SYS_execve:
  case SYS_execveat:
    ret = serve_exec(ctx, info->si_syscall, args);
    break;
  case SYS_pipe:
  case SYS_pipe2:
  case SYS_socketpair:
    ret = mana_raw_syscall6(info->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10],
                            g[REG_R8], g[REG_R9]);
    if (ret == 0) {
      const int *pair = (const int *)(info->si_syscall == SYS_socketpair ? g[REG_R10] : g[REG_RDI]);
      mana_app_fd_note(pair[0]);
      mana_app_fd_note(pair[1]);
    }
    break;
  case SYS_signalfd:
  case SYS_signalfd4:
    ret = serve_signalfd(info->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10]);
    mana_app_fd_note(ret);
    break;
  case SYS_socket:
  case SYS_eventfd:
  case SYS_eventfd2:
  case SYS_timerfd_create:
  case SYS_epoll_create:
  case SYS_epoll_create1:
  case SYS_inotify_init:
  case SYS_inotify_init1:
  case SYS_memfd_create:
    ret = mana_raw_syscall6(info->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10],
                            g[REG_R8], g[REG_R9]);
    mana_app_fd_note(ret);
    break;
  case SYS_timer_create:
    ret = mana_raw_syscall4(SYS_timer_create, g[REG_RDI], g[REG_RSI], g[REG_RDX], 0);
    if (ret == 0)
      mana_app_timer_note(*(const int *)g[REG_RDX]);
    break;
  case SYS_dup:
  case SYS_dup2:
  case SYS_dup3:
  case SYS_fcntl: /* only F_DUPFD and F_DUPFD_CLOEXEC come here */
    ret = mana_raw_syscall4(info->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], 0);
    if (ret >= 0)
      mana_app_anon_fd_dup(
          (long)g[REG_RDI],
          info->si_syscall == SYS_dup2 || info->si_syscall == SYS_dup3 ? (long)g[REG_RSI] : ret);
    break;
  case SYS_madvise: /* only MADV_DONTFORK and MADV_WIPEONFORK come here */
    ret = mana_raw_syscall4(SYS_madvise, g[REG_RDI], g[REG_RSI], g[REG_RDX], 0);
    if (ret == 0)
      __atomic_store_n(&mana_fork_advice_asked, 1, __ATOMIC_RELEASE);
    break;
  case SYS_shmget:
  case SYS_shmat:
  case SYS_shmdt:
  case SYS_shmctl:
    ret = mana_sysv_shm_call(info->si_syscall, args);
    break;
  case SYS_open:
  case SYS_openat:
  case SYS_creat:
    ret = mana_written_files_open(info->si_syscall, args);
    break;
  case SYS_semtimedop: /* only with a timeout; goes on in the trampoline, which makes it */
    mana_timed_wait_enter(ctx, info->si_syscall, 0);
    return;
  case SYS_poll: /* only with a positive timeout */
  case SYS_epoll_wait:
    mana_poll_timed(ctx, info->si_syscall);
    return; /* goes on in the trampoline, which makes the call */
  case SYS_epoll_pwait:
    if (!args[4]) { /* no mask: an epoll_wait, trapped for its positive timeout */
      mana_poll_timed(ctx, info->si_syscall);
      return;
    }
    __attribute__((fallthrough));
  case SYS_rt_sigsuspend:
  case SYS_rt_sigtimedwait:
  case SYS_ppoll:
  case SYS_pselect6:
  case SYS_epoll_pwait2: {
    int resumed;
    ret = mana_masked_wait(ctx, info->si_syscall, &resumed);
    if (resumed)
      return; /* goes on in the trampoline, which makes the call */
    break;
  }
  case SYS_clock_gettime:
  case SYS_clock_nanosleep:
  case SYS_futex:
  case SYS_timer_settime:
  case SYS_timerfd_settime: {
    int resumed;
    ret = mana_clock_call(ctx, info->si_syscall, &resumed);
    if (resumed)
      return; /* goes on in a trampoline, which makes the call */
    break;
  }
  default:
    ret = -ENOSYS;
  }
  g[REG_RAX] = ret;
}

/* ---- the BPF program ---- */

#define MAX_INSNS 256
struct bpf_builder {
  struct sock_filter insn[MAX_INSNS];
  int jt_label[MAX_INSNS], jf_label[MAX_INSNS];
  int label_pos[96]; /* L_FIRST_RANGE and four per range, 12 ranges at most */
  int n;
};

enum {
  L_ALLOW,
  L_TRAP,
  L_CHECK_IP,
  L_MMAP,
  L_MREMAP,
  L_OPEN,
  L_OPENAT,
  L_MADVISE,
  L_FCNTL,
  L_FUTEX,
  L_FUTEX_TIMEOUT,
  L_NANOSLEEP,
  L_GETTIME,
  L_SETTIME,
  L_POLL,
  L_EPOLL_WAIT,
  L_PPOLL,
  L_EPOLL_PWAIT,
  L_EPOLL_PWAIT2,
  L_PSELECT,
  L_SEMTIMEDOP,
  L_TIME_IP, /* four labels: a range (emit_range) */
  L_FIRST_RANGE = L_TIME_IP + 4
};

static void emit(struct bpf_builder *b, uint16_t code, uint32_t k, int jt, int jf)
{
  b->insn[b->n] = (struct sock_filter){code, 0, 0, k};
  b->jt_label[b->n] = jt;
  b->jf_label[b->n] = jf;
  b->n++;
}

static void label(struct bpf_builder *b, int id)
{
  b->label_pos[id] = b->n;
}

#define LD_W(off) emit(b, BPF_LD | BPF_W | BPF_ABS, (off), -1, -1)
#define JEQ(k, t, f) emit(b, BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JGT(k, t, f) emit(b, BPF_JMP | BPF_JGT | BPF_K, (k), (t), (f))
#define JGE(k, t, f) emit(b, BPF_JMP | BPF_JGE | BPF_K, (k), (t), (f))
#define JSET(k, t, f) emit(b, BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))
#define RET(k) emit(b, BPF_RET | BPF_K, (k), -1, -1)
#define NEXT (-2) /* fall through to the next instruction */

#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (offsetof(struct seccomp_data, instruction_pointer) + 4)
#define ARG_LO(i) offsetof(struct seccomp_data, args[i])

/* ip in [start, end) -> `inside`, else -> `next`. Unsigned 64-bit compare from 32-bit halves. */
static void emit_range_to(struct bpf_builder *b, uint64_t start, uint64_t end, int next, int lbl,
                          int inside)
{
  uint32_t s_hi = start >> 32, s_lo = (uint32_t)start, e_hi = end >> 32, e_lo = (uint32_t)end;
  int upper = lbl + 1, hi_eq_start = lbl + 2, hi_eq_end = lbl + 3;
  label(b, lbl);
  LD_W(IP_HI);
  JGT(s_hi, upper, NEXT);
  JEQ(s_hi, hi_eq_start, next);
  label(b, hi_eq_start);
  LD_W(IP_LO);
  JGE(s_lo, upper, next);
  label(b, upper);
  LD_W(IP_HI);
  JGT(e_hi, next, NEXT);
  JEQ(e_hi, hi_eq_end, inside);
  label(b, hi_eq_end);
  LD_W(IP_LO);
  JGE(e_lo, next, inside);
}

static void emit_range(struct bpf_builder *b, uint64_t start, uint64_t end, int next, int lbl)
{
  emit_range_to(b, start, end, next, lbl, L_TRAP);
}

static int resolve(struct bpf_builder *b)
{
  for (int i = 0; i < b->n; i++) {
    if (BPF_CLASS(b->insn[i].code) != BPF_JMP)
      continue;
    int labels[2] = {b->jt_label[i], b->jf_label[i]};
    int off[2];
    for (int j = 0; j < 2; j++) {
      int target = labels[j] == NEXT ? i + 1 : b->label_pos[labels[j]];
      off[j] = target - (i + 1);
      if (off[j] < 0 || off[j] > 255)
        return -1;
    }
    b->insn[i].jt = (uint8_t)off[0];
    b->insn[i].jf = (uint8_t)off[1];
  }
  return 0;
}

/* The calls that make pipes, sockets, memfds and other objects behind descriptors, POSIX
 * timers and System V shared memory (the last one, inotify_init1, ends the list in
 * build_filter).  None of them waits: the handler runs with the park signal blocked.  accept
 * would (a socket it returns comes from a listening socket, which is noted already). */
static const uint32_t object_makers[] = {
    SYS_pipe,          SYS_pipe2,        SYS_socketpair,   SYS_socket,         SYS_eventfd,
    SYS_eventfd2,      SYS_signalfd,     SYS_signalfd4,    SYS_timerfd_create, SYS_epoll_create,
    SYS_epoll_create1, SYS_inotify_init, SYS_timer_create, SYS_shmget,         SYS_shmat,
    SYS_shmdt,         SYS_shmctl,       SYS_memfd_create};

static int build_filter(struct bpf_builder *b, const struct mana_range *ranges, unsigned n,
                        int clocks)
{
  memset(b, 0, sizeof(*b));
  LD_W(offsetof(struct seccomp_data, arch));
  JEQ(AUDIT_ARCH_X86_64, NEXT, L_ALLOW);
  LD_W(offsetof(struct seccomp_data, nr));
  JEQ(SYS_mmap, L_MMAP, NEXT);
  JEQ(SYS_munmap, L_CHECK_IP, NEXT);
  JEQ(SYS_mremap, L_MREMAP, NEXT);
  JEQ(SYS_rt_sigaction, L_CHECK_IP, NEXT);
  JEQ(SYS_rt_sigprocmask, L_CHECK_IP, NEXT);
  JEQ(SYS_execve, L_CHECK_IP, NEXT);
  JEQ(SYS_execveat, L_CHECK_IP, NEXT);
  JEQ(SYS_openat, L_OPENAT, NEXT);
  JEQ(SYS_open, L_OPEN, NEXT);
  JEQ(SYS_creat, L_CHECK_IP, NEXT);
  JEQ(SYS_madvise, L_MADVISE, NEXT);
  JEQ(SYS_fcntl, L_FCNTL, NEXT);
  JEQ(SYS_dup, L_CHECK_IP, NEXT);
  JEQ(SYS_dup2, L_CHECK_IP, NEXT);
  JEQ(SYS_dup3, L_CHECK_IP, NEXT);
  for (size_t i = 0; i < sizeof(object_makers) / sizeof(object_makers[0]); i++)
    JEQ(object_makers[i], L_CHECK_IP, NEXT);
  JEQ(SYS_nanosleep, L_TIME_IP, NEXT);
  JEQ(SYS_clock_nanosleep, L_NANOSLEEP, NEXT);
  JEQ(SYS_poll, L_POLL, NEXT);
  JEQ(SYS_epoll_wait, L_EPOLL_WAIT, NEXT);
  JEQ(SYS_rt_sigsuspend, L_TIME_IP, NEXT);
  JEQ(SYS_rt_sigtimedwait, L_TIME_IP, NEXT);
  JEQ(SYS_ppoll, L_PPOLL, NEXT);
  JEQ(SYS_pselect6, L_PSELECT, NEXT);
  JEQ(SYS_epoll_pwait, L_EPOLL_PWAIT, NEXT);
  JEQ(SYS_epoll_pwait2, L_EPOLL_PWAIT2, NEXT);
  JEQ(SYS_semtimedop, L_SEMTIMEDOP, NEXT);
  if (clocks) {
    JEQ(SYS_futex, L_FUTEX, NEXT);
    JEQ(SYS_clock_gettime, L_GETTIME, NEXT);
    JEQ(SYS_timer_settime, L_SETTIME, NEXT);
    JEQ(SYS_timerfd_settime, L_SETTIME, NEXT);
  }
  JEQ(SYS_inotify_init1, L_CHECK_IP, L_ALLOW);
  label(b, L_MMAP);
  LD_W(ARG_LO(3));
  JSET(MAP_FIXED | MAP_FIXED_NOREPLACE, L_ALLOW, L_CHECK_IP);
  label(b, L_MREMAP);
  LD_W(ARG_LO(3));
  JSET(MREMAP_FIXED, L_ALLOW, NEXT);
  JSET(MREMAP_MAYMOVE, L_CHECK_IP, L_ALLOW);
  label(b, L_OPEN); /* only opens for writing: reading a file needs no note */
  LD_W(ARG_LO(1));
  JSET(O_WRONLY | O_RDWR, L_CHECK_IP, L_ALLOW);
  label(b, L_OPENAT);
  LD_W(ARG_LO(2));
  JSET(O_WRONLY | O_RDWR, L_CHECK_IP, L_ALLOW);
  label(b, L_MADVISE); /* malloc's advice runs free: only what a forked writer must undo */
  LD_W(ARG_LO(2));
  JEQ(MADV_DONTFORK, L_CHECK_IP, NEXT);
  JEQ(MADV_WIPEONFORK, L_CHECK_IP, L_ALLOW);
  label(b, L_FCNTL); /* duplicates: an eventfd's is the application's too (app_fd_origin.c) */
  LD_W(ARG_LO(1));
  JEQ(F_DUPFD, L_CHECK_IP, NEXT);
  JEQ(F_DUPFD_CLOEXEC, L_CHECK_IP, L_ALLOW);
  if (clocks) {
    /* a wait with a deadline on CLOCK_MONOTONIC (clock_calls.c) */
    label(b, L_FUTEX);
    LD_W(ARG_LO(1));
    JSET(FUTEX_CLOCK_REALTIME, L_ALLOW, NEXT);
    emit(b, BPF_ALU | BPF_AND | BPF_K, FUTEX_CMD_MASK, -1, -1);
    JEQ(FUTEX_WAIT_BITSET, L_FUTEX_TIMEOUT, NEXT);
    JEQ(FUTEX_WAIT_REQUEUE_PI, L_FUTEX_TIMEOUT, NEXT);
    JEQ(FUTEX_LOCK_PI2, L_FUTEX_TIMEOUT, L_ALLOW);
    label(b, L_FUTEX_TIMEOUT);
    LD_W(ARG_LO(3));
    JEQ(0, NEXT, L_TIME_IP);
    LD_W(ARG_LO(3) + 4);
    JEQ(0, L_ALLOW, L_TIME_IP);
    label(b, L_GETTIME); /* the vDSO's readings are offset by the stand-in, the call's here */
    LD_W(ARG_LO(0));
    JEQ(CLOCK_MONOTONIC, L_TIME_IP, NEXT);
    JEQ(CLOCK_MONOTONIC_RAW, L_TIME_IP, NEXT);
    JEQ(CLOCK_MONOTONIC_COARSE, L_TIME_IP, NEXT);
    JEQ(CLOCK_BOOTTIME, L_TIME_IP, NEXT);
    JEQ(CLOCK_BOOTTIME_ALARM, L_TIME_IP, L_ALLOW);
    label(b, L_SETTIME); /* an absolute time: the handler tells the timer's clock */
    LD_W(ARG_LO(1));
    JSET(TIMER_ABSTIME | TFD_TIMER_ABSTIME, L_TIME_IP, L_ALLOW);
  }
  label(b, L_POLL); /* a positive timeout (poll_timeout.c): not 0, not negative */
  LD_W(ARG_LO(2));
  JEQ(0, L_ALLOW, NEXT);
  JSET(0x80000000u, L_ALLOW, L_TIME_IP);
  /* waits with a mask of their own: only when they have one (masked_waits.c) */
  label(b, L_PPOLL);
  LD_W(ARG_LO(3));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(3) + 4);
  JEQ(0, L_ALLOW, L_TIME_IP);
  label(b, L_EPOLL_PWAIT); /* without a mask, an epoll_wait (below) */
  LD_W(ARG_LO(4));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(4) + 4);
  JEQ(0, L_EPOLL_WAIT, L_TIME_IP);
  label(b, L_EPOLL_PWAIT2); /* with a mask, or a timeout (masked_waits.c) */
  LD_W(ARG_LO(4));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(4) + 4);
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(3));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(3) + 4);
  JEQ(0, L_ALLOW, L_TIME_IP);
  label(b, L_EPOLL_WAIT); /* a positive timeout (poll_timeout.c) */
  LD_W(ARG_LO(3));
  JEQ(0, L_ALLOW, NEXT);
  JSET(0x80000000u, L_ALLOW, L_TIME_IP);
  label(b, L_PSELECT); /* its sixth argument points at the mask's pointer and size */
  LD_W(ARG_LO(5));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(5) + 4);
  JEQ(0, L_ALLOW, L_TIME_IP);
  label(b, L_SEMTIMEDOP); /* with a timeout (timed_waits.c): glibc's semop passes none */
  LD_W(ARG_LO(3));
  JEQ(0, NEXT, L_TIME_IP);
  LD_W(ARG_LO(3) + 4);
  JEQ(0, L_ALLOW, L_TIME_IP);
  label(b, L_NANOSLEEP); /* a sleep on a clock the sleep trampoline knows (not CPU time) */
  LD_W(ARG_LO(0));
  JEQ(CLOCK_REALTIME, L_TIME_IP, NEXT);
  JEQ(CLOCK_MONOTONIC, L_TIME_IP, NEXT);
  JEQ(CLOCK_BOOTTIME, L_TIME_IP, NEXT);
  JEQ(CLOCK_REALTIME_ALARM, L_TIME_IP, NEXT);
  JEQ(CLOCK_BOOTTIME_ALARM, L_TIME_IP, NEXT);
  JEQ(CLOCK_TAI, L_TIME_IP, L_ALLOW);
  /* the stand-in's trampolines make these calls themselves */
  uint64_t start, end;
  mana_clock_reissue_range(&start, &end);
  emit_range_to(b, start, end, L_CHECK_IP, L_TIME_IP, L_ALLOW);
  label(b, L_CHECK_IP);
  for (unsigned i = 0; i < n; i++) {
    int lbl = L_FIRST_RANGE + 4 * (int)i;
    int next = (i + 1 < n) ? lbl + 4 : L_ALLOW;
    emit_range(b, ranges[i].start, ranges[i].end, next, lbl);
  }
  label(b, L_ALLOW);
  RET(SECCOMP_RET_ALLOW);
  label(b, L_TRAP);
  RET(SECCOMP_RET_TRAP);
  return resolve(b);
}

int mana_seccomp_install(void)
{
  static struct bpf_builder builder;
  struct mana_range ranges[1 + MANA_MAX_EXTRA_RANGES];
  unsigned n_ranges = 0;
  ranges[n_ranges++] = (struct mana_range){MANA_WINDOW_BASE, MANA_WINDOW_END};
  for (unsigned i = 0; i < MANA_BOUNDARY->n_extra_ranges && i < MANA_MAX_EXTRA_RANGES; i++)
    ranges[n_ranges++] = MANA_BOUNDARY->extra_ranges[i];
  if (n_ranges > 12 || build_filter(&builder, ranges, n_ranges, mana_clock_calls_trapped()) != 0) {
    fprintf(stderr, "mana_lh: cannot build the seccomp filter for %u ranges\n", n_ranges);
    return -1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  /* A thread must not park while it holds the window allocator's lock. */
  sigaddset(&sa.sa_mask, MANA_PARK_SIGNAL);
  if (sigaction(SIGSYS, &sa, NULL) != 0) {
    perror("mana_lh: sigaction(SIGSYS)");
    return -1;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("mana_lh: prctl(PR_SET_NO_NEW_PRIVS)");
    return -1;
  }
  struct sock_fprog prog = {.len = (unsigned short)builder.n, .filter = builder.insn};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    perror("mana_lh: seccomp(SECCOMP_SET_MODE_FILTER)");
    return -1;
  }
  return 0;
}
