/*
 * mt_new_threads.c - MPI_THREAD_MULTIPLE with threads that call MPI for the first time while
 * the program runs, the way MPICH's threads tests start their senders and receivers one after
 * another: each new thread that calls MPI makes mana create a lower-half thread for it.
 *
 *   usage: mt_new_threads [THREADS]   default 6 (at most 16)
 *
 * The main thread, THREADS times: a barrier on MPI_COMM_WORLD, then a new thread that asks for
 * its rank (its first MPI call) and waits.  Once all are running, each thread sums its own
 * values over its own duplicate of MPI_COMM_WORLD, concurrently with the others.
 * Output depends only on the arguments.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>

#define MAX_THREADS 16

static int nthreads;
static MPI_Comm comms[MAX_THREADS];
static long result[MAX_THREADS];
static int first_rank[MAX_THREADS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int go;

static void *run(void *arg)
{
  const int t = (int)(long)arg;
  MPI_Comm_rank(MPI_COMM_WORLD, &first_rank[t]);
  pthread_mutex_lock(&lock);
  while (!go)
    pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  long mine = (long)(t + 1) * 1000 + first_rank[t], sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comms[t]);
  result[t] = sum;
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_new_threads");
  if (provided != MPI_THREAD_MULTIPLE)
    mt_die("MPI_THREAD_MULTIPLE not provided");
  nthreads = (int)mt_arg("mt_new_threads", argc, argv, 1, 6);
  if (nthreads < 1 || nthreads > MAX_THREADS)
    mt_die("THREADS must be 1 to 16");
  for (int t = 0; t < nthreads; t++)
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  pthread_t th[MAX_THREADS];
  for (int t = 0; t < nthreads; t++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (pthread_create(&th[t], NULL, run, (void *)(long)t) != 0)
      mt_die("pthread_create failed");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  pthread_mutex_lock(&lock);
  go = 1;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
  for (int t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  const long n = mt_.size;
  for (int t = 0; t < nthreads; t++) {
    mt_log("thread %d: sum %ld", t, result[t]);
    mt_check(result[t] == (long)(t + 1) * 1000 * n + n * (n - 1) / 2,
             "thread %d's sum over its communicator", t);
    MPI_Comm_free(&comms[t]);
  }
  return mt_end();
}
