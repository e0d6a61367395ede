/*
 * ckpt_signal_app.c - an application with its own handler for the signal mana is told to
 * checkpoint on, and with that signal blocked on every thread, as runtimes that reserve
 * SIGUSR1 for themselves do.  Under mana_launch --ckpt-signal USR1 the signal must still
 * reach mana (no mask of the application blocks it), must never reach the application's
 * handler, and sigaction must still report the application's handler to it.
 *
 * Rounds of an Allreduce over a small computation; rank 0 prints "ckpt_signal_app: holding"
 * to stderr and every rank holds (still calling MPI_Allreduce, every millisecond) before
 * round HOLD until the file named by CKPT_SIGNAL_APP_RELEASE exists (no hold when unset).
 * Ranks: 2 or more.  Arguments: [ROUNDS] [HOLD].
 */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
  (void)sig;
  handled++;
}

static int released(const char *file)
{
  int here = !file || access(file, F_OK) == 0, all = 0;
  MPI_Allreduce(&here, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char **argv)
{
  /* After MPI_Init: MPICH installs a SIGUSR1 handler of its own there. */
  MPI_Init(&argc, &argv);
  struct sigaction sa = {.sa_handler = on_usr1}, now;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigprocmask(SIG_BLOCK, &block, NULL);
  mt_begin("ckpt_signal_app");
  int rounds = (int)mt_arg("ckpt_signal_app", argc, argv, 1, 40);
  int hold = (int)mt_arg("ckpt_signal_app", argc, argv, 2, 20);
  const char *release = getenv("CKPT_SIGNAL_APP_RELEASE");
  double acc = 0;
  for (int round = 0; round < rounds; round++) {
    if (round == hold && !released(release)) {
      if (mt_.rank == 0) {
        fprintf(stderr, "ckpt_signal_app: holding\n");
        fflush(stderr);
      }
      while (!released(release))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    double x = 0;
    for (int i = 1; i <= 20000; i++)
      x += 1.0 / ((double)i * (i + round + mt_.rank));
    double sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    acc += sum;
  }
  sigset_t mask;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  sigaction(SIGUSR1, NULL, &now);
  mt_check_int("SIGUSR1 still blocked as the application asked", sigismember(&mask, SIGUSR1), 1);
  mt_check_int("sigaction reports the application's handler", now.sa_handler == on_usr1, 1);
  mt_check_int("the application's handler ran", handled, 0);
  mt_append("rank %d: %.12f\n", mt_.rank, acc);
  return mt_end();
}
