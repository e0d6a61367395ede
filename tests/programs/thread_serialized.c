/*
 * thread_serialized.c - MPI_Init_thread(MPI_THREAD_SERIALIZED): the main thread and a worker
 * thread both make MPI calls, never at the same time (every MPI call is made while holding
 * one mutex). Each thread exchanges its own stream of messages with the same thread of the
 * peer rank, on its own tag, with Isend/Irecv and a Test polling loop that releases the
 * mutex between polls (blocking calls under the mutex could deadlock across ranks). After
 * the join, the main thread checks both streams and runs a collective.
 * Ranks: 2.
 */
#include "mpitest.h"
#include <pthread.h>
#include <sched.h>

#define MSGS 50

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;

struct stream {
  int tag;
  long sum;     /* sum of received values */
  int in_order; /* received values arrived in send order */
  int is_main;  /* MPI_Is_thread_main as seen by this thread */
  int level;    /* MPI_Query_thread as seen by this thread */
};

static int value(int rank, int tag, int i)
{
  return rank * 100000 + tag * 1000 + i;
}

static void run_stream(struct stream *s)
{
  const int me = mt_.rank, peer = 1 - me;
  pthread_mutex_lock(&mpi_lock);
  MPI_Is_thread_main(&s->is_main);
  MPI_Query_thread(&s->level);
  pthread_mutex_unlock(&mpi_lock);
  s->sum = 0;
  s->in_order = 1;
  int last = -1;
  for (int i = 0; i < MSGS; i++) {
    int out = value(me, s->tag, i), in = -1, done[2] = {0, 0};
    MPI_Request rq[2];
    pthread_mutex_lock(&mpi_lock);
    MPI_Irecv(&in, 1, MPI_INT, peer, s->tag, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&out, 1, MPI_INT, peer, s->tag, MPI_COMM_WORLD, &rq[1]);
    pthread_mutex_unlock(&mpi_lock);
    while (!done[0] || !done[1]) {
      pthread_mutex_lock(&mpi_lock);
      for (int k = 0; k < 2; k++)
        if (!done[k])
          MPI_Test(&rq[k], &done[k], MPI_STATUS_IGNORE);
      pthread_mutex_unlock(&mpi_lock);
      if (!done[0] || !done[1])
        sched_yield();
    }
    s->sum += in;
    if (in != value(peer, s->tag, i) || in <= last)
      s->in_order = 0;
    last = in;
  }
}

static void *worker(void *arg)
{
  run_stream(arg);
  return NULL;
}

int main(int argc, char **argv)
{
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  mt_begin("thread_serialized");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  mt_log("provided = %s", provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                          : provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
                                                            : "a lower level");
  mt_check(provided >= MPI_THREAD_SERIALIZED, "provided level is at least SERIALIZED");

  struct stream ms = {.tag = 1}, ws = {.tag = 2};
  pthread_t th;
  if (pthread_create(&th, NULL, worker, &ws) != 0)
    mt_die("pthread_create");
  run_stream(&ms);
  pthread_join(th, NULL);

  long exp_main = 0, exp_worker = 0;
  for (int i = 0; i < MSGS; i++) {
    exp_main += value(peer, 1, i);
    exp_worker += value(peer, 2, i);
  }
  mt_check_int("main-thread stream: sum of received values", ms.sum, exp_main);
  mt_check_int("worker-thread stream: sum of received values", ws.sum, exp_worker);
  mt_check(ms.in_order && ws.in_order, "both streams arrived complete and in order");
  mt_check(ms.is_main == 1 && ws.is_main == 0, "is_thread_main: main %d, worker %d", ms.is_main,
           ws.is_main);
  mt_check(ms.level == provided && ws.level == provided, "query_thread agrees in both threads");

  long both = ms.sum + ws.sum, total = 0;
  MPI_Allreduce(&both, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  long etotal = 0;
  for (int r = 0; r < 2; r++)
    for (int t = 1; t <= 2; t++)
      for (int i = 0; i < MSGS; i++)
        etotal += value(r, t, i);
  mt_check_int("allreduce of both ranks' stream sums", total, etotal);
  return mt_end();
}
