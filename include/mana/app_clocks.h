/* The application's clocks across restarts (docs/architecture.md, "The application's
 * clocks").  A restart on another node, or after a reboot, finds CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME at another origin: the application would see them jump by days or run
 * backwards.  So the upper half reads them through mana's stand-in for the vDSO
 * (upper-half/vdso/), which adds an offset the restart sets, and the calls that take an
 * absolute time on those clocks are trapped and given the kernel's time (clock_calls.c).
 * Shared by the stand-in, which must stay free of libc, and the lower half. */
#ifndef MANA_APP_CLOCKS_H
#define MANA_APP_CLOCKS_H

#include <stdint.h>

enum { MANA_CLOCK_OFF_MONOTONIC, MANA_CLOCK_OFF_BOOTTIME, MANA_CLOCK_N_OFFSETS };

/* The offset that applies to a clock id, or -1: CLOCK_MONOTONIC (1), _RAW (4) and _COARSE (6)
 * take the monotonic one, CLOCK_BOOTTIME (7) and _ALARM (9) the boot-time one; the others
 * (real time, TAI, CPU-time clocks) none, as in a time namespace. */
static inline int mana_clock_offset_index(long clockid)
{
  switch (clockid) {
  case 1:
  case 4:
  case 6:
    return MANA_CLOCK_OFF_MONOTONIC;
  case 7:
  case 9:
    return MANA_CLOCK_OFF_BOOTTIME;
  default:
    return -1;
  }
}

/* The kernel's vDSO entry points the stand-in forwards to (0: not in this kernel's vDSO; the
 * stand-in then makes the system call). */
enum {
  MANA_VDSO_CLOCK_GETTIME,
  MANA_VDSO_GETTIMEOFDAY,
  MANA_VDSO_TIME,
  MANA_VDSO_GETCPU,
  MANA_VDSO_CLOCK_GETRES,
  MANA_VDSO_N_ENTRIES
};

#define MANA_NSEC_PER_SEC 1000000000LL
/* Far enough to mean "never" (about 126 years of uptime), near enough for 64-bit nanoseconds. */
#define MANA_NEVER_NS (4000000000LL * MANA_NSEC_PER_SEC)

/* A sleep of the application (nanosleep, clock_nanosleep), made in the stand-in vDSO's sleep
 * trampoline (upper-half/vdso/app_vdso.c) as a clock_nanosleep until an absolute time, on the
 * thread's stack at %rsp while it sleeps.  A signal of mana's that interrupts it (parking for
 * a checkpoint) sends the thread on to sleep out the rest (clock_calls.c): the sleep does not
 * end early, and after a restart it ends when the application's clock says.
 *
 * The rest is slept with the application's signals blocked but for the sleeping call itself:
 * a ppoll with the application's mask, which takes them atomically.  A signal that came while
 * mana's handler ran (every signal blocked there), or that a restart sent again, then ends
 * the sleep with EINTR as it would have natively; re-issued with its mask back, the call
 * would have let the signal's handler run first and slept on (sleep(10) cut short by SIGALRM
 * during a checkpoint slept the whole 10 s).  The mask is put back at the end with
 * rt_sigprocmask, trapped like the application's own calls, so it is given as the application
 * sees it: with the bits of the signals whose blocking mana decides as the application asked
 * them (mana/signals.h), or mana would forget what it asked. */
struct mana_sleep_block {
  int64_t nr, rdi, rsi, rdx, r10, r8, r9; /* the application's call, its registers */
  int64_t deadline_sec, deadline_nsec;    /* the kernel's absolute time (the call's argument) */
  int64_t clock;                          /* the clock the kernel sleeps on */
  int64_t app_deadline_ns;                /* that time as the application's clock shows it */
  int64_t rem;                            /* a relative sleep's remaining-time pointer, or 0 */
  uint64_t app_mask;                      /* the rest of it: the application's signal mask, */
  int64_t left_sec, left_nsec;            /* how long it has to go, */
  uint64_t app_view_mask; /* and the mask as the application sees it, put back at its end */
};
#define MANA_SLEEP_BLOCK_DEADLINE 56 /* offsetof(struct mana_sleep_block, deadline_sec) */
#define MANA_SLEEP_BLOCK_CLOCK 72
#define MANA_SLEEP_BLOCK_APP_MASK 96
#define MANA_SLEEP_BLOCK_LEFT 104
#define MANA_SLEEP_BLOCK_APP_VIEW_MASK 120
#define MANA_SLEEP_BLOCK_SIZE 128

/* A wait with a relative timeout that the kernel neither restarts after a signal handler nor
 * writes the time left back into: sigtimedwait (with mana's signals out of its set, as
 * lower-half/masked_waits.c says why) and semtimedop.  A park signal ended it with EINTR, which
 * natively nothing would have; made again as it was, its timeout would start again in full,
 * and never run out in a program checkpointed more often than it.  So it is made in the
 * stand-in vDSO's timed-wait trampoline (upper-half/vdso/app_vdso.c), which turns the timeout
 * into a deadline on the application's CLOCK_MONOTONIC and makes the call with the time left
 * in this block, on the thread's stack at %rsp while it waits; a park sends the thread back to
 * the trampoline's round (lower-half/timed_waits.c), which makes the call again for the time
 * then left, after a restart too, as the application's clock says.  A call whose deadline has
 * passed is made with a zero timeout: it returns a signal or a semaphore that is there, or
 * EAGAIN, as it would have at its timeout. */
struct mana_timed_block {
  int64_t nr, rdi, rsi, rdx, r10, r8, r9; /* the application's call, its registers */
  uint64_t set;                           /* sigtimedwait's set, mana's signals taken out */
  int64_t app_deadline_ns;                /* on the application's CLOCK_MONOTONIC */
  int64_t left_sec, left_nsec;            /* the timeout the call is made with */
  int64_t pad;
};
#define MANA_TIMED_BLOCK_SET 56 /* offsetof(struct mana_timed_block, set) */
#define MANA_TIMED_BLOCK_LEFT 72
#define MANA_TIMED_BLOCK_SIZE 96

/* A timespec as nanoseconds (MANA_NEVER_NS for any time beyond it), or -1 when the kernel
 * would refuse it (EINVAL). */
static inline int64_t mana_timespec_ns(int64_t sec, int64_t nsec)
{
  if (sec < 0 || nsec < 0 || nsec >= MANA_NSEC_PER_SEC)
    return -1;
  return sec >= MANA_NEVER_NS / MANA_NSEC_PER_SEC ? MANA_NEVER_NS : sec * MANA_NSEC_PER_SEC + nsec;
}

/* The kernel's time for the application's time app_ns on a clock offset by `offset`: a time
 * already past is 0, "never" stays never. */
static inline int64_t mana_kernel_ns(int64_t app_ns, int64_t offset)
{
  if (app_ns >= MANA_NEVER_NS)
    return MANA_NEVER_NS;
  int64_t v = app_ns - offset;
  return v < 0 ? 0 : (v > MANA_NEVER_NS ? MANA_NEVER_NS : v);
}

#endif
