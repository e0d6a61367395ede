/*
 * callback_thread.c - a thread created from inside an MPI call: the user op of an
 * MPI_Reduce_local starts a worker that counts in a loop on a global counter, then the op
 * returns.  The worker must go on and be there at the end, as natively, also when a
 * checkpoint came while the op ran, and after a restart from that checkpoint.
 *
 * Under mana a thread inside a callback is not parked in it: it parks when the MPI call
 * returns to the stub.  So a checkpoint that comes while the op runs finds the worker only
 * after the op created it; the worker must then be parked and saved like the others, not
 * run on, unseen, while the image is written (lower-half/park.c counts the parked threads
 * before it lists the threads, for this).
 *
 * With CALLBACK_THREAD_GO=FILE the op says on stderr
 *   callback_thread: rank R pid P in the callback
 * and creates the worker only once FILE exists (tests/integration/thread_in_park.sh creates it
 * while a checkpoint is parking the ranks).  Checks, on every rank: the reduction's result,
 * the worker counted, and it answers once the reduction is over (20 s at most: a worker lost
 * at a restart never answers).
 * Ranks: any.  Arguments: none.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define N 4

static volatile uint64_t ticks; /* the worker's count, in the executable's data page */
static volatile int asked, answered, stop;
static pthread_t worker;
static int worker_started, my_rank; /* the op may not call MPI to learn its rank */

static void *count(void *arg)
{
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    ticks++;
    if (__atomic_load_n(&asked, __ATOMIC_ACQUIRE))
      __atomic_store_n(&answered, 1, __ATOMIC_RELEASE);
  }
  return NULL;
}

/* The user op: starts the worker (the first time), then sums. */
static void sum_and_start(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  if (!worker_started) {
    const char *go = getenv("CALLBACK_THREAD_GO");
    if (go) {
      fprintf(stderr, "callback_thread: rank %d pid %d in the callback\n", my_rank, (int)getpid());
      fflush(stderr);
      while (access(go, F_OK) != 0)
        mt_pause_ms(1);
    }
    if (pthread_create(&worker, NULL, count, NULL) != 0)
      mt_die("pthread_create failed");
    worker_started = 1;
  }
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += ((const int *)in)[i];
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("callback_thread");
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  my_rank = rank;

  MPI_Op op;
  MPI_Op_create(sum_and_start, 1, &op);
  int in[N], inout[N], want[N];
  for (int i = 0; i < N; i++) {
    in[i] = rank + i;
    inout[i] = 100 * (i + 1);
    want[i] = inout[i] + in[i];
  }
  MPI_Reduce_local(in, inout, N, MPI_INT, op);
  mt_check_ints("MPI_Reduce_local with the op that starts the worker", inout, want, N);
  MPI_Op_free(&op);

  MPI_Barrier(MPI_COMM_WORLD);
  __atomic_store_n(&asked, 1, __ATOMIC_RELEASE);
  int waited = 0;
  while (!__atomic_load_n(&answered, __ATOMIC_ACQUIRE) && waited < 20000) {
    mt_pause_ms(1);
    waited++;
  }
  mt_check_int("the worker created in the op answers after the reduction",
               __atomic_load_n(&answered, __ATOMIC_ACQUIRE), 1);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  if (__atomic_load_n(&answered, __ATOMIC_ACQUIRE))
    pthread_join(worker, NULL);
  mt_check_int("the worker counted", ticks > 0, 1);
  return mt_end();
}
