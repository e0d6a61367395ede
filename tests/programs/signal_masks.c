/*
 * signal_masks.c - threads that block every signal and then allocate, the way helper threads of
 * real codes do (sigfillset + pthread_sigmask before a sigwait loop, glibc's own "block all"
 * around posix_spawn and raise).  Under mana every allocation that needs a new mapping is
 * served through a seccomp trap, i.e. a SIGSYS: it must still work.
 *
 *   usage: signal_masks [ITERS]   default 200
 *
 * Each iteration: a worker thread with every signal blocked allocates and fills 16 buffers of
 * 1 MiB (each one a fresh mmap in glibc), reallocs one to 8 MiB, frees them, and reports a
 * checksum; the main thread, also with every signal blocked during the iteration, does the
 * same on its own and then an Allreduce of both checksums.  Every 50 iterations a signal
 * handler installed with a full sa_mask allocates inside the handler (raise(SIGUSR1)).
 * Output depends only on the arguments and the rank count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>
#include <signal.h>

static uint64_t churn(uint64_t seed)
{
  char *buf[16];
  uint64_t sum = seed;
  for (int i = 0; i < 16; i++) {
    buf[i] = malloc(1 << 20);
    if (!buf[i])
      mt_die("malloc failed");
    memset(buf[i], (int)((seed + (uint64_t)i) & 0x7f), 1 << 20);
  }
  char *big = realloc(buf[3], 8 << 20);
  if (!big)
    mt_die("realloc failed");
  buf[3] = big;
  big[(8 << 20) - 1] = 5;
  for (int i = 0; i < 16; i++) {
    sum = mt_mix(sum ^ (uint64_t)(unsigned char)buf[i][4096 * i + 7]);
    free(buf[i]);
  }
  return sum;
}

static void *worker(void *arg)
{
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  uint64_t *io = arg;
  *io = churn(*io);
  return NULL;
}

static volatile uint64_t handler_sum;
static void on_usr1(int sig)
{
  (void)sig;
  handler_sum = churn(handler_sum + 1);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("signal_masks");
  const long iters = mt_arg("signal_masks", argc, argv, 1, 200);
  mt_on_signal(SIGUSR1, on_usr1, 1);

  uint64_t digest = 1469598103934665603ULL;
  for (long it = 0; it < iters; it++) {
    uint64_t w = (uint64_t)it * 7 + (uint64_t)mt_.rank;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &w) != 0)
      mt_die("pthread_create failed");
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uint64_t m = churn((uint64_t)it);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_join(t, NULL);
    if (it % 50 == 0)
      raise(SIGUSR1);
    uint64_t mine = w ^ m ^ handler_sum, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    digest = mt_mix(digest ^ sum);
  }
  mt_log("iterations %ld, digest %016llx", iters, (unsigned long long)digest);
  mt_check(handler_sum != 0, "the signal handler ran and allocated");
  return mt_end();
}
