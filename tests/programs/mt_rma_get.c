/*
 * mt_rma_get.c - MPI_THREAD_MULTIPLE passive-target reads: every rank's threads read rank 0's
 * window over and over inside one MPI_Win_lock_all epoch, each read completed by
 * MPI_Win_flush_all (as MPICH's threads/rma/multiget).  A flush waits for the target's progress
 * engine only: a checkpoint finds threads inside it whose target has already parked.
 *
 *   usage: mt_rma_get [LOOPS [THREADS]]   defaults 3000 4 (at most 16 threads)
 *
 * Output depends only on the arguments and the rank count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>

#define MAX_THREADS 16
#define COUNT 16

static long loops;
static MPI_Win win;
static long bad[MAX_THREADS];

static void *run(void *arg)
{
  const int t = (int)(long)arg;
  double got[COUNT];
  for (long i = 0; i < loops; i++) {
    MPI_Get(got, COUNT, MPI_DOUBLE, 0, 0, COUNT, MPI_DOUBLE, win);
    MPI_Win_flush_all(win);
    for (int k = 0; k < COUNT; k++)
      if (got[k] != 1.5 * k)
        bad[t]++;
  }
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_rma_get");
  if (provided != MPI_THREAD_MULTIPLE)
    mt_die("MPI_THREAD_MULTIPLE not provided");
  loops = mt_arg("mt_rma_get", argc, argv, 1, 3000);
  const int nthreads = (int)mt_arg("mt_rma_get", argc, argv, 2, 4);
  if (nthreads < 1 || nthreads > MAX_THREADS)
    mt_die("THREADS must be 1 to 16");
  double *base = NULL;
  const MPI_Aint bytes = mt_.rank == 0 ? COUNT * (MPI_Aint)sizeof(double) : 0;
  MPI_Win_allocate(bytes, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  if (mt_.rank == 0)
    for (int k = 0; k < COUNT; k++)
      base[k] = 1.5 * k;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  pthread_t th[MAX_THREADS];
  for (int t = 0; t < nthreads; t++)
    if (pthread_create(&th[t], NULL, run, (void *)(long)t) != 0)
      mt_die("pthread_create failed");
  for (int t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  MPI_Win_unlock_all(win);
  long wrong = 0;
  for (int t = 0; t < nthreads; t++)
    wrong += bad[t];
  MPI_Win_free(&win);
  mt_log("%ld reads by %d threads", loops * nthreads, nthreads);
  mt_check_int("wrong values read", wrong, 0);
  return mt_end();
}
