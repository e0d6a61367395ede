/*
 * clock_waits.c - a program that times itself with CLOCK_MONOTONIC and CLOCK_BOOTTIME (as
 * omp_get_wtime, Fortran's system_clock and C++'s steady_clock do) and waits until absolute
 * times on them (pthread_cond_clockwait, C++'s condition_variable::wait_for, clock_nanosleep
 * with TIMER_ABSTIME).  A restart on another node or after a reboot finds those clocks at
 * another origin; mana keeps them going from where the checkpoint left them.
 *
 * Every round each rank checks, against the readings of the round before and of the start:
 *   - no clock went backwards (CLOCK_MONOTONIC, _RAW, _COARSE, CLOCK_BOOTTIME);
 *   - CLOCK_MONOTONIC advanced as CLOCK_REALTIME did since the start, within 10 s (both count
 *     the time a restart waited: a jump of hours is what this catches);
 *   - the clock_gettime system call (not the vDSO) agrees with the vDSO within 1 s;
 *   - a condition-variable wait until now + 20 ms on CLOCK_MONOTONIC, clock_nanosleep to
 *     now + 20 ms (absolute) on CLOCK_MONOTONIC and CLOCK_BOOTTIME, a POSIX timer on
 *     CLOCK_MONOTONIC and a timerfd on CLOCK_BOOTTIME armed for now + 20 ms (absolute), each
 *     end after 15 ms to 60 s of CLOCK_REALTIME (too early: the kernel got the application's
 *     time; the upper bound keeps a wait for days from hanging the test; the timers are
 *     deleted before the round's Allreduce, where the checkpoints fall);
 * and a helper thread waits the whole run on a condition variable with a deadline an hour
 * away, woken at the end: a wait that times out early means its deadline moved.  Then an
 * Allreduce on MPI_COMM_WORLD (the checkpoints fall there).
 *
 * A second helper sleeps the whole run, 50 ms at a time by usleep, nanosleep and
 * clock_nanosleep to an absolute time in turn, so that checkpoints find it asleep: no sleep
 * may end early by CLOCK_MONOTONIC or with EINTR (a checkpoint parks threads with a signal).
 * And at the start, sleep(10) interrupted by the program's own signal after 1 s (a thread
 * sends SIGALRM to the main thread) must still end early, with 5 to 9 s left, as it does
 * natively; the signal's handler takes a backtrace(), which must reach the function that
 * called sleep (under mana, through the stand-in vDSO's sleep trampoline and its unwind
 * tables).
 * At the start it checks that ld.so knows the vDSO (linux-vdso.so.1) at AT_SYSINFO_EHDR:
 * otherwise libc reads every clock with a system call, ten times slower.
 * Ranks: any.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define NS 1000000000LL

static int64_t ns_of(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
  return (struct timespec){(time_t)(ns / NS), (long)(ns % NS)};
}

static int is_vdso(struct dl_phdr_info *info, size_t size, void *found)
{
  (void)size;
  if (strcmp(info->dlpi_name, "linux-vdso.so.1") == 0 &&
      info->dlpi_addr == getauxval(AT_SYSINFO_EHDR))
    *(int *)found = 1;
  return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int done;
static int helper_timed_out;

static void *helper(void *arg)
{
  (void)arg;
  struct timespec until = ts_of(ns_of(CLOCK_MONOTONIC) + 3600 * NS);
  pthread_mutex_lock(&lock);
  while (!done) {
    int rc = pthread_cond_clockwait(&wake, &lock, CLOCK_MONOTONIC, &until);
    if (rc == ETIMEDOUT) {
      helper_timed_out = 1;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

static long sleeps, short_sleeps, interrupted_sleeps;

static void *sleeper(void *arg)
{
  (void)arg;
  for (int kind = 0; !__atomic_load_n(&done, __ATOMIC_ACQUIRE); kind = (kind + 1) % 3) {
    int64_t start = ns_of(CLOCK_MONOTONIC);
    struct timespec gap = {0, 50 * 1000000L}, until = ts_of(start + 50 * 1000000LL);
    int rc = kind == 0   ? usleep(50000)
             : kind == 1 ? nanosleep(&gap, NULL)
                         : clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    int64_t took = ns_of(CLOCK_MONOTONIC) - start;
    sleeps++;
    if (rc != 0)
      interrupted_sleeps++;
    else if (took < 50 * 1000000LL)
      short_sleeps++;
  }
  return NULL;
}

static void *alarm_frames[64];
static volatile int alarm_depth;

static void on_alarm(int sig)
{
  (void)sig;
  alarm_depth = backtrace(alarm_frames, 64);
}

static unsigned __attribute__((noinline)) sleep_until_signalled(void)
{
  unsigned left = sleep(10);
  __asm__ volatile("" ::: "memory"); /* not a tail call: its frame stays on the stack */
  return left;
}

/* 1 when a frame of the alarm's backtrace is inside sleep_until_signalled. */
static int backtrace_reached_caller(void)
{
  const char *fn = (const char *)(uintptr_t)sleep_until_signalled;
  for (int i = 0; i < alarm_depth; i++)
    if ((const char *)alarm_frames[i] > fn && (const char *)alarm_frames[i] < fn + 256)
      return 1;
  return 0;
}

static void *alarm_main(void *main_thread)
{
  struct timespec second = {1, 0};
  nanosleep(&second, NULL);
  pthread_kill(*(pthread_t *)main_thread, SIGALRM);
  return NULL;
}

/* How long (ns of CLOCK_REALTIME) a wait until now + 20 ms on `id` took, by `how`. */
static int64_t timed_wait(int how, clockid_t id)
{
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  int64_t start = ns_of(CLOCK_REALTIME);
  struct timespec until = ts_of(ns_of(id) + 20 * 1000000LL);
  if (how == 0) {
    pthread_mutex_lock(&m);
    int rc;
    do
      rc = pthread_cond_clockwait(&c, &m, id, &until);
    while (rc == 0); /* a spurious wake-up */
    pthread_mutex_unlock(&m);
  } else if (how == 1) {
    while (clock_nanosleep(id, TIMER_ABSTIME, &until, NULL) == EINTR)
      ;
  } else if (how == 2) {
    timer_t t;
    struct sigevent ev = {.sigev_notify = SIGEV_NONE};
    struct itimerspec arm = {.it_value = until}, left;
    if (timer_create(id, &ev, &t) != 0 || timer_settime(t, TIMER_ABSTIME, &arm, NULL) != 0)
      mt_die("cannot arm a POSIX timer");
    struct timespec tick = {0, 1000000};
    do
      nanosleep(&tick, NULL);
    while (timer_gettime(t, &left) == 0 && (left.it_value.tv_sec || left.it_value.tv_nsec));
    timer_delete(t);
  } else {
    int fd = timerfd_create(id, TFD_CLOEXEC);
    struct itimerspec arm = {.it_value = until};
    uint64_t expiries;
    if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &arm, NULL) != 0)
      mt_die("cannot arm a timerfd");
    while (read(fd, &expiries, sizeof(expiries)) < 0 && errno == EINTR)
      ;
    close(fd);
  }
  return ns_of(CLOCK_REALTIME) - start;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("clock_waits");
  int rounds = (int)mt_arg("clock_waits", argc, argv, 1, 40);

  int vdso_known = 0;
  dl_iterate_phdr(is_vdso, &vdso_known);
  mt_check_int("ld.so knows the vDSO at AT_SYSINFO_EHDR", vdso_known, 1);

  backtrace(alarm_frames, 1); /* loads the unwinder now, not in the signal handler */
  struct sigaction alarm_action = {.sa_handler = on_alarm};
  sigaction(SIGALRM, &alarm_action, NULL);
  pthread_t self = pthread_self(), alarmer;
  if (pthread_create(&alarmer, NULL, alarm_main, &self) != 0)
    mt_die("pthread_create failed");
  unsigned left = sleep_until_signalled();
  pthread_join(alarmer, NULL);
  mt_check_int("sleep(10) ended by a signal after 1 s with 5 to 9 s left", left >= 5 && left <= 9,
               1);
  mt_check_int("the signal handler's backtrace reached the caller of sleep",
               backtrace_reached_caller(), 1);

  pthread_t tid, sleeper_tid;
  if (pthread_create(&tid, NULL, helper, NULL) != 0 ||
      pthread_create(&sleeper_tid, NULL, sleeper, NULL) != 0)
    mt_die("pthread_create failed");

  static const clockid_t ids[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE,
                                  CLOCK_BOOTTIME};
  static const char *const names[] = {"CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW",
                                      "CLOCK_MONOTONIC_COARSE", "CLOCK_BOOTTIME"};
  enum { N_IDS = sizeof(ids) / sizeof(ids[0]) };
  int64_t last[N_IDS];
  for (int i = 0; i < N_IDS; i++)
    last[i] = ns_of(ids[i]);
  int64_t mono0 = last[0], real0 = ns_of(CLOCK_REALTIME);

  long backwards = 0, jumped = 0, syscall_off = 0, early = 0, late = 0, bad_accepted = 0;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < N_IDS; i++) {
      int64_t now = ns_of(ids[i]);
      if (now < last[i]) {
        backwards++;
        mt_check(0, "round %d: %s went back by %.3f s", r, names[i], (double)(last[i] - now) / NS);
      }
      last[i] = now;
    }
    int64_t mono = ns_of(CLOCK_MONOTONIC), real = ns_of(CLOCK_REALTIME);
    int64_t skew = (mono - mono0) - (real - real0);
    if (skew > 10 * NS || skew < -10 * NS) {
      jumped++;
      mt_check(0, "round %d: CLOCK_MONOTONIC moved %.3f s apart from CLOCK_REALTIME", r,
               (double)skew / NS);
    }
    struct timespec sys;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &sys);
    int64_t diff = (int64_t)sys.tv_sec * NS + sys.tv_nsec - ns_of(CLOCK_MONOTONIC);
    if (diff > NS || diff < -NS) {
      syscall_off++;
      mt_check(0, "round %d: the clock_gettime system call is %.3f s from the vDSO's", r,
               (double)diff / NS);
    }
    static const struct {
      int how;
      clockid_t id;
      const char *what;
    } waits[] = {{0, CLOCK_MONOTONIC, "pthread_cond_clockwait on CLOCK_MONOTONIC"},
                 {1, CLOCK_MONOTONIC, "clock_nanosleep on CLOCK_MONOTONIC"},
                 {1, CLOCK_BOOTTIME, "clock_nanosleep on CLOCK_BOOTTIME"},
                 {2, CLOCK_MONOTONIC, "POSIX timer on CLOCK_MONOTONIC"},
                 {3, CLOCK_BOOTTIME, "timerfd on CLOCK_BOOTTIME"}};
    for (size_t w = 0; w < sizeof(waits) / sizeof(waits[0]); w++) {
      int64_t took = timed_wait(waits[w].how, waits[w].id);
      if (took < 15 * 1000000LL || took > 60 * NS) {
        took < 15 * 1000000LL ? early++ : late++;
        mt_check(0, "round %d: a %s until now + 20 ms took %.3f s", r, waits[w].what,
                 (double)took / NS);
      }
    }
    /* a bad absolute time stays bad, whatever the clock's offset: EINVAL as natively */
    timer_t bad_timer;
    struct sigevent none = {.sigev_notify = SIGEV_NONE};
    struct itimerspec bad = {.it_value = {0, 2000000000L}};
    if (timer_create(CLOCK_MONOTONIC, &none, &bad_timer) != 0)
      mt_die("timer_create failed");
    if (timer_settime(bad_timer, TIMER_ABSTIME, &bad, NULL) == 0 || errno != EINVAL)
      bad_accepted++;
    timer_delete(bad_timer);
    mt_allreduce_steps(1);
  }
  pthread_mutex_lock(&lock);
  __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(tid, NULL);
  pthread_join(sleeper_tid, NULL);

  mt_check_int("rounds", rounds, rounds);
  mt_check_int("readings that went backwards", backwards, 0);
  mt_check_int("rounds where CLOCK_MONOTONIC jumped", jumped, 0);
  mt_check_int("system call readings off the vDSO's", syscall_off, 0);
  mt_check_int("absolute waits that ended early", early, 0);
  mt_check_int("absolute waits that lasted a minute", late, 0);
  mt_check_int("the helper's hour-long wait timed out", helper_timed_out, 0);
  mt_check_int("absolute timer times with 2e9 ns accepted", bad_accepted, 0);
  mt_check_int("the sleeper slept", sleeps > 0, 1);
  mt_check_int("sleeps that ended early", short_sleeps, 0);
  mt_check_int("sleeps that ended with EINTR", interrupted_sleeps, 0);
  return mt_end();
}
