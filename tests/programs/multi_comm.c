/*
 * multi_comm.c - blocking and non-blocking collectives on four communicators with computation
 * in between, a long-running workload for checkpoint chains.
 *
 *   usage: multi_comm [ITERS [WORK]]   defaults 2000 20000
 *
 * The communicators: two from MPI_Comm_split (by rank parity, and everyone in one colour with
 * reversed keys), one MPI_Comm_dup of MPI_COMM_WORLD, one split in pairs (rank / 2).  At two
 * ranks the parity split and the pairs are a singleton and a pair.  Every iteration does some
 * floating-point work, then an Allreduce, an Ibcast + Iallreduce pair completed with Waitall,
 * a Reduce, an Iallgather and an Ibarrier, each on a different communicator in turn.
 * All output is printed by rank 0 at the end and depends only on the arguments and the rank
 * count, so a run checkpointed and restarted any number of times prints what an
 * uninterrupted run prints.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"

static double work(double x, long n)
{
  for (long i = 0; i < n; i++)
    x = x * 0.999999 + 1e-6 * (double)(i % 7);
  return x;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("multi_comm");
  const long iters = mt_arg("multi_comm", argc, argv, 1, 2000);
  const long nwork = mt_arg("multi_comm", argc, argv, 2, 20000);
  const int me = mt_.rank, np = mt_.size;
  MPI_Comm comm[4];
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &comm[0]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, np - me, &comm[1]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm[2]);
  MPI_Comm_split(MPI_COMM_WORLD, me / 2, me, &comm[3]);
  int csize[4], crank[4];
  for (int c = 0; c < 4; c++) {
    MPI_Comm_size(comm[c], &csize[c]);
    MPI_Comm_rank(comm[c], &crank[c]);
  }

  uint64_t digest = 1469598103934665603ULL;
  double x = 1.0 + me;
  long long checks = 0;
  for (long it = 0; it < iters; it++) {
    x = work(x, nwork);
    MPI_Comm a = comm[it % 4], b = comm[(it + 1) % 4], c = comm[(it + 2) % 4],
             d = comm[(it + 3) % 4];
    double sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, a);
    long long v[2] = {it * 3 + me, 0}, root_val = it;
    MPI_Request rq[2];
    MPI_Ibcast(&root_val, 1, MPI_LONG_LONG, 0, b, &rq[0]);
    MPI_Iallreduce(&v[0], &v[1], 1, MPI_LONG_LONG, MPI_MAX, c, &rq[1]);
    x = work(x, nwork / 4);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    long long red = 0, one = 1;
    MPI_Reduce(&one, &red, 1, MPI_LONG_LONG, MPI_SUM, 0, d);
    int dsize, drank;
    MPI_Comm_size(d, &dsize);
    MPI_Comm_rank(d, &drank);
    if (drank == 0 && red != dsize)
      checks++;
    long long mine = it + me, *all = mt_alloc(sizeof(long long) * (size_t)np);
    MPI_Request ag, bar;
    int asize;
    MPI_Comm_size(a, &asize);
    MPI_Iallgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, a, &ag);
    MPI_Ibarrier(b, &bar);
    MPI_Wait(&ag, MPI_STATUS_IGNORE);
    MPI_Wait(&bar, MPI_STATUS_IGNORE);
    for (int i = 0; i < asize; i++)
      digest = mt_mix(digest ^ (uint64_t)all[i]);
    free(all);
    digest = mt_mix(digest ^ (uint64_t)(sum * 1e6)) ^ (uint64_t)v[1] ^ (uint64_t)root_val;
  }

  uint64_t *digests = mt_alloc(sizeof(uint64_t) * (size_t)np);
  MPI_Gather(&digest, 1, MPI_UINT64_T, digests, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  long long bad = 0;
  MPI_Reduce(&checks, &bad, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    mt_log("parameters: ranks %d, iterations %ld, work %ld", np, iters, nwork);
    for (int r = 0; r < np; r++)
      mt_log("rank %d digest %016llx", r, (unsigned long long)digests[r]);
    mt_check_int("reductions with a wrong member count", bad, 0);
  }
  mt_log("communicator sizes %d %d %d %d, ranks %d %d %d %d", csize[0], csize[1], csize[2],
         csize[3], crank[0], crank[1], crank[2], crank[3]);
  free(digests);
  for (int c = 0; c < 4; c++)
    MPI_Comm_free(&comm[c]);
  return mt_end();
}
