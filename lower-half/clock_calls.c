/* See clock_calls.h and mana/app_clocks.h.
 *
 * A call that waits until an absolute time on an offset clock (a futex wait with a deadline on
 * CLOCK_MONOTONIC: pthread_cond_clockwait, C++'s condition_variable::wait_for, sem_clockwait;
 * clock_nanosleep with TIMER_ABSTIME) carries a deadline read from the application's clock.
 * The kernel must get it on its own: deadline less the offset.  The waiting cannot happen in
 * the SIGSYS handler (a thread is not parked there, so a checkpoint would wait for the
 * deadline), so the thread goes on in one of the stand-in vDSO's trampolines, which make the
 * call from upper-half code: for a futex wait the handler works out the kernel's deadline,
 * for a sleep the sleep trampoline does (below).  A timer armed with
 * an absolute time on such a clock (timer_settime, timerfd_settime) does not wait: the handler
 * arms it with the kernel's time.
 *
 * Sleeps (nanosleep, clock_nanosleep: sleep, usleep, and the waits of codes that poll a file)
 * are trapped whether the clocks are offset or not.  A checkpoint parks every thread with a
 * signal, and a sleep a signal handler interrupts ends with EINTR, early: sleep(4) returned
 * after 2.5 s with 2 left when a checkpoint came.  So each sleep is made in the stand-in's
 * sleep trampoline as a clock_nanosleep until an absolute time; when mana's handlers
 * interrupted it, the thread sleeps out the rest there (mana_clock_sleep_rewind); the
 * application's own signals still end it with EINTR and the time left, as they would, also
 * one that came during the checkpoint (mana/app_clocks.h).
 *
 * Runs on the application's thread pointer: raw system calls only. */
#define _GNU_SOURCE
#include "clock_calls.h"
#include "app_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "dso_symbols.h"
#include "sigsys.h"
#include "mana/app_clocks.h"
#include "mana/boundary.h"
#include "mana/raw_syscall.h"
#include "mana/signals.h"

static const char *const vdso_names[MANA_VDSO_N_ENTRIES] = {
    [MANA_VDSO_CLOCK_GETTIME] = "__vdso_clock_gettime",
    [MANA_VDSO_GETTIMEOFDAY] = "__vdso_gettimeofday",
    [MANA_VDSO_TIME] = "__vdso_time",
    [MANA_VDSO_GETCPU] = "__vdso_getcpu",
    [MANA_VDSO_CLOCK_GETRES] = "__vdso_clock_getres"};

int mana_clock_fill_boundary(uint64_t app_vdso)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t kernel_vdso = getauxval(AT_SYSINFO_EHDR);
  for (int i = 0; i < MANA_VDSO_N_ENTRIES; i++)
    b->vdso_entries[i] = mana_dso_symbol(kernel_vdso, vdso_names[i]);
  if (!app_vdso)
    return 0;
  for (int i = 0; i < MANA_CLOCK_N_OFFSETS; i++)
    b->clock_offset_ns[i] = 0;
  b->vdso_reissue_start = mana_dso_symbol(app_vdso, "mana_vdso_reissue_start");
  b->vdso_reissue_end = mana_dso_symbol(app_vdso, "mana_vdso_reissue_end");
  b->vdso_reissue_r10 = mana_dso_symbol(app_vdso, "mana_vdso_reissue_r10");
  b->vdso_sleep = mana_dso_symbol(app_vdso, "mana_vdso_sleep");
  b->vdso_sleep_resume = mana_dso_symbol(app_vdso, "mana_vdso_sleep_resume");
  b->vdso_sleep_rest = mana_dso_symbol(app_vdso, "mana_vdso_sleep_rest");
  b->vdso_sleep_rest_resume = mana_dso_symbol(app_vdso, "mana_vdso_sleep_rest_resume");
  b->vdso_masked_wait = mana_dso_symbol(app_vdso, "mana_vdso_masked_wait");
  b->vdso_poll_timed = mana_dso_symbol(app_vdso, "mana_vdso_poll_timed");
  b->vdso_epoll_timed = mana_dso_symbol(app_vdso, "mana_vdso_epoll_timed");
  b->vdso_write_rest = mana_dso_symbol(app_vdso, "mana_vdso_write_rest");
  b->vdso_timed_wait = mana_dso_symbol(app_vdso, "mana_vdso_timed_wait");
  b->vdso_timed_round = mana_dso_symbol(app_vdso, "mana_vdso_timed_round");
  b->vdso_timed_resume = mana_dso_symbol(app_vdso, "mana_vdso_timed_resume");
  return b->vdso_reissue_start && b->vdso_reissue_end && b->vdso_reissue_r10 && b->vdso_sleep &&
                 b->vdso_sleep_resume && b->vdso_sleep_rest && b->vdso_sleep_rest_resume &&
                 b->vdso_masked_wait && b->vdso_poll_timed && b->vdso_epoll_timed &&
                 b->vdso_write_rest && b->vdso_timed_wait && b->vdso_timed_round &&
                 b->vdso_timed_resume
             ? 0
             : -1;
}

int mana_clock_calls_trapped(void)
{
  for (int i = 0; i < MANA_CLOCK_N_OFFSETS; i++)
    if (MANA_BOUNDARY->clock_offset_ns[i])
      return 1;
  return 0;
}

void mana_clock_reissue_range(uint64_t *start, uint64_t *end)
{
  /* the filter sees the address after the syscall instruction, which is the end label */
  *start = MANA_BOUNDARY->vdso_reissue_start;
  *end = MANA_BOUNDARY->vdso_reissue_end + 1;
}

static int64_t offset_of(long clockid)
{
  int idx = mana_clock_offset_index(clockid);
  return idx < 0 ? 0 : MANA_BOUNDARY->clock_offset_ns[idx];
}

/* The application's absolute time at `ts_addr` on a clock offset by `off`, as the kernel's
 * nanoseconds, or a negative errno. */
static long kernel_deadline(uint64_t ts_addr, int64_t off, int64_t *ns)
{
  struct timespec ts;
  long r = mana_read_app(&ts, ts_addr, sizeof(ts));
  if (r != 0)
    return r;
  int64_t app = mana_timespec_ns(ts.tv_sec, ts.tv_nsec);
  if (app < 0)
    return -EINVAL;
  *ns = mana_kernel_ns(app, off);
  return 0;
}

/* Sends the thread to a trampoline that makes call `nr` with its timeout argument pointing at
 * `deadline_ns` (the registers are otherwise the application's). */
static void reissue(ucontext_t *ctx, long nr, uint64_t trampoline, int64_t deadline_ns)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  g[REG_RCX] = g[REG_RIP];
  g[REG_R11] = deadline_ns;
  g[REG_RAX] = nr;
  g[REG_RIP] = (greg_t)trampoline;
}

static long serve_clock_gettime(long clockid, uint64_t ts_addr)
{
  long r = mana_raw_syscall4(SYS_clock_gettime, clockid, (long)ts_addr, 0, 0);
  int64_t off = offset_of(clockid);
  if (r != 0 || !off)
    return r;
  struct timespec *ts = (struct timespec *)(uintptr_t)ts_addr; /* the kernel just wrote it */
  int64_t v = (int64_t)ts->tv_sec * MANA_NSEC_PER_SEC + ts->tv_nsec + off;
  ts->tv_sec = v / MANA_NSEC_PER_SEC;
  ts->tv_nsec = v % MANA_NSEC_PER_SEC;
  return 0;
}

/* The number after `key` at the start of a line of `path` (after the line `anchor`, when
 * given): 0, or -1 when there is none. */
static int proc_number(const char *path, const char *anchor, const char *key, long *out)
{
  enum { SIZE = 64 << 10 };
  char *buf = mana_raw_map(SIZE);
  if (!buf)
    return -1;
  long fd = mana_raw_syscall4(SYS_open, (long)path, O_RDONLY | O_CLOEXEC, 0, 0), len = 0;
  while (fd >= 0 && len < SIZE - 1) {
    long got = mana_raw_syscall4(SYS_read, fd, (long)(buf + len), SIZE - 1 - len, 0);
    if (got <= 0)
      break;
    len += got;
  }
  if (fd >= 0)
    mana_raw_syscall4(SYS_close, fd, 0, 0, 0);
  buf[len] = '\0';
  int rc = -1, past_anchor = anchor == NULL;
  size_t alen = anchor ? __builtin_strlen(anchor) : 0, klen = __builtin_strlen(key);
  for (char *line = buf; *line && rc != 0;) {
    char *end = line;
    while (*end && *end != '\n')
      end++;
    if (!past_anchor) {
      past_anchor = (size_t)(end - line) == alen && __builtin_memcmp(line, anchor, alen) == 0;
    } else if ((size_t)(end - line) > klen && __builtin_memcmp(line, key, klen) == 0) {
      char *p = line + klen;
      while (*p == ' ' || *p == '\t')
        p++;
      long sign = *p == '-' ? -1 : 1, v = 0;
      p += *p == '-';
      for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
      *out = sign * v;
      rc = 0;
    }
    line = *end ? end + 1 : end;
  }
  mana_raw_unmap(buf, SIZE);
  return rc;
}

static void decimal(char *out, const char *prefix, long v)
{
  char digits[24];
  int n = 0;
  while (*prefix)
    *out++ = *prefix++;
  if (v < 0) {
    *out++ = '-';
    v = -v;
  }
  do
    digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n)
    *out++ = digits[--n];
  *out = '\0';
}

/* The clock of an armed timer: a POSIX timer's from /proc/self/timers, a timerfd's from its
 * fdinfo.  -1 when it cannot be told (the call then goes to the kernel as it is). */
static long clock_of_timer(long nr, long timer)
{
  char path[48], anchor[32];
  long clock;
  int rc;
  if (nr == SYS_timer_settime) {
    decimal(anchor, "ID: ", timer);
    rc = proc_number("/proc/self/timers", anchor, "ClockID:", &clock);
  } else {
    decimal(path, "/proc/self/fdinfo/", timer);
    rc = proc_number(path, NULL, "clockid:", &clock);
  }
  return rc == 0 ? clock : -1;
}

/* timer_settime and timerfd_settime with an absolute time: on an offset clock, the time the
 * kernel must get is the application's less the offset (a past one still expires at once:
 * at least 1 ns, since 0 would disarm the timer). */
static long serve_settime(long nr, const long *args)
{
  int64_t off = offset_of(clock_of_timer(nr, args[0]));
  if (!off)
    return mana_raw_syscall4(nr, args[0], args[1], args[2], args[3]);
  struct itimerspec its;
  long r = mana_read_app(&its, (uint64_t)args[2], sizeof(its));
  if (r != 0)
    return r;
  int64_t app = mana_timespec_ns(its.it_value.tv_sec, its.it_value.tv_nsec);
  if (app < 0)
    return -EINVAL; /* as the kernel answers: an offset must not make a bad time good */
  if (app) {
    int64_t v = mana_kernel_ns(app, off);
    if (v < 1)
      v = 1;
    its.it_value.tv_sec = v / MANA_NSEC_PER_SEC;
    its.it_value.tv_nsec = v % MANA_NSEC_PER_SEC;
  }
  return mana_raw_syscall4(nr, args[0], args[1], (long)&its, args[3]);
}

void mana_clock_sleep_rewind(ucontext_t *ctx)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  const struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t ip = (uint64_t)g[REG_RIP];
  if (!b->vdso_sleep_rest || g[REG_RAX] != -EINTR)
    return;
  struct mana_sleep_block *k = (struct mana_sleep_block *)(uintptr_t)g[REG_RSP];
  if (ip == b->vdso_sleep_resume) { /* its first interruption */
    memcpy(&k->app_mask, &ctx->uc_sigmask, sizeof(k->app_mask));
    k->app_view_mask = mana_sigsys_app_view(k->app_mask);
  } else if (ip != b->vdso_sleep_rest_resume) {
    return;
  }
  /* Blocked from the handler's return to the ppoll, which takes the application's mask
   * (mana/app_clocks.h). */
  uint64_t blocked = ~(uint64_t)MANA_SIGNALS_NEVER_BLOCKED;
  memcpy(&ctx->uc_sigmask, &blocked, sizeof(blocked));
  g[REG_RIP] = (greg_t)b->vdso_sleep_rest;
}

long mana_clock_call(ucontext_t *ctx, long nr, int *resumed)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  struct mana_boundary *b = MANA_BOUNDARY;
  int64_t deadline;
  long r;
  *resumed = 0;
  switch (nr) {
  case SYS_clock_gettime:
    return serve_clock_gettime(g[REG_RDI], g[REG_RSI]);
  case SYS_timer_settime:     /* only TIMER_ABSTIME comes here */
  case SYS_timerfd_settime: { /* only TFD_TIMER_ABSTIME */
    const long args[4] = {g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10]};
    return serve_settime(nr, args);
  }
  case SYS_nanosleep:
  case SYS_clock_nanosleep: /* on the clocks the sleep trampoline knows (not CPU time) */
    reissue(ctx, nr, b->vdso_sleep, 0);
    *resumed = 1;
    return 0;
  case SYS_futex: /* only a wait with a deadline on CLOCK_MONOTONIC comes here */
    r = kernel_deadline(g[REG_R10], b->clock_offset_ns[MANA_CLOCK_OFF_MONOTONIC], &deadline);
    if (r != 0)
      return r;
    reissue(ctx, nr, b->vdso_reissue_r10, deadline);
    *resumed = 1;
    return 0;
  default:
    return -ENOSYS;
  }
}
