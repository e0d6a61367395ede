/*
 * signal_tls.c - an application's signal handler that uses thread-local storage, run while
 * the thread waits inside MPI calls, as a profiler's SIGPROF or an alarm's handler is.
 *
 * A second thread sends the main thread SIGALRM every 400 us through the whole run (to that
 * thread: a process-directed signal may go to one of MPI's own threads, natively too).  Rounds
 * alternate: one rank waits in MPI_Recv while the other computes for about 10 ms and then
 * sends, so that half the signals reach the main thread inside MPI.  The handler
 * (signal_tls_handler.c) checks that it runs on the main thread's own thread-local storage and
 * errno.
 *
 * Also checked: sigaction reports the handler the application installed, with its flags, and
 * a handler installed with SA_RESETHAND runs once and is then reported as SIG_DFL.
 * Built as signal_tls_early (SIGNAL_TLS_EARLY), the handler is installed by the constructor of
 * a library that runs before MPI's (signal_tls_handler.h), not by main.
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"
#include "signal_tls_handler.h"

static volatile sig_atomic_t once_ran;

static void on_usr2_once(int sig)
{
  (void)sig;
  once_ran++;
}

static pthread_t main_thread;
static volatile int stop_ticks;

static void *tick(void *arg)
{
  (void)arg;
  while (!stop_ticks) {
    nanosleep(&(struct timespec){0, 400 * 1000}, NULL);
    pthread_kill(main_thread, SIGALRM);
  }
  return NULL;
}

static double compute_ms(double ms)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double x = 0;
  long i = 1;
  do {
    for (int k = 0; k < 1000; k++, i++)
      x += 1.0 / ((double)i * (double)i);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
  return x > 0 ? 1.0 : 0.0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("signal_tls");
  mt_require_size(2);
  int rounds = (int)mt_arg("signal_tls", argc, argv, 1, 60);
#ifndef SIGNAL_TLS_EARLY
  sig_tls_arm();
  sig_tls_install();
#endif
  struct sigaction now;
  sigaction(SIGALRM, NULL, &now);
  mt_check_int("sigaction reports the application's SIGALRM handler",
               now.sa_handler == sig_tls_handler, 1);
  mt_check_int("with its SA_RESTART", (now.sa_flags & SA_RESTART) != 0, 1);
  mt_check_int("and its mask", sigismember(&now.sa_mask, SIGUSR1), 1);

  main_thread = pthread_self();
  sigset_t alrm, before;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  pthread_t ticker;
  pthread_sigmask(SIG_BLOCK, &alrm, &before); /* the ticking thread starts with it blocked */
  if (pthread_create(&ticker, NULL, tick, NULL) != 0)
    mt_die("cannot start the ticking thread");
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  double work = 0;
  for (int round = 0; round < rounds; round++) {
    int waiter = round % 2, value = round;
    if (mt_.rank == waiter) {
      sig_tls_in_recv(1);
      MPI_Recv(&value, 1, MPI_INT, 1 - waiter, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      sig_tls_in_recv(0);
    } else {
      work += compute_ms(10);
      MPI_Send(&value, 1, MPI_INT, waiter, round, MPI_COMM_WORLD);
    }
    mt_check(value == round, "round %d's message", round);
  }
  stop_ticks = 1;
  pthread_join(ticker, NULL);
  MPI_Barrier(MPI_COMM_WORLD);

  /* A one-shot handler: reported as SIG_DFL once it ran, as the kernel resets it. */
  struct sigaction once = {.sa_handler = on_usr2_once, .sa_flags = SA_RESETHAND};
  sigemptyset(&once.sa_mask);
  sigaction(SIGUSR2, &once, NULL);
  raise(SIGUSR2);
  sigaction(SIGUSR2, NULL, &now);
  mt_check_int("the SA_RESETHAND handler ran", once_ran, 1);
  mt_check_int("and is reported as SIG_DFL after", now.sa_handler == SIG_DFL, 1);

  struct sig_tls_counts c;
  sig_tls_get_counts(&c);
  mt_check_int("handlers that saw another thread's storage", c.foreign, 0);
  mt_check_int("handlers whose write(2) left errno unset", c.errno_not_set, 0);
  mt_check_int("the handler ran at least 20 times", c.handled >= 20, 1);
  mt_check_int("at least 5 of them inside MPI_Recv", c.ran_in_recv >= 5, 1);
  mt_append("rank %d: work %.0f\n", mt_.rank, work);
  return mt_end();
}
