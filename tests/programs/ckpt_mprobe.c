/*
 * ckpt_mprobe.c - matched messages held across other MPI calls, for checkpoints at every MPI
 * call (tests/restart/run_at_calls.sh, counting rank 1's calls): every round, rank 0
 * sends rank 1 a small message, a rendezvous-sized one and a non-contiguous one on two
 * communicators; rank 1 matches them with MPI_Mprobe and MPI_Improbe (by tag, out of order,
 * and with wildcards) and keeps the message handles over collectives, an exchange in the
 * other direction and computation before it receives them with MPI_Mrecv and MPI_Imrecv.
 * Every value received is folded into a digest; rank 0 prints it per round.
 *
 *   usage: ckpt_mprobe [ROUNDS]    default 4
 * Ranks: 2 (more ranks only join the collectives).
 */
#include "mpitest.h"

enum { BIG = 40000 };

static uint64_t digest;

static void fold(long long v)
{
  digest = mt_mix(digest ^ (uint64_t)v);
}

static void fold_status(const MPI_Status *st)
{
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  fold(st->MPI_SOURCE);
  fold(st->MPI_TAG);
  fold(count);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_mprobe");
  if (mt_.size < 2)
    mt_require_size(2);
  const long rounds = mt_arg("ckpt_mprobe", argc, argv, 1, 4);
  const int me = mt_.rank;
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Datatype strided;
  MPI_Type_vector(5, 1, 3, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int *big = mt_alloc(BIG * sizeof(int));

  for (int r = 0; r < rounds; r++) {
    int small = 1000 * r + 1, grid[15], back = -1, sum = -1;
    for (int i = 0; i < 15; i++)
      grid[i] = 100 * r + i;
    if (me == 0) {
      for (int i = 0; i < BIG; i++)
        big[i] = i * (r + 1);
      MPI_Request rq[4];
      MPI_Isend(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &rq[0]);
      MPI_Isend(big, BIG, MPI_INT, 1, 2, MPI_COMM_WORLD, &rq[1]);
      MPI_Isend(grid, 1, strided, 1, 3, dup, &rq[2]);
      MPI_Isend(&small, 1, MPI_INT, 1, 4, dup, &rq[3]);
      MPI_Allreduce(&small, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Recv(&back, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      fold(back);
      MPI_Barrier(dup);
      MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    } else if (me == 1) {
      MPI_Message m_big, m_small, m_grid, m_late;
      MPI_Status st;
      MPI_Mprobe(0, 2, MPI_COMM_WORLD, &m_big, &st); /* the second message first */
      fold_status(&st);
      int flag = 0;
      while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m_small, &st);
      fold_status(&st);
      MPI_Allreduce(&small, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* two held */
      MPI_Mprobe(0, MPI_ANY_TAG, dup, &m_grid, &st);
      fold_status(&st);
      back = 7 * r;
      MPI_Send(&back, 1, MPI_INT, 0, 5, MPI_COMM_WORLD); /* three held */
      int v = -1, got[5] = {-1, -1, -1, -1, -1};
      MPI_Request rq;
      MPI_Imrecv(big, BIG, MPI_INT, &m_big, &rq);
      MPI_Mrecv(&v, 1, MPI_INT, &m_small, MPI_STATUS_IGNORE);
      fold(v);
      flag = 0;
      while (!flag)
        MPI_Improbe(0, 4, dup, &flag, &m_late, MPI_STATUS_IGNORE);
      MPI_Barrier(dup); /* the grid and the late one held, the big one pending */
      MPI_Wait(&rq, &st);
      fold_status(&st);
      long long s = 0;
      for (int i = 0; i < BIG; i++)
        s += big[i];
      fold(s);
      MPI_Mrecv(got, 5, MPI_INT, &m_grid, &st);
      fold_status(&st);
      for (int i = 0; i < 5; i++)
        fold(got[i]);
      MPI_Mrecv(&v, 1, MPI_INT, &m_late, MPI_STATUS_IGNORE);
      fold(v);
    } else {
      MPI_Allreduce(&small, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(dup);
    }
    fold(sum);
    unsigned long long d = digest, all = 0;
    MPI_Reduce(&d, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (me == 0)
      mt_log("round %d: digest %016llx", r, all);
  }
  free(big);
  MPI_Type_free(&strided);
  MPI_Comm_free(&dup);
  mt_check(1, "%ld rounds", rounds);
  return mt_end();
}
