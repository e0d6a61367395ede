/*
 * mt_probe_recv.c - MPI_THREAD_MULTIPLE probes and receives on several threads at once, with
 * many small messages in flight (as MPICH's threads/pt2pt/mt_probe_*): a checkpoint finds
 * them on their way and a restart delivers them from mana's buffer while the receiving
 * threads probe and take them concurrently.
 *
 *   usage: mt_probe_recv [ROUNDS [THREADS]]   defaults 40 4 (at most 16 threads)
 *
 * Rank 0's thread t sends WINDOW messages with tag t to rank 1 each round and waits for rank 1's
 * acknowledgement; rank 1's thread t probes each (MPI_Probe and MPI_Iprobe in turn), checks
 * the probed count, receives it and acknowledges the round.  Output depends only on the
 * arguments.  Ranks: 2.
 */
#include "mpitest.h"
#include <pthread.h>

#define MAX_THREADS 16
#define WINDOW 256
#define ACK_TAG 1000

static long rounds;
static uint64_t digest[MAX_THREADS];
static long bad[MAX_THREADS];

static int length_of(long r, int t, int j)
{
  return 1 + (int)((r * 7 + t * 3 + j) % 5);
}

static void sender(int t)
{
  int out[WINDOW][5];
  for (long r = 0; r < rounds; r++) {
    MPI_Request rq[WINDOW];
    for (int j = 0; j < WINDOW; j++) {
      const int n = length_of(r, t, j);
      for (int k = 0; k < n; k++)
        out[j][k] = (int)(r * 1000 + t * 100 + j * 5 + k);
      MPI_Isend(out[j], n, MPI_INT, 1, t, MPI_COMM_WORLD, &rq[j]);
    }
    MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
    int ack = -1;
    MPI_Recv(&ack, 1, MPI_INT, 1, ACK_TAG + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (ack != (int)r)
      bad[t]++;
  }
}

static void receiver(int t)
{
  int in[5];
  for (long r = 0; r < rounds; r++) {
    for (int j = 0; j < WINDOW; j++) {
      MPI_Status st;
      if (j % 2 == 0) {
        MPI_Probe(0, t, MPI_COMM_WORLD, &st);
      } else {
        int flag = 0;
        while (!flag)
          MPI_Iprobe(0, t, MPI_COMM_WORLD, &flag, &st);
      }
      int n = -1;
      MPI_Get_count(&st, MPI_INT, &n);
      if (n != length_of(r, t, j) || st.MPI_SOURCE != 0 || st.MPI_TAG != t)
        bad[t]++;
      MPI_Recv(in, 5, MPI_INT, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int k = 0; k < n && k < 5; k++) {
        if (in[k] != (int)(r * 1000 + t * 100 + j * 5 + k))
          bad[t]++;
        digest[t] = mt_mix(digest[t] ^ (uint64_t)in[k]);
      }
    }
    int ack = (int)r;
    MPI_Send(&ack, 1, MPI_INT, 0, ACK_TAG + t, MPI_COMM_WORLD);
  }
}

static void *run(void *arg)
{
  const int t = (int)(long)arg;
  if (mt_.rank == 0)
    sender(t);
  else
    receiver(t);
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_probe_recv");
  mt_require_size(2);
  if (provided != MPI_THREAD_MULTIPLE)
    mt_die("MPI_THREAD_MULTIPLE not provided");
  rounds = mt_arg("mt_probe_recv", argc, argv, 1, 40);
  const int nthreads = (int)mt_arg("mt_probe_recv", argc, argv, 2, 4);
  if (nthreads < 1 || nthreads > MAX_THREADS)
    mt_die("THREADS must be 1 to 16");
  pthread_t th[MAX_THREADS];
  for (int t = 1; t < nthreads; t++)
    if (pthread_create(&th[t], NULL, run, (void *)(long)t) != 0)
      mt_die("pthread_create failed");
  run((void *)0);
  for (int t = 1; t < nthreads; t++)
    pthread_join(th[t], NULL);
  long wrong = 0, all = 0;
  for (int t = 0; t < nthreads; t++)
    wrong += bad[t];
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (mt_.rank == 1)
    for (int t = 0; t < nthreads; t++)
      mt_log("thread %d: digest %016llx", t, (unsigned long long)digest[t]);
  mt_check_int("wrong counts, sources, tags or data", all, 0);
  return mt_end();
}
