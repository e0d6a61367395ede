/*
 * posix_timers.c - timers made with timer_create: a restarted process had none of them, so a
 * periodic one stopped signalling and timer_gettime on its id failed
 * (lower-half/state_posix_timers.c brings them back).
 *
 * Each rank makes a scratch timer and then two it keeps, and deletes the scratch one, so the
 * ids it keeps are not the first ones a fresh process would get:
 *   "tick": CLOCK_MONOTONIC, every 2 ms, SIGEV_SIGNAL with SIGRTMIN+2 and a value (checked in
 *           the SA_SIGINFO handler);
 *   "late": CLOCK_REALTIME, SIGEV_NONE, one shot in 3600 s, never expires during the test.
 * Every round: the tick timer fires again (waited for, at most 10 s), it still reports its
 * 2 ms interval, and the late one still has between 0 and 3600 s left, less than in the round
 * before; then an allreduce (the checkpoints fall there).
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <signal.h>
#include <time.h>

#include "mpitest.h"

#define TICK_SIGNAL (SIGRTMIN + 2)
#define TICK_VALUE 7411

static volatile sig_atomic_t ticks, wrong_values;

static void on_tick(int sig, siginfo_t *info, void *uc)
{
  (void)sig;
  (void)uc;
  if (info->si_code != SI_TIMER || info->si_value.sival_int != TICK_VALUE)
    wrong_values++;
  ticks++;
}

static long long ns_of(struct timespec t)
{
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static timer_t make_timer(clockid_t clock, int notify, int value)
{
  struct sigevent sev = {0};
  sev.sigev_notify = notify;
  sev.sigev_signo = TICK_SIGNAL;
  sev.sigev_value.sival_int = value;
  timer_t t;
  if (timer_create(clock, &sev, &t) != 0)
    mt_die("timer_create failed");
  return t;
}

/* 1 when the tick timer fired within 10 s of now; once it did not, no more waiting. */
static int tick_comes(void)
{
  static int dead;
  if (dead)
    return 0;
  int before = ticks;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    if (ticks != before)
      return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (ns_of(now) - ns_of(start) < 10LL * 1000000000LL);
  dead = 1;
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("posix_timers");
  mt_require_size(2);
  int rounds = (int)mt_arg("posix_timers", argc, argv, 1, 40);
  struct sigaction sa = {0};
  sa.sa_sigaction = on_tick;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(TICK_SIGNAL, &sa, NULL);

  timer_t scratch = make_timer(CLOCK_MONOTONIC, SIGEV_NONE, 0);
  timer_t tick = make_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TICK_VALUE);
  timer_t late = make_timer(CLOCK_REALTIME, SIGEV_NONE, 0);
  timer_delete(scratch);
  struct itimerspec every = {{0, 2000000}, {0, 2000000}}, once = {{0, 0}, {3600, 0}};
  if (timer_settime(tick, 0, &every, NULL) != 0 || timer_settime(late, 0, &once, NULL) != 0)
    mt_die("timer_settime failed");

  long long late_left = 3600LL * 1000000000LL + 1;
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    int bad = 0;
    struct itimerspec t, l;
    if (!tick_comes()) {
      mt_check(0, "round %d: the 2 ms timer did not fire for 10 s", r);
      bad++;
    }
    if (timer_gettime(tick, &t) != 0 || t.it_interval.tv_sec != 0 ||
        t.it_interval.tv_nsec != 2000000) {
      mt_check(0, "round %d: the 2 ms timer is gone or changed", r);
      bad++;
    }
    if (timer_gettime(late, &l) != 0 || ns_of(l.it_value) <= 0 || ns_of(l.it_value) > late_left) {
      mt_check(0, "round %d: the one-shot timer is gone or went back", r);
      bad++;
    } else {
      late_left = ns_of(l.it_value);
    }
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose timers were all kept", rounds - bad_rounds, rounds);
  mt_check_int("tick signals with another value", wrong_values, 0);
  timer_delete(tick);
  timer_delete(late);
  return mt_end();
}
