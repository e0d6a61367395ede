/*
 * ckpt_intercomm.c - intercommunicators through their whole life, for checkpoints at every
 * MPI call (tests/restart/run_at_calls.sh): every round splits the world into even and
 * odd ranks, bridges them with MPI_Intercomm_create (leaders: each side's last member),
 * duplicates and splits the intercommunicator, sends across with messages left in flight over
 * the collectives that follow, runs collectives across (Bcast from MPI_ROOT, Allreduce,
 * Alltoall, an Ibarrier overlapped with point-to-point, Barrier), merges the sides and reduces
 * over the merged communicator, and frees everything but one intercommunicator that lives
 * through all rounds.  Every result is folded into a digest that rank 0 prints per round.
 *
 *   usage: ckpt_intercomm [ROUNDS]    default 4
 * Ranks: an even number (both sides the same size).
 */
#include "mpitest.h"

static uint64_t digest;

static void fold(long long v)
{
  digest = mt_mix(digest ^ (uint64_t)v);
}

static void one_round(int round, MPI_Comm lasting)
{
  const int me = mt_.rank, np = mt_.size, even = me % 2 == 0;
  MPI_Comm local, inter, dup, split, merged;
  MPI_Comm_split(MPI_COMM_WORLD, even, me, &local);
  int lsize, lrank;
  MPI_Comm_size(local, &lsize);
  MPI_Comm_rank(local, &lrank);
  int evens = (np + 1) / 2, odds = np / 2;
  /* leaders: the last member of each side; the other side's last member in world ranks */
  int remote_leader = even ? 2 * odds - 1 : 2 * (evens - 1);
  MPI_Intercomm_create(local, lsize - 1, MPI_COMM_WORLD, remote_leader, 100 + round, &inter);
  MPI_Comm_dup(inter, &dup);
  MPI_Comm_split(inter, 0, -lrank, &split); /* reversed local order on both sides */
  int rsize;
  MPI_Comm_remote_size(inter, &rsize);

  /* point-to-point across, the sends completed only after the collectives below */
  int partner = lrank;
  int out[3] = {round, me, 7 * me + round}, in[3] = {-1, -1, -1}, in2 = -1;
  MPI_Request sreq[2], rreq;
  MPI_Isend(out, 3, MPI_INT, partner, round, inter, &sreq[0]);
  MPI_Isend(&out[2], 1, MPI_INT, partner, round + 50, dup, &sreq[1]);
  MPI_Irecv(in, 3, MPI_INT, MPI_ANY_SOURCE, round, inter, &rreq);

  /* collectives across */
  int b = 1000 * round + me;
  if (even)
    MPI_Bcast(&b, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
  else
    MPI_Bcast(&b, 1, MPI_INT, 0, inter);
  fold(b);
  int v = me + round, sum = -1;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup);
  fold(sum);
  int *a2a_out = mt_alloc(sizeof(int) * (size_t)rsize),
      *a2a_in = mt_alloc(sizeof(int) * (size_t)rsize);
  for (int i = 0; i < rsize; i++)
    a2a_out[i] = 100 * me + i + round;
  MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, split);
  for (int i = 0; i < rsize; i++)
    fold(a2a_in[i]);
  free(a2a_out);
  free(a2a_in);

  MPI_Request ib;
  MPI_Ibarrier(inter, &ib);
  MPI_Recv(&in2, 1, MPI_INT, MPI_ANY_SOURCE, round + 50, dup, MPI_STATUS_IGNORE);
  fold(in2);
  MPI_Wait(&rreq, MPI_STATUS_IGNORE);
  fold(in[0]);
  fold(in[1]);
  fold(in[2]);
  MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE);
  MPI_Wait(&ib, MPI_STATUS_IGNORE);

  /* the lasting intercommunicator carries one exchange per round */
  int lv = 10 * round + me, lin = -1, lr;
  MPI_Comm_rank(lasting, &lr);
  MPI_Sendrecv(&lv, 1, MPI_INT, lr, 3, &lin, 1, MPI_INT, lr, 3, lasting, MPI_STATUS_IGNORE);
  fold(lin);
  MPI_Barrier(lasting);

  /* merged: odd side first in odd rounds */
  MPI_Intercomm_merge(inter, round % 2 ? even : !even, &merged);
  int mrank, msum = -1;
  MPI_Comm_rank(merged, &mrank);
  int mv = mrank * 3 + me;
  MPI_Allreduce(&mv, &msum, 1, MPI_INT, MPI_SUM, merged);
  fold(msum);
  fold(mrank);

  MPI_Comm_free(&merged);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);

  /* every rank's digest, so rank 0's line covers all */
  unsigned long long d = digest, all = 0;
  MPI_Reduce(&d, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
  if (me == 0)
    mt_log("round %d: digest %016llx", round, all);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_intercomm");
  if (mt_.size % 2)
    mt_require_size(mt_.size + 1);
  const long rounds = mt_arg("ckpt_intercomm", argc, argv, 1, 4);
  const int me = mt_.rank, even = me % 2 == 0;
  MPI_Comm half, lasting;
  MPI_Comm_split(MPI_COMM_WORLD, even, me, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, even ? 1 : 0, 99, &lasting);
  for (int r = 0; r < rounds; r++)
    one_round(r, lasting);
  MPI_Comm_free(&lasting);
  MPI_Comm_free(&half);
  mt_check(1, "%ld rounds", rounds);
  return mt_end();
}
