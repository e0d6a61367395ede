/* Unit tests of the waits a park makes again (lower-half/interrupted_waits.c): a thread blocked
 * in poll() (or sigtimedwait, or a futex wait) is noted from /proc as the checkpoint thread
 * does, then signalled; the handler, standing in for the park signal's, finds the call in its
 * frame and settles it.  What the call then returns to the thread shows whether it was made
 * again or failed with EINTR. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../lower-half/interrupted_waits.h"
#include "../programs/waiting_in.h"

uint64_t mana_app_cannot_block; /* mana/signals.h: the lower half defines it */

/* clock_calls.c: where the stand-in's trampolines are; none in this process */
void mana_clock_reissue_range(uint64_t *start, uint64_t *end)
{
  *start = *end = 0;
}

enum call { POLL, RAW_POLL, SIGTIMEDWAIT, FUTEX_RELATIVE, FUTEX_ABSOLUTE };
static enum call call;
static int fds[2];
static int timeout_ms;
static uint32_t futex_word;
static volatile pid_t waiter_tid;
static volatile long found_nr = -1;
static volatile int handled, usr2_handled, send_usr2;
static int rc, err;

/* Stands in for the park signal's handler: the lookup before parking, the settling after. */
static void on_park(int sig, siginfo_t *info, void *uc)
{
  (void)sig, (void)info;
  long nr = mana_interrupted_wait_of(uc);
  if (send_usr2) /* a signal of the program's that comes while the thread is parked */
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR2);
  mana_interrupted_wait_settle(uc, nr);
  found_nr = nr;
  __atomic_store_n(&handled, 1, __ATOMIC_RELEASE);
}

static void on_usr2(int sig)
{
  (void)sig;
  usr2_handled++;
}

#define EVENT_SIGNAL (SIGRTMIN + 3)

/* Raw calls for all but poll: glibc's wrappers would retry on EINTR or hide the call. */
static void *waiter(void *arg)
{
  (void)arg;
  struct pollfd p = {fds[0], POLLIN, 0};
  struct timespec ts = {timeout_ms / 1000, 0};
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, EVENT_SIGNAL);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  __atomic_store_n(&waiter_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  switch (call) {
  case POLL:
    rc = poll(&p, 1, timeout_ms);
    break;
  case RAW_POLL: /* glibc's syscall() loads the number from a register, not as a constant */
    rc = (int)syscall(SYS_poll, &p, 1, timeout_ms);
    break;
  case SIGTIMEDWAIT:
    rc = (int)syscall(SYS_rt_sigtimedwait, &one, NULL, timeout_ms < 0 ? NULL : &ts, 8);
    break;
  case FUTEX_RELATIVE:
    rc = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts, NULL, 0);
    break;
  case FUTEX_ABSOLUTE:
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    rc = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts, NULL,
                      FUTEX_BITSET_MATCH_ANY);
    break;
  }
  err = errno;
  return NULL;
}

static const long call_nr[] = {SYS_poll, SYS_poll, SYS_rt_sigtimedwait, SYS_futex, SYS_futex};

/* What ends the wait: the pipe readable, the signal, the word changed and woken. */
static void give_event(pid_t tid)
{
  switch (call) {
  case POLL:
  case RAW_POLL:
    cr_assert_eq(write(fds[1], "x", 1), 1);
    break;
  case SIGTIMEDWAIT: /* the thread may be gone already (ESRCH): the call failed */
    syscall(SYS_tgkill, getpid(), tid, EVENT_SIGNAL);
    break;
  case FUTEX_RELATIVE:
  case FUTEX_ABSOLUTE:
    __atomic_store_n(&futex_word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &futex_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
    break;
  }
}

/* A waiter in `which` with `timeout` ms (-1: none), noted first when `note`, signalled, then
 * given its event. */
static void run_call(enum call which, int timeout, int note)
{
  call = which;
  futex_word = 0;
  struct sigaction sa = {0};
  sa.sa_sigaction = on_park;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  struct sigaction sa2 = {0};
  sa2.sa_handler = on_usr2; /* no SA_RESTART, as if that mattered for poll */
  cr_assert_eq(sigaction(SIGUSR2, &sa2, NULL), 0);
  cr_assert_eq(pipe(fds), 0);
  timeout_ms = timeout;
  waiter_tid = 0;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, waiter, NULL), 0);
  pid_t tid;
  while ((tid = __atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE)) == 0 ||
         mt_waiting_in(tid) != call_nr[call])
    usleep(1000);
  mana_interrupted_waits_reset();
  if (note)
    mana_interrupted_waits_note(tid);
  cr_assert_eq(syscall(SYS_tgkill, getpid(), tid, SIGUSR1), 0);
  while (!__atomic_load_n(&handled, __ATOMIC_ACQUIRE))
    usleep(1000);
  /* made again, the call returns the event; failed, it returned -1 already, whenever it comes */
  give_event(tid);
  pthread_join(t, NULL);
}

static void run(int timeout, int note)
{
  run_call(POLL, timeout, note);
}

Test(interrupted_waits, a_noted_poll_without_timeout_is_made_again)
{
  run(-1, 1);
  cr_expect_eq(found_nr, SYS_poll, "the handler found call %ld", found_nr);
  cr_expect_eq(rc, 1, "poll returned %d (errno %d) instead of the event", rc, err);
}

/* Not noted (the thread was on its way into the call when the checkpoint thread looked):
 * glibc's wrapper loads the number as a constant just before the syscall instruction. */
Test(interrupted_waits, an_unnoted_poll_is_found_from_its_code_and_made_again)
{
  run(-1, 0);
  cr_expect_eq(found_nr, SYS_poll, "the handler found call %ld", found_nr);
  cr_expect_eq(rc, 1, "poll returned %d (errno %d) instead of the event", rc, err);
}

Test(interrupted_waits, an_unnoted_poll_from_unknown_code_fails_with_eintr_as_before)
{
  run_call(RAW_POLL, -1, 0);
  cr_expect_eq(found_nr, 0);
  cr_expect(rc == -1 && err == EINTR, "poll returned %d (errno %d)", rc, err);
}

Test(interrupted_waits, a_signal_of_the_program_during_the_park_still_ends_the_poll)
{
  send_usr2 = 1;
  run(-1, 1);
  cr_expect_eq(found_nr, SYS_poll);
  cr_expect(rc == -1 && err == EINTR, "poll returned %d (errno %d)", rc, err);
  cr_expect_eq(usr2_handled, 1);
}

Test(interrupted_waits, a_poll_with_a_timeout_by_value_keeps_its_eintr)
{
  run(600000, 1); /* made again it would wait the 600 s again in full */
  cr_expect_eq(found_nr, SYS_poll);
  cr_expect(rc == -1 && err == EINTR, "poll returned %d (errno %d)", rc, err);
}

Test(interrupted_waits, a_noted_sigwaitinfo_is_made_again)
{
  run_call(SIGTIMEDWAIT, -1, 1);
  cr_expect_eq(found_nr, SYS_rt_sigtimedwait);
  cr_expect_eq(rc, EVENT_SIGNAL, "sigtimedwait returned %d (errno %d)", rc, err);
}

Test(interrupted_waits, a_sigtimedwait_with_a_timeout_keeps_its_eintr)
{
  run_call(SIGTIMEDWAIT, 600000, 1); /* the kernel does not write the time left back */
  cr_expect_eq(found_nr, SYS_rt_sigtimedwait);
  cr_expect(rc == -1 && err == EINTR, "sigtimedwait returned %d (errno %d)", rc, err);
}

Test(interrupted_waits, a_futex_wait_with_an_absolute_deadline_is_made_again)
{
  run_call(FUTEX_ABSOLUTE, 600000, 1);
  cr_expect_eq(found_nr, SYS_futex);
  /* 0: woken; EAGAIN: made again after the word changed, which glibc takes the same way */
  cr_expect(rc == 0 || (rc == -1 && err == EAGAIN), "futex returned %d (errno %d)", rc, err);
}

Test(interrupted_waits, a_futex_wait_with_a_relative_timeout_keeps_its_eintr)
{
  run_call(FUTEX_RELATIVE, 600000, 1);
  cr_expect_eq(found_nr, SYS_futex);
  cr_expect(rc == -1 && err == EINTR, "futex returned %d (errno %d)", rc, err);
}
