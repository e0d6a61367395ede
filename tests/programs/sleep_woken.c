/*
 * sleep_woken.c - a thread asleep for a minute (sleep(60)) is woken by a signal of the
 * program's own: SIGUSR1, which only that thread leaves unblocked and whose handler counts it
 * (installed without SA_RESTART).  sleep() must return at once with the time it had left, as
 * it does natively, also when the signal comes while a checkpoint holds the thread parked
 * (mana then sleeps out the rest of the sleep for it: lower-half/clock_calls.c).
 *
 * By default the main thread sends the signal (kill() to its own process) once the sleeper is
 * asleep.  With SLEEP_WOKEN_SIGNAL=outside it does not: each rank prints on stderr
 *   sleep_woken: rank R pid P sleeper T
 * and waits for someone else to send it (tests/integration/signal_in_park.sh sends it while a
 * checkpoint holds the ranks parked).  Checks, on every rank: the handler ran once, and the
 * sleep ended with more than 30 s left.
 * Ranks: any.  Arguments: none.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpitest.h"

#define SLEEP_S 60

static volatile sig_atomic_t woken;
static volatile pid_t sleeper_tid;
static unsigned left;

static void on_usr1(int sig)
{
  (void)sig;
  woken++;
}

static void *sleeper(void *arg)
{
  (void)arg;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  __atomic_store_n(&sleeper_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  left = sleep(SLEEP_S);
  return NULL;
}

/* 1 once the thread waits in nanosleep or clock_nanosleep (the first field of its
 * /proc/self/task/TID/syscall). */
static int asleep(pid_t tid)
{
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "re");
  long nr = -1;
  if (f) {
    if (fscanf(f, "%ld", &nr) != 1)
      nr = -1;
    fclose(f);
  }
  return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

int main(int argc, char **argv)
{
  /* Blocked before MPI_Init, so that the threads MPI starts (UCX's) inherit it too: only the
   * sleeper takes the signal a kill() sends to the process. */
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  MPI_Init(&argc, &argv);
  mt_begin("sleep_woken");
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  struct sigaction sa = {.sa_handler = on_usr1}; /* no SA_RESTART */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);

  pthread_t tid;
  if (pthread_create(&tid, NULL, sleeper, NULL) != 0)
    mt_die("pthread_create failed");
  pid_t t;
  while ((t = __atomic_load_n(&sleeper_tid, __ATOMIC_ACQUIRE)) == 0)
    usleep(1000);
  const char *from = getenv("SLEEP_WOKEN_SIGNAL");
  if (from && strcmp(from, "outside") == 0) {
    fprintf(stderr, "sleep_woken: rank %d pid %d sleeper %d\n", rank, (int)getpid(), (int)t);
    fflush(stderr);
  } else {
    while (!asleep(t))
      usleep(1000);
    kill(getpid(), SIGUSR1);
  }
  pthread_join(tid, NULL);

  mt_check_int("SIGUSR1 handled", woken, 1);
  mt_check_int("sleep(60) ended by SIGUSR1 with more than 30 s left", left > 30, 1);
  mt_allreduce_steps(1);
  return mt_end();
}
