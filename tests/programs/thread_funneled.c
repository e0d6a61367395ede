/*
 * thread_funneled.c - MPI_Init_thread(MPI_THREAD_FUNNELED): a pthread worker computes
 * something (a count of primes by trial division) while the main thread communicates (a
 * ping-pong loop and Allreduces). The worker makes no MPI calls except the ones the
 * standard allows from any thread (Is_thread_main, Query_thread, Initialized). After the
 * join the main thread combines the worker results with an Allreduce.
 * Ranks: 2.
 */
#include "mpitest.h"
#include <pthread.h>

struct work {
  int lo, hi;
  long primes;
  int is_main, level, initialized;
};

static void *worker(void *arg)
{
  struct work *w = arg;
  MPI_Is_thread_main(&w->is_main);
  MPI_Query_thread(&w->level);
  MPI_Initialized(&w->initialized);
  long n = 0;
  for (int x = w->lo; x < w->hi; x++) {
    if (x < 2)
      continue;
    int prime = 1;
    for (int d = 2; (long)d * d <= x; d++)
      if (x % d == 0) {
        prime = 0;
        break;
      }
    n += prime;
  }
  w->primes = n;
  return NULL;
}

static const char *level_name(int l)
{
  switch (l) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  case MPI_THREAD_MULTIPLE:
    return "MPI_THREAD_MULTIPLE";
  default:
    return "?";
  }
}

int main(int argc, char **argv)
{
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  mt_begin("thread_funneled");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  mt_log("provided = %s", level_name(provided));
  mt_check(provided >= MPI_THREAD_FUNNELED, "provided level is at least FUNNELED");

  /* rank r counts primes in [r * 100000, (r + 1) * 100000) */
  struct work wk = {.lo = me * 100000, .hi = (me + 1) * 100000, .is_main = -1, .level = -1};
  pthread_t th;
  if (pthread_create(&th, NULL, worker, &wk) != 0)
    mt_die("pthread_create");

  /* main thread: ping-pong while the worker runs */
  int v = me, rounds = 200;
  for (int i = 0; i < rounds; i++) {
    if ((i + me) % 2 == 0) {
      MPI_Send(&v, 1, MPI_INT, peer, i, MPI_COMM_WORLD);
    } else {
      MPI_Recv(&v, 1, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      v += 1;
    }
  }
  int sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  /* rank 0 receives on odd i (100 times), rank 1 on even i (100 times): v grows by 1 per
   * receive along one chain, so the final values are 199 and 200 */
  mt_check_int("ping-pong chain total during the worker's run", sum, 399);

  pthread_join(th, NULL);
  int mainflag;
  MPI_Is_thread_main(&mainflag);
  mt_check_int("is_thread_main in the main thread", mainflag, 1);
  mt_check_int("is_thread_main in the worker", wk.is_main, 0);
  mt_check(wk.level == provided, "query_thread in the worker = %s", level_name(wk.level));
  mt_check_int("initialized in the worker", wk.initialized, 1);
  int q;
  MPI_Query_thread(&q);
  mt_check(q == provided, "query_thread in main = %s", level_name(q));

  long total = 0;
  MPI_Allreduce(&wk.primes, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_check_int("primes below 200000 (worker results combined)", total, 17984);
  mt_check_int("my worker's count", wk.primes, me == 0 ? 9592 : 8392);
  return mt_end();
}
