/*
 * signal_pending.c - signals that are pending while the program calls MPI: each iteration
 * blocks SIGUSR2 and SIGRTMIN+2, sends both to itself (pthread_kill), makes an MPI_Allreduce
 * with them pending, and unblocks them, which runs their handlers.  A worker thread does the
 * same with SIGUSR1 at its own pace, without MPI.  A checkpoint taken during the Allreduce
 * finds the signals pending; after a restart every handler must still run exactly once per
 * signal sent (as glibc's raise() needs, which blocks every signal around its kill).
 *
 *   usage: signal_pending [ITERS]   default 300
 *
 * Output depends only on the arguments and the rank count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>
#include <signal.h>

static volatile long usr2_runs, rt_runs, usr1_runs;
static volatile int worker_stop;

static void on_usr2(int sig)
{
  (void)sig;
  usr2_runs++;
}
static void on_rt(int sig)
{
  (void)sig;
  rt_runs++;
}
static void on_usr1(int sig)
{
  (void)sig;
  usr1_runs++;
}

static long worker_sent;
static void *worker(void *arg)
{
  (void)arg;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  while (!__atomic_load_n(&worker_stop, __ATOMIC_ACQUIRE)) {
    pthread_sigmask(SIG_BLOCK, &one, NULL);
    pthread_kill(pthread_self(), SIGUSR1);
    worker_sent++;
    for (volatile int spin = 0; spin < 20000; spin++) {
    }
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("signal_pending");
  const long iters = mt_arg("signal_pending", argc, argv, 1, 300);
  const int rt = SIGRTMIN + 2;
  mt_on_signal(SIGUSR2, on_usr2, 0);
  mt_on_signal(rt, on_rt, 0);
  mt_on_signal(SIGUSR1, on_usr1, 0);
  pthread_t w;
  if (pthread_create(&w, NULL, worker, NULL) != 0)
    mt_die("pthread_create failed");

  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR2);
  sigaddset(&both, rt);
  uint64_t digest = 1469598103934665603ULL;
  long lost = 0;
  for (long it = 0; it < iters; it++) {
    pthread_sigmask(SIG_BLOCK, &both, NULL);
    const long before = usr2_runs + rt_runs;
    pthread_kill(pthread_self(), SIGUSR2);
    pthread_kill(pthread_self(), rt);
    uint64_t mine = (uint64_t)it * 13 + (uint64_t)mt_.rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    digest = mt_mix(digest ^ sum);
    if (usr2_runs + rt_runs != before)
      lost++; /* ran while blocked */
    pthread_sigmask(SIG_UNBLOCK, &both, NULL);
  }
  __atomic_store_n(&worker_stop, 1, __ATOMIC_RELEASE);
  pthread_join(w, NULL);
  mt_log("iterations %ld, digest %016llx", iters, (unsigned long long)digest);
  mt_check_int("SIGUSR2 handler runs", usr2_runs, iters);
  mt_check_int("SIGRTMIN+2 handler runs", rt_runs, iters);
  mt_check(usr1_runs == worker_sent, "the worker's SIGUSR1 handler ran once per signal");
  mt_check_int("handlers that ran while their signal was blocked", lost, 0);
  return mt_end();
}
