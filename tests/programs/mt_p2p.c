/*
 * mt_p2p.c - MPI_THREAD_MULTIPLE point-to-point from several threads at once: each of THREADS
 * threads per rank exchanges windows of non-blocking messages with the peer rank on its own
 * duplicate of MPI_COMM_WORLD (so the threads' requests, and the handles and records the
 * library keeps for them, are made and freed concurrently), then with blocking
 * MPI_Sendrecv, and every thread makes and frees a communicator and a datatype per round.
 *
 *   usage: mt_p2p [ROUNDS [THREADS]]   defaults 200 3
 *
 * Output depends only on the arguments.  Ranks: 2.
 */
#include "mpitest.h"
#include <pthread.h>

#define WINDOW 8

static long rounds;
static int nthreads, me, peer;
static MPI_Comm comms[16];
static long bad[16];
static uint64_t digest[16];

static void *run(void *arg)
{
  const int t = (int)(long)arg;
  MPI_Comm c = comms[t];
  int out[WINDOW], in[WINDOW];
  for (long r = 0; r < rounds; r++) {
    MPI_Request rq[2 * WINDOW];
    for (int j = 0; j < WINDOW; j++) {
      out[j] = (int)(r * 1000 + t * 100 + j + me);
      MPI_Irecv(&in[j], 1, MPI_INT, peer, j, c, &rq[j]);
    }
    for (int j = 0; j < WINDOW; j++)
      MPI_Isend(&out[j], 1, MPI_INT, peer, j, c, &rq[WINDOW + j]);
    MPI_Waitall(2 * WINDOW, rq, MPI_STATUSES_IGNORE);
    for (int j = 0; j < WINDOW; j++)
      if (in[j] != (int)(r * 1000 + t * 100 + j + peer))
        bad[t]++;
    int x = (int)r + t, y = -1;
    MPI_Sendrecv(&x, 1, MPI_INT, peer, 99, &y, 1, MPI_INT, peer, 99, c, MPI_STATUS_IGNORE);
    if (y != x)
      bad[t]++;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int sz = 0;
    MPI_Type_size(pair, &sz);
    if (sz != 8)
      bad[t]++;
    MPI_Type_free(&pair);
    if (r % 20 == 0) {
      MPI_Comm d;
      MPI_Comm_dup(c, &d);
      int dsize = 0;
      MPI_Comm_size(d, &dsize);
      if (dsize != 2)
        bad[t]++;
      MPI_Comm_free(&d);
    }
    digest[t] = mt_mix(digest[t] ^ (uint64_t)in[r % WINDOW]);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_p2p");
  mt_require_size(2);
  if (provided != MPI_THREAD_MULTIPLE)
    mt_die("MPI_THREAD_MULTIPLE not provided");
  rounds = mt_arg("mt_p2p", argc, argv, 1, 200);
  nthreads = (int)mt_arg("mt_p2p", argc, argv, 2, 3);
  if (nthreads > 16)
    nthreads = 16;
  me = mt_.rank;
  peer = 1 - me;
  for (int t = 0; t < nthreads; t++)
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  pthread_t th[16];
  for (int t = 1; t < nthreads; t++)
    pthread_create(&th[t], NULL, run, (void *)(long)t);
  run((void *)0);
  for (int t = 1; t < nthreads; t++)
    pthread_join(th[t], NULL);
  long total = 0;
  for (int t = 0; t < nthreads; t++)
    total += bad[t];
  long all = 0;
  MPI_Reduce(&total, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    mt_log("rounds %ld, threads %d", rounds, nthreads);
    for (int t = 0; t < nthreads; t++)
      mt_log("thread %d digest %016llx", t, (unsigned long long)digest[t]);
    mt_check_int("wrong messages, sizes or results", all, 0);
  }
  for (int t = 0; t < nthreads; t++)
    MPI_Comm_free(&comms[t]);
  return mt_end();
}
