/*
 * ckpt_signal_app.c - an application with its own handler for the signal mana is told to
 * checkpoint on, and with that signal blocked on every thread, as runtimes that reserve
 * SIGUSR1 for themselves do.  Under mana_launch --ckpt-signal USR1 the signal must still
 * reach mana (whatever the application's masks say), must never reach the application's
 * handler, and sigaction must still report the application's handler to it.
 *
 * The signal comes from outside while the main thread waits in a poll without a timeout, which
 * any handler run on that thread would end with EINTR; and a program the application runs
 * must start with the mask the application has, not with the signal blocked for mana.
 *
 * Rounds of an Allreduce over a small computation.  Before round HOLD, rank 0 prints
 * "ckpt_signal_app: holding" to stderr and every rank's main thread waits in poll for a pipe
 * that a second thread writes once the file named by CKPT_SIGNAL_APP_RELEASE exists; then the
 * ranks agree (MPI_Allreduce) that all saw it.  No hold when unset.  Before it blocks
 * SIGUSR1 and at the end, the program prints the blocked signals of a program it runs
 * (popen, exec): at the end, after a restart, those of the restarted run.
 * Ranks: 2 or more.  Arguments: [ROUNDS] [HOLD].
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

static int hold_pipe[2];

/* Writes the pipe once the file exists; no MPI (the program is not multithreaded for MPI). */
static void *watch_release(void *file)
{
  while (access(file, F_OK) != 0)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (write(hold_pipe[1], "r", 1) != 1)
    mt_die("cannot write the hold pipe");
  return NULL;
}

/* The main thread waits without a timeout: a checkpoint parks it there and makes the call
 * again; only a signal handler run on this thread would end it early. */
static int hold_until(const char *file)
{
  pthread_t watcher;
  int interrupted = 0;
  if (pipe(hold_pipe) != 0 || pthread_create(&watcher, NULL, watch_release, (void *)file) != 0)
    mt_die("cannot start the hold's watcher");
  struct pollfd pfd = {.fd = hold_pipe[0], .events = POLLIN};
  for (;;) {
    int n = poll(&pfd, 1, -1);
    if (n == 1)
      break;
    if (n < 0 && errno == EINTR)
      interrupted++;
    else
      mt_die("the hold's poll failed");
  }
  pthread_join(watcher, NULL);
  return interrupted;
}

/* The blocked signals of a program the application runs, as that program reads them. */
static void child_mask(void)
{
  char line[128] = "no SigBlk line\n";
  /* exec: a child the shell forks for the command starts with an empty mask */
  FILE *p = popen("exec grep '^SigBlk' /proc/self/status", "r");
  if (!p || !fgets(line, sizeof(line), p))
    mt_die("cannot read a child's mask");
  pclose(p);
  mt_append("rank %d: a child's %s", mt_.rank, line);
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
  mt_begin("ckpt_signal_app");
  child_mask();
  struct sigaction sa = {.sa_handler = on_usr1}, now;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigprocmask(SIG_BLOCK, &block, NULL);
  int rounds = (int)mt_arg("ckpt_signal_app", argc, argv, 1, 40);
  int hold = (int)mt_arg("ckpt_signal_app", argc, argv, 2, 20);
  const char *release = getenv("CKPT_SIGNAL_APP_RELEASE");
  double acc = 0;
  int interrupted = 0;
  for (int round = 0; round < rounds; round++) {
    if (round == hold && !released(release)) {
      if (mt_.rank == 0) {
        fprintf(stderr, "ckpt_signal_app: holding\n");
        fflush(stderr);
      }
      interrupted = hold_until(release);
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
  mt_check_int("the hold's poll ended by a signal", interrupted, 0);
  child_mask();
  mt_append("rank %d: %.12f\n", mt_.rank, acc);
  return mt_end();
}
