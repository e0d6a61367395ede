/*
 * ckpt_pcoll.c - persistent collective requests through their whole life, for checkpoints at
 * every MPI call (tests/restart/run_at_calls.sh): long-lived requests (Allreduce_init,
 * Bcast_init on a dup, Alltoallv_init, Barrier_init) are started every iteration, with
 * MPI_Start and MPI_Startall, completed with MPI_Wait, MPI_Waitall and MPI_Test loops, with
 * computation and point-to-point traffic while they are active; every few iterations a
 * short-lived Reduce_init is made, started twice and freed; an Allreduce_init across an
 * intercommunicator lives through the run.  Every result is folded into a digest that rank 0
 * prints at the end of each round.
 *
 *   usage: ckpt_pcoll [ITERATIONS]    default 12
 * Ranks: 2 or more.
 */
#include "mpitest.h"

static uint64_t digest;

static void fold(long long v)
{
  digest = mt_mix(digest ^ (uint64_t)v);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_pcoll");
  if (mt_.size < 2)
    mt_require_size(2);
  const long iters = mt_arg("ckpt_pcoll", argc, argv, 1, 12);
  const int me = mt_.rank, np = mt_.size;
  const size_t unp = (size_t)np;

  long long ar_in[3], ar_out[3];
  double bc[4];
  int *a2a_in = mt_alloc(sizeof(int) * unp), *a2a_out = mt_alloc(sizeof(int) * unp);
  int *counts = mt_alloc(sizeof(int) * unp), *displs = mt_alloc(sizeof(int) * unp);
  for (int i = 0; i < np; i++) {
    counts[i] = 1;
    displs[i] = np - 1 - i;
  }
  MPI_Comm dup, half, inter;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 4, &inter);
  int ic_in, ic_out;

  MPI_Request rq[5];
  MPI_Allreduce_init(ar_in, ar_out, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                     &rq[0]);
  MPI_Bcast_init(bc, 4, MPI_DOUBLE, np - 1, dup, MPI_INFO_NULL, &rq[1]);
  MPI_Alltoallv_init(a2a_in, counts, displs, MPI_INT, a2a_out, counts, displs, MPI_INT,
                     MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]);
  MPI_Barrier_init(dup, MPI_INFO_NULL, &rq[3]);
  MPI_Allreduce_init(&ic_in, &ic_out, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq[4]);

  for (long it = 0; it < iters; it++) {
    for (int k = 0; k < 3; k++)
      ar_in[k] = (me + 1) * (it + 1) + k;
    for (int k = 0; k < 4; k++)
      bc[k] = me == np - 1 ? it * 1.5 + k : -1.0;
    for (int k = 0; k < np; k++)
      a2a_in[k] = 100 * me + 10 * k + (int)it;
    ic_in = me * 3 + (int)it;
    if (it % 2) {
      MPI_Startall(5, rq);
    } else {
      for (int k = 0; k < 5; k++)
        MPI_Start(&rq[k]);
    }
    /* computation on one rank while the others wait for its message in a ring exchange, all
     * with the collectives active (a checkpoint then finds them started, not completed) */
    double x = 1.0;
    for (int k = 0; k < (me == it % np ? 3000000 : 1000); k++)
      x = x * 1.0000001 + 1e-9;
    fold((long long)(x * 1000));
    int out = (int)it * 10 + me, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, (me + 1) % np, 7, &in, 1, MPI_INT, (me + np - 1) % np, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fold(in);
    if (it % 3 == 0) {
      int flag = 0;
      while (!flag)
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      MPI_Waitall(3, &rq[2], MPI_STATUSES_IGNORE);
    } else {
      MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);
    }
    for (int k = 0; k < 3; k++)
      fold(ar_out[k]);
    for (int k = 0; k < 4; k++)
      fold((long long)(bc[k] * 2));
    for (int k = 0; k < np; k++)
      fold(a2a_out[k]);
    fold(ic_out);
    if (it % 4 == 1) { /* a short-lived one, made, used twice and freed */
      long long rin = (me + 2) * it, rout = -1;
      MPI_Request r;
      MPI_Reduce_init(&rin, &rout, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
      for (int k = 0; k < 2; k++) {
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (me == 0)
          fold(rout);
        rin++;
      }
      MPI_Request_free(&r);
    }
    if (it % 4 == 3) {
      unsigned long long d = digest, all = 0;
      MPI_Reduce(&d, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
      if (me == 0)
        mt_log("iteration %ld: digest %016llx", it, all);
    }
  }
  for (int k = 0; k < 5; k++)
    MPI_Request_free(&rq[k]);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  free(a2a_in);
  free(a2a_out);
  free(counts);
  free(displs);
  mt_check(1, "%ld iterations", iters);
  return mt_end();
}
