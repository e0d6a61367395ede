/*
 * sleep_woken.c - threads waiting for a minute woken by a signal of the program's own, whose
 * handler counts it (installed without SA_RESTART), each thread the only one that leaves its
 * signal unblocked:
 *   - a sleeper in sleep(60), woken by SIGUSR1: sleep() must return at once with the time it
 *     had left;
 *   - a reader in read() on a pipe nobody writes, woken by SIGUSR2: read() must fail with
 *     EINTR (not be made again: the handler lacks SA_RESTART);
 *   - a poller in poll() on another such pipe, no timeout, woken by SIGALRM: poll() must fail
 *     with EINTR;
 * as natively, also when the signals come while a checkpoint holds the threads parked (mana
 * then sleeps out the rest of a sleep for it, and makes again the calls its signals
 * interrupted: lower-half/clock_calls.c, interrupted_calls.c, interrupted_waits.c).
 *
 * By default the main thread sends the signals (kill() to its own process) once the threads
 * wait.  With SLEEP_WOKEN_SIGNAL=outside it does not: each rank prints on stderr
 *   sleep_woken: rank R pid P sleeper T reader U poller V
 * and waits for someone else to send them (tests/integration/signal_in_park.sh sends them
 * while a checkpoint holds the ranks parked).  Checks, on every rank: each handler ran once,
 * the sleep ended with more than 30 s left, the read and the poll failed with EINTR.
 * Ranks: any.  Arguments: none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpitest.h"

#define SLEEP_S 60

static volatile sig_atomic_t woken_usr1, woken_usr2, woken_alrm;
static volatile pid_t sleeper_tid, reader_tid, poller_tid;
static unsigned left;
static long read_rc, poll_rc;
static int read_errno, poll_errno;

static void on_signal(int sig)
{
  if (sig == SIGUSR1)
    woken_usr1++;
  else if (sig == SIGUSR2)
    woken_usr2++;
  else
    woken_alrm++;
}

/* The calling thread takes `sig` (every thread starts with both blocked) and says its id. */
static void take(int sig, volatile pid_t *tid)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  __atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
}

static void *sleeper(void *arg)
{
  (void)arg;
  take(SIGUSR1, &sleeper_tid);
  left = sleep(SLEEP_S);
  return NULL;
}

static void *reader(void *arg)
{
  int *fds = arg;
  char c;
  take(SIGUSR2, &reader_tid);
  read_rc = read(fds[0], &c, 1);
  read_errno = errno;
  return NULL;
}

static void *poller(void *arg)
{
  struct pollfd p = {((int *)arg)[0], POLLIN, 0};
  take(SIGALRM, &poller_tid);
  poll_rc = poll(&p, 1, -1);
  poll_errno = errno;
  return NULL;
}

static pid_t wait_tid(volatile pid_t *tid)
{
  pid_t t;
  while ((t = __atomic_load_n(tid, __ATOMIC_ACQUIRE)) == 0)
    usleep(1000);
  return t;
}

int main(int argc, char **argv)
{
  /* Blocked before MPI_Init, so that the threads MPI starts (UCX's) inherit it too: only the
   * thread that waits for a signal takes it when kill() sends it to the process. */
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR1);
  sigaddset(&both, SIGUSR2);
  sigaddset(&both, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &both, NULL);
  MPI_Init(&argc, &argv);
  mt_begin("sleep_woken");
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  sigaction(SIGALRM, &sa, NULL);

  int fds[2], pfds[2];
  pthread_t sleeping, reading, polling;
  if (pipe(fds) != 0 || pipe(pfds) != 0 || pthread_create(&sleeping, NULL, sleeper, NULL) != 0 ||
      pthread_create(&reading, NULL, reader, fds) != 0 ||
      pthread_create(&polling, NULL, poller, pfds) != 0)
    mt_die("pipe or pthread_create failed");
  pid_t s = wait_tid(&sleeper_tid), r = wait_tid(&reader_tid), p = wait_tid(&poller_tid);
  const char *from = getenv("SLEEP_WOKEN_SIGNAL");
  if (from && strcmp(from, "outside") == 0) {
    fprintf(stderr, "sleep_woken: rank %d pid %d sleeper %d reader %d poller %d\n", rank,
            (int)getpid(), (int)s, (int)r, (int)p);
    fflush(stderr);
  } else {
    long nr; /* under mana, the rest of a sleep a checkpoint interrupted is a ppoll */
    while ((nr = mt_waiting_in(s)) != SYS_nanosleep && nr != SYS_clock_nanosleep && nr != SYS_ppoll)
      usleep(1000);
    while (mt_waiting_in(r) != SYS_read)
      usleep(1000);
    while (mt_waiting_in(p) != SYS_poll)
      usleep(1000);
    kill(getpid(), SIGUSR1);
    kill(getpid(), SIGUSR2);
    kill(getpid(), SIGALRM);
  }
  pthread_join(sleeping, NULL);
  pthread_join(reading, NULL);
  pthread_join(polling, NULL);

  mt_check_int("SIGUSR1 handled", woken_usr1, 1);
  mt_check_int("SIGUSR2 handled", woken_usr2, 1);
  mt_check_int("SIGALRM handled", woken_alrm, 1);
  mt_check_int("sleep(60) ended by SIGUSR1 with more than 30 s left", left > 30, 1);
  mt_check_int("read() on an empty pipe ended by SIGUSR2 with EINTR",
               read_rc == -1 && read_errno == EINTR, 1);
  mt_check_int("poll() on an empty pipe ended by SIGALRM with EINTR",
               poll_rc == -1 && poll_errno == EINTR, 1);
  mt_allreduce_steps(1);
  return mt_end();
}
