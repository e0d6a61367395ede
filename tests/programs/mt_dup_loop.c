/*
 * mt_dup_loop.c - MPI_THREAD_MULTIPLE with several threads that create and free communicators
 * all the time, each from its own parent (as MPICH's threads/comm/dup_leak_test): at almost
 * every moment some thread of a rank is inside MPI_Comm_dup.
 *
 *   usage: mt_dup_loop [ITERS [THREADS]]   defaults 2000 4 (at most 16 threads)
 *
 * Each thread, ITERS times: MPI_Comm_dup of its parent, an MPI_Allreduce on the copy, and
 * MPI_Comm_free of it.  Output depends only on the arguments and the rank count.
 * Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>

#define MAX_THREADS 16

static long iters;
static MPI_Comm parents[MAX_THREADS];
static uint64_t digest[MAX_THREADS];
static long bad[MAX_THREADS];

static void *run(void *arg)
{
  const int t = (int)(long)arg;
  for (long i = 0; i < iters; i++) {
    MPI_Comm copy;
    MPI_Comm_dup(parents[t], &copy);
    long mine = i * 31 + t * 7 + mt_.rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, copy);
    if (sum != mt_.size * (i * 31 + t * 7) + (long)mt_.size * (mt_.size - 1) / 2)
      bad[t]++;
    digest[t] = mt_mix(digest[t] ^ (uint64_t)sum);
    MPI_Comm_free(&copy);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_dup_loop");
  if (provided != MPI_THREAD_MULTIPLE)
    mt_die("MPI_THREAD_MULTIPLE not provided");
  iters = mt_arg("mt_dup_loop", argc, argv, 1, 2000);
  const int nthreads = (int)mt_arg("mt_dup_loop", argc, argv, 2, 4);
  if (nthreads < 1 || nthreads > MAX_THREADS)
    mt_die("THREADS must be 1 to 16");
  for (int t = 0; t < nthreads; t++)
    MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
  pthread_t th[MAX_THREADS];
  for (int t = 1; t < nthreads; t++)
    if (pthread_create(&th[t], NULL, run, (void *)(long)t) != 0)
      mt_die("pthread_create failed");
  run((void *)0);
  for (int t = 1; t < nthreads; t++)
    pthread_join(th[t], NULL);
  long wrong = 0;
  for (int t = 0; t < nthreads; t++) {
    mt_log("thread %d: digest %016llx", t, (unsigned long long)digest[t]);
    wrong += bad[t];
    MPI_Comm_free(&parents[t]);
  }
  mt_check_int("wrong sums", wrong, 0);
  return mt_end();
}
