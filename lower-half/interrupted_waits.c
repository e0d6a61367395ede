/* See interrupted_waits.h.
 *
 * poll, select, their p variants, epoll_wait, pause, sigsuspend, sigtimedwait (sigwaitinfo),
 * System V IPC's waits (msgrcv, msgsnd, semop, semtimedop) and futex waits with a timeout
 * (sem_timedwait) end with EINTR after any signal handler, SA_RESTART or not: the kernel never
 * makes them again after one.  So the park signal made them fail at every checkpoint, where
 * natively nothing would have ended them (a program waiting in poll() for a peer saw an error
 * it had no cause for).  The handler cannot
 * tell which call it interrupted: the signal frame keeps neither the call's number nor the
 * kernel's restart state, and %rax holds -EINTR.  The checkpoint thread can: before it signals
 * a thread, /proc/self/task/TID/syscall shows the call the thread waits in, its arguments and
 * the address it returns to.  The handler then finds its own entry by that address and those
 * arguments (a syscall instruction keeps them in their registers); a thread that was still on
 * its way into the call has none, and its call is read from the code before the syscall
 * instruction where that code loads it as a constant (call_of_code).  Once the thread is
 * released, issues the call again: it rewinds %rip to the syscall instruction and puts the
 * number back in %rax, as the kernel does for a call it restarts.
 *
 * A wait is made again only when it then waits for what it had left: without a timeout, or
 * with one the kernel wrote the time left back into (select, pselect and ppoll: glibc's
 * wrappers pass a copy of their own; the application's poll and epoll_wait with a timeout
 * are made with a ppoll for this, poll_timeout.c, and so are the epoll waits with a mask or
 * epoll_pwait2's timespec, masked_waits.c; sigtimedwait and semtimedop with a timeout go on in
 * a trampoline that keeps their deadline, timed_waits.c).  A call with a timeout the kernel
 * does not write back that reaches it as it is (a relative FUTEX_WAIT's; none of the others
 * the filter sees does) keeps its EINTR: made again, its timeout would start again in full at
 * every checkpoint.  A FUTEX_WAIT_BITSET's deadline is absolute and holds as
 * it was, so that call is made again (but not one the stand-in made under clock offsets: see
 * in_reissue_trampoline).  When a signal of the application's with a handler waits to be
 * taken and the mask after the handler lets it through, the call fails with EINTR as before,
 * as that signal would have made it natively; one the mask blocks and the call's own mask
 * lets through (sigsuspend, ppoll with a mask) ends the call made again at once, as natively.
 *
 * A write, sendto, writev or sendmsg to a blocking pipe or stream socket that waited for room,
 * and had written part of its data when the park signal came, returns that part: SA_RESTART
 * makes the kernel restart only a call that moved nothing.  Natively nothing would have cut it
 * short, so it goes on in a trampoline that writes the rest and returns the whole count.
 *
 * The entries live in lower-half memory: a thread resumed after a restart has the call's
 * number in its handler's frame, found before it parked. */
#define _GNU_SOURCE
#include "interrupted_waits.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock_calls.h"
#include "interrupted_calls.h"
#include "mana/boundary.h"
#include "mana/raw_syscall.h"

struct noted_wait {
  uint32_t tid;
  long nr;
  uint64_t pc, args[6];
};

/* As many threads as one park notes in its first rounds; more fall back to EINTR. */
enum { MAX_NOTED = 512 };
static struct noted_wait noted[MAX_NOTED];
static uint32_t n_noted;

static int ends_after_any_handler(long nr)
{
  switch (nr) {
  case SYS_poll:
  case SYS_ppoll:
  case SYS_select:
  case SYS_pselect6:
  case SYS_epoll_wait:
  case SYS_epoll_pwait:
  case SYS_epoll_pwait2:
  case SYS_pause:
  case SYS_rt_sigsuspend:
  case SYS_rt_sigtimedwait:
  case SYS_msgrcv:
  case SYS_msgsnd:
  case SYS_semop:
  case SYS_semtimedop:
  case SYS_futex:
    return 1;
  default:
    return 0;
  }
}

/* Calls that a handler cuts short once they moved part of their data: a write to a pipe or
 * a stream socket that waited for room returns what it wrote (SA_RESTART restarts only one
 * that wrote nothing).  Natively nothing would have interrupted it, and a program that does
 * not loop over short writes lost the rest. */
static int cut_short_by_any_handler(long nr)
{
  return nr == SYS_write || nr == SYS_sendto || nr == SYS_writev || nr == SYS_sendmsg;
}

void mana_interrupted_waits_reset(void)
{
  __atomic_store_n(&n_noted, 0, __ATOMIC_RELEASE);
}

void mana_interrupted_waits_note(pid_t tid)
{
  char path[64], text[256];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0)
    return;
  text[n] = '\0';
  /* "NR ARG1 ... ARG6 SP PC" while the thread waits in a call; "running" otherwise */
  struct noted_wait w = {.tid = (uint32_t)tid};
  unsigned long long a[6], sp, pc;
  if (sscanf(text, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &w.nr, &a[0], &a[1], &a[2], &a[3],
             &a[4], &a[5], &sp, &pc) != 9 ||
      !(ends_after_any_handler(w.nr) || cut_short_by_any_handler(w.nr)))
    return;
  for (int i = 0; i < 6; i++)
    w.args[i] = a[i];
  w.pc = pc;
  uint32_t k = __atomic_load_n(&n_noted, __ATOMIC_ACQUIRE);
  if (k >= MAX_NOTED)
    return;
  noted[k] = w;
  __atomic_store_n(&n_noted, k + 1, __ATOMIC_RELEASE);
}

/* The handler interrupted the call just made at its return address: %rax -EINTR, %rcx the
 * return address, which the syscall instruction put there. */
static int interrupted_at_return(const greg_t *g)
{
  const unsigned char *ip = (const unsigned char *)(uintptr_t)g[REG_RIP];
  return g[REG_RAX] == -EINTR && g[REG_RCX] == g[REG_RIP] && ip[-2] == 0x0f && ip[-1] == 0x05;
}

/* The handler interrupted a call just made at its return address, which moved some bytes. */
static int returned_bytes(const greg_t *g)
{
  const unsigned char *ip = (const unsigned char *)(uintptr_t)g[REG_RIP];
  return g[REG_RAX] > 0 && g[REG_RCX] == g[REG_RIP] && ip[-2] == 0x0f && ip[-1] == 0x05;
}

/* The bytes a vector of `n` buffers holds; 0 for a count the kernel refuses (UIO_MAXIOV). */
static uint64_t vector_bytes(const struct iovec *v, uint64_t n)
{
  uint64_t sum = 0;
  if (!v || n > 1024)
    return 0;
  for (uint64_t i = 0; i < n; i++)
    sum += v[i].iov_len;
  return sum;
}

/* The bytes call `nr` was given: %rdx for write and sendto, its vector's for writev (%rsi,
 * %rdx buffers) and sendmsg (the message's, at %rsi).  The kernel just read them all. */
static uint64_t bytes_given(const greg_t *g, long nr)
{
  switch (nr) {
  case SYS_write:
  case SYS_sendto:
    return (uint64_t)g[REG_RDX];
  case SYS_writev:
    return vector_bytes((const struct iovec *)(uintptr_t)g[REG_RSI], (uint64_t)g[REG_RDX]);
  case SYS_sendmsg: {
    const struct msghdr *m = (const struct msghdr *)(uintptr_t)g[REG_RSI];
    return m ? vector_bytes(m->msg_iov, m->msg_iovlen) : 0;
  }
  default:
    return 0;
  }
}

/* The handler interrupted call `nr`, one a handler cuts short, at its return address, after
 * it wrote part of what it was given. */
static int written_in_part(const greg_t *g, long nr)
{
  return cut_short_by_any_handler(nr) && returned_bytes(g) &&
         (uint64_t)g[REG_RAX] < bytes_given(g, nr);
}

/* The call the handler interrupted, when the checkpoint thread did not note it: the thread
 * was running then, not waiting (copying into a pipe its reader was draining, or back from
 * the last park and on its way into the wait again).  glibc's wrappers and the stand-in's
 * trampolines load the call's number just before the syscall instruction (mov $NR, %eax:
 * b8 and the number in four bytes); 0 when the code there is not that. */
static long call_of_code(const greg_t *g)
{
  uint64_t ip = (uint64_t)g[REG_RIP];
  if ((ip & 4095) < 7)
    return 0; /* those bytes would lie on the page before */
  const unsigned char *c = (const unsigned char *)(uintptr_t)(ip - 7);
  if (c[0] != 0xb8)
    return 0;
  uint32_t nr = c[1] | (uint32_t)c[2] << 8 | (uint32_t)c[3] << 16 | (uint32_t)c[4] << 24;
  return nr < 1024 ? nr : 0;
}

long mana_interrupted_wait_of(const ucontext_t *ctx)
{
  const greg_t *g = ctx->uc_mcontext.gregs;
  int ended = interrupted_at_return(g);
  if (!ended && !returned_bytes(g))
    return 0;
  uint32_t tid = (uint32_t)mana_raw_syscall4(SYS_gettid, 0, 0, 0, 0);
  const uint64_t args[6] = {(uint64_t)g[REG_RDI], (uint64_t)g[REG_RSI], (uint64_t)g[REG_RDX],
                            (uint64_t)g[REG_R10], (uint64_t)g[REG_R8],  (uint64_t)g[REG_R9]};
  uint32_t n = __atomic_load_n(&n_noted, __ATOMIC_ACQUIRE);
  for (uint32_t k = n; k-- > 0;) {
    const struct noted_wait *w = &noted[k];
    if (w->tid != tid || w->pc != (uint64_t)g[REG_RIP])
      continue;
    int same = 1;
    for (int i = 0; i < 6; i++)
      same &= w->args[i] == args[i];
    if (same && (ended ? ends_after_any_handler(w->nr) : written_in_part(g, w->nr)))
      return w->nr;
  }
  long nr = call_of_code(g);
  return (ended ? ends_after_any_handler(nr) : written_in_part(g, nr)) ? nr : 0;
}

/* The stand-in's trampolines.  A futex wait one makes for the application's clocks under an
 * offset (clock_calls.c) carries the deadline in the kernel's time of this boot: made again in
 * a process restarted on another, it would wait until a time that may be hours away (a chain
 * of restart.clock_namespace.chain.2ranks hung so).  It keeps its EINTR, which the
 * application's call then gets, as before.  A write the trampoline for the rest of a write
 * makes goes on in that trampoline's own loop. */
static int in_reissue_trampoline(uint64_t pc)
{
  uint64_t start, end;
  mana_clock_reissue_range(&start, &end);
  return pc >= start && pc <= end;
}

/* 1 when call `nr` made again waits as long as what it had left: no timeout, or one the kernel
 * wrote the time left back into.  A timeout taken by value would start again in full, and a
 * program whose checkpoints come more often than it would never see it run out: that call
 * keeps its EINTR, which the program can retry for the time it knows is left. */
static int goes_on_as_it_was(const greg_t *g, long nr)
{
  switch (nr) {
  case SYS_poll:
    return (int)g[REG_RDX] < 0;
  case SYS_epoll_wait:
  case SYS_epoll_pwait:
    return (int)g[REG_R10] < 0;
  case SYS_epoll_pwait2:
    return g[REG_R10] == 0;
  case SYS_rt_sigtimedwait: /* sigwaitinfo: no timeout */
    return g[REG_RDX] == 0;
  case SYS_semtimedop: /* glibc's semop: no timeout */
    return g[REG_R10] == 0;
  case SYS_futex: /* glibc's timed waits: an absolute deadline */
    if (in_reissue_trampoline((uint64_t)g[REG_RIP]))
      return 0;
    return (g[REG_RSI] & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET ||
           ((g[REG_RSI] & FUTEX_CMD_MASK) == FUTEX_WAIT && g[REG_R10] == 0);
  default:
    return 1;
  }
}

/* A write cut short to a blocking pipe, FIFO or socket goes on in the stand-in's trampoline, which
 * writes the rest and returns every byte written (upper-half/vdso/app_vdso.c,
 * mana_vdso_write_rest).  Not when the descriptor or the call does not block (a short write
 * is then the program's to expect), nor inside the trampoline (its loop goes on by itself),
 * nor when a signal of the application's waits, which natively would have cut it short. */
static void settle_written_in_part(ucontext_t *ctx, long nr)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  uint64_t rest = MANA_BOUNDARY->vdso_write_rest;
  if (!rest || !written_in_part(g, nr) || in_reissue_trampoline((uint64_t)g[REG_RIP]) ||
      (nr == SYS_sendto && (g[REG_R10] & MSG_DONTWAIT)) ||
      (nr == SYS_sendmsg && (g[REG_RDX] & MSG_DONTWAIT)))
    return;
  struct stat st;
  if (mana_raw_syscall4(SYS_fstat, g[REG_RDI], (long)&st, 0, 0) != 0 ||
      !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
    return;
  long fl = mana_raw_syscall4(SYS_fcntl, g[REG_RDI], F_GETFL, 0, 0);
  if (fl < 0 || (fl & O_NONBLOCK) || mana_app_signal_waits(ctx, 0))
    return;
  g[REG_RCX] = g[REG_RIP];
  g[REG_R11] = g[REG_RAX];
  g[REG_RAX] = nr;
  g[REG_RIP] = (greg_t)rest;
}

void mana_interrupted_wait_settle(ucontext_t *ctx, long nr)
{
  greg_t *g = ctx->uc_mcontext.gregs;
  if (nr && cut_short_by_any_handler(nr)) {
    settle_written_in_part(ctx, nr);
    return;
  }
  if (!nr || !interrupted_at_return(g) || !goes_on_as_it_was(g, nr) ||
      mana_app_signal_waits(ctx, 0))
    return;
  g[REG_RAX] = nr;
  g[REG_RIP] -= 2;
}
