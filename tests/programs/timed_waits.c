/*
 * timed_waits.c - threads waiting in the two calls that take a relative timeout by a pointer
 * the kernel does not write the time left back into, and that any signal handler ends with
 * EINTR, SA_RESTART or not:
 *   - sigtimedwait() for SIGRTMIN+2 and semtimedop() decrementing a System V semaphore, each
 *     with 600 s, for the signal (with a value) and the increment the main thread gives at the
 *     end: they must return that signal with that value, and 0;
 *   - sigtimedwait() for SIGRTMIN+3 and semtimedop() on a second semaphore, each with 300 ms
 *     and nothing to wait for, round after round until the main thread says stop: every round
 *     must end with EAGAIN, never EINTR, after 300 ms or more of CLOCK_MONOTONIC, and each must
 *     end at least two rounds within 120 s of the main thread's last Allreduce;
 *   - first, on the main thread, both calls where they return at once (a zero timeout with
 *     and without a signal or a count there, a timeout the kernel refuses, a bad pointer or
 *     set id): the same results as natively.
 * Natively nothing else ends them.  Under mana a checkpoint's park signal interrupts each of
 * them: they must neither fail for it nor start their timeout again in full (in a park storm
 * every 2 ms a 300 ms round would then never end), also after a restart
 * (lower-half/timed_waits.c).
 *
 * Meanwhile the main thread makes ROUNDS Allreduces 25 ms apart, where the tests' checkpoints
 * fall, so that they find the four threads waiting.  Ranks: any.  Arguments: [ROUNDS]
 * (default 40).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define SHORT_MS 300

enum { SIGNAL_LONG, SEM_LONG, SIGNAL_SHORT, SEM_SHORT, NWAITERS };
static const char *const names[NWAITERS] = {"sigtimedwait with 600 s", "semtimedop with 600 s",
                                            "sigtimedwait with 300 ms", "semtimedop with 300 ms"};

struct waiter {
  int kind;
  volatile pid_t tid;
  long rc;
  int err, value;
  /* the rounds of 300 ms: ended by their timeout, ended otherwise, the last errno of those,
   * and the shortest one's length */
  volatile int rounds;
  volatile int bad;
  int bad_errno;
  long long shortest_ms;
  pthread_t thread;
};
static struct waiter waiters[NWAITERS];
static int sem_id;
static volatile int stop;

static long long monotonic_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One call of waiter w's kind: the call's result, its errno in *err. */
static long wait_once(struct waiter *w, int *err)
{
  int is_long = w->kind == SIGNAL_LONG || w->kind == SEM_LONG;
  struct timespec ts = {is_long ? 600 : 0, is_long ? 0 : SHORT_MS * 1000000L};
  long rc;
  if (w->kind == SIGNAL_LONG || w->kind == SIGNAL_SHORT) {
    sigset_t one;
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    sigemptyset(&one);
    sigaddset(&one, w->kind == SIGNAL_LONG ? SIGRTMIN + 2 : SIGRTMIN + 3);
    rc = sigtimedwait(&one, &info, &ts);
    w->value = info.si_value.sival_int;
  } else {
    struct sembuf down = {(unsigned short)(w->kind == SEM_LONG ? 0 : 1), -1, 0};
    rc = semtimedop(sem_id, &down, 1, &ts);
  }
  *err = rc == -1 ? errno : 0;
  return rc;
}

static void *wait_in_call(void *arg)
{
  struct waiter *w = arg;
  __atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  if (w->kind == SIGNAL_LONG || w->kind == SEM_LONG) {
    w->rc = wait_once(w, &w->err);
    return NULL;
  }
  w->shortest_ms = -1;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    int err;
    long long t0 = monotonic_ms();
    long rc = wait_once(w, &err);
    long long took = monotonic_ms() - t0;
    if (w->shortest_ms < 0 || took < w->shortest_ms)
      w->shortest_ms = took;
    if (rc == -1 && err == EAGAIN && took >= SHORT_MS) {
      __atomic_store_n(&w->rounds, w->rounds + 1, __ATOMIC_RELEASE);
    } else {
      w->bad_errno = err;
      __atomic_store_n(&w->bad, w->bad + 1, __ATOMIC_RELEASE);
    }
  }
  return NULL;
}

/* One call's result as "rc errno" for the edge cases, where the kernel answers at once. */
static void check_at_once(const char *what, long rc, int err, long want_rc, int want_err)
{
  if (rc == want_rc && (rc != -1 || err == want_err))
    mt_check(1, "%s", what);
  else
    mt_check(0, "%s: returned %ld, errno %d (expected %ld, errno %d)", what, rc, err, want_rc,
             want_err);
}

/* The calls that return at once, which must answer as natively: a zero timeout (with and
 * without something there), a timeout the kernel refuses, a bad pointer, a bad set id. */
static void edge_cases(void)
{
  sigset_t four;
  sigemptyset(&four);
  sigaddset(&four, SIGRTMIN + 4);
  pthread_sigmask(SIG_BLOCK, &four, NULL);
  struct timespec zero = {0, 0}, negative = {-1, 0}, too_many_ns = {0, 1000000000L};
  long rc;
  rc = sigtimedwait(&four, NULL, &zero);
  check_at_once("sigtimedwait with 0 s and nothing pending: EAGAIN", rc, errno, -1, EAGAIN);
  raise(SIGRTMIN + 4);
  rc = sigtimedwait(&four, NULL, &zero);
  check_at_once("sigtimedwait with 0 s and its signal pending: the signal", rc, errno, SIGRTMIN + 4,
                0);
  rc = sigtimedwait(&four, NULL, &negative);
  check_at_once("sigtimedwait with -1 s: EINVAL", rc, errno, -1, EINVAL);
  rc = sigtimedwait(&four, NULL, &too_many_ns);
  check_at_once("sigtimedwait with 10^9 ns: EINVAL", rc, errno, -1, EINVAL);
  rc = sigtimedwait(&four, NULL, (const struct timespec *)8);
  check_at_once("sigtimedwait with a bad timeout pointer: EFAULT", rc, errno, -1, EFAULT);
  struct sembuf down = {1, -1, 0}, up = {1, 1, 0};
  rc = semtimedop(sem_id, &down, 1, &zero);
  check_at_once("semtimedop with 0 s on a semaphore at 0: EAGAIN", rc, errno, -1, EAGAIN);
  if (semop(sem_id, &up, 1) != 0)
    mt_die("semop failed");
  rc = semtimedop(sem_id, &down, 1, &zero);
  check_at_once("semtimedop with 0 s on a semaphore at 1: 0", rc, errno, 0, 0);
  rc = semtimedop(sem_id, &down, 1, &negative);
  check_at_once("semtimedop with -1 s: EINVAL", rc, errno, -1, EINVAL);
  rc = semtimedop(-1, &down, 1, &zero);
  check_at_once("semtimedop on set -1: EINVAL", rc, errno, -1, EINVAL);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("timed_waits");
  long rounds = mt_arg("timed_waits", argc, argv, 1, 40);

  /* the signals the threads wait for, blocked everywhere (the threads inherit the mask) */
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGRTMIN + 2);
  sigaddset(&waited, SIGRTMIN + 3);
  pthread_sigmask(SIG_BLOCK, &waited, NULL);
  sem_id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
  if (sem_id < 0)
    mt_die("semget failed");
  edge_cases();
  for (int k = 0; k < NWAITERS; k++) {
    waiters[k].kind = k;
    if (pthread_create(&waiters[k].thread, NULL, wait_in_call, &waiters[k]) != 0)
      mt_die("pthread_create failed");
  }
  for (int k = SIGNAL_LONG; k <= SEM_LONG; k++) {
    pid_t tid;
    long call = k == SIGNAL_LONG ? SYS_rt_sigtimedwait : SYS_semtimedop;
    while ((tid = __atomic_load_n(&waiters[k].tid, __ATOMIC_ACQUIRE)) == 0)
      mt_pause_ms(1);
    while (mt_waiting_in(tid) != call)
      mt_pause_ms(1);
  }

  for (long i = 0; i < rounds; i++) {
    long in = i, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    mt_pause_ms(25);
  }

  /* A condition, not a time: two rounds of 300 ms each (or one that went wrong), however slow
   * the machine. */
  long long deadline = monotonic_ms() + 120000;
  int ended = 0;
  while (!ended && monotonic_ms() < deadline) {
    ended = 1;
    for (int k = SIGNAL_SHORT; k <= SEM_SHORT; k++)
      ended &= __atomic_load_n(&waiters[k].rounds, __ATOMIC_ACQUIRE) >= 2 ||
               __atomic_load_n(&waiters[k].bad, __ATOMIC_ACQUIRE) > 0;
    if (!ended)
      mt_pause_ms(5);
  }

  /* fails (ESRCH) if the thread is gone already: its check below says why */
  pthread_sigqueue(waiters[SIGNAL_LONG].thread, SIGRTMIN + 2, (union sigval){.sival_int = 42});
  struct sembuf up = {0, 1, 0};
  if (semop(sem_id, &up, 1) != 0)
    mt_die("semop failed");
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);

  char what[128];
  for (int k = 0; k < NWAITERS; k++) {
    struct waiter *w = &waiters[k];
    if (k >= SIGNAL_SHORT && !ended)
      continue; /* a round that never ends: said below, and the thread is left to the exit */
    pthread_join(w->thread, NULL);
  }
  struct waiter *s = &waiters[SIGNAL_LONG];
  snprintf(what, sizeof(what), "%s returned SIGRTMIN+2 with the value 42", names[SIGNAL_LONG]);
  if (s->rc == SIGRTMIN + 2 && s->value == 42)
    mt_check(1, "%s", what);
  else
    mt_check(0, "%s: returned %ld, value %d, errno %d", what, s->rc, s->value, s->err);
  snprintf(what, sizeof(what), "%s returned 0", names[SEM_LONG]);
  if (waiters[SEM_LONG].rc == 0)
    mt_check(1, "%s", what);
  else
    mt_check(0, "%s: returned %ld, errno %d", what, waiters[SEM_LONG].rc, waiters[SEM_LONG].err);
  for (int k = SIGNAL_SHORT; k <= SEM_SHORT; k++) {
    struct waiter *w = &waiters[k];
    snprintf(what, sizeof(what), "%s: at least 2 rounds ended by their timeout", names[k]);
    if (w->rounds >= 2)
      mt_check(1, "%s", what);
    else
      mt_check(0, "%s: %d (in 120 s at most)", what, w->rounds);
    snprintf(what, sizeof(what), "%s: every round EAGAIN after 300 ms or more", names[k]);
    if (!w->bad)
      mt_check(1, "%s", what);
    else
      mt_check(0, "%s: %d rounds not (last errno %d, shortest %lld ms)", what, w->bad, w->bad_errno,
               w->shortest_ms);
  }
  semctl(sem_id, 0, IPC_RMID);
  return mt_end();
}
