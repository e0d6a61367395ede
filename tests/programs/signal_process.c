/*
 * signal_process.c - signals sent to the whole process while the program's own thread blocks
 * them: the kernel hands such a signal to any thread that does not block it, natively one of
 * MPICH's or UCX's threads.  The handler reads and writes thread-local data (errno and a
 * thread-local marker).  Under mana a lower-half thread runs on the lower half's thread
 * pointer, so a handler run there would read the marker from the wrong memory (and write
 * errno into the lower half's): lower-half threads must block the program's signals.
 *
 *   usage: signal_process [ITERS]   default 50
 *
 * How many times the handler runs depends on which threads exist (signals of one kind that
 * wait for the same thread merge), so only the marker is reported.  Ranks: any (2 in the
 * tests).
 */
#include "mpitest.h"
#include <errno.h>
#include <signal.h>
#include <unistd.h>

static __thread volatile int marker = 12345;
static volatile int runs, bad_marker;

static void on_usr1(int sig)
{
  (void)sig;
  int saved = errno;
  if (marker != 12345)
    bad_marker++;
  marker = 12345;
  errno = saved;
  runs++;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("signal_process");
  const long iters = mt_arg("signal_process", argc, argv, 1, 50);
  mt_on_signal(SIGUSR1, on_usr1, 0);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  for (long i = 0; i < iters; i++) {
    kill(getpid(), SIGUSR1);
    int x = (int)i, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (y != (int)i)
      bad_marker += 1000;
  }
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  mt_check(runs >= 1, "the handler ran");
  mt_check_int("handler runs that found their thread-local data wrong", bad_marker, 0);
  return mt_end();
}
