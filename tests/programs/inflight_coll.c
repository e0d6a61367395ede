/*
 * inflight_coll.c - a long-running, checkpointable workload that always has collective
 * operations in flight: at any moment a checkpoint may find non-blocking collectives on two
 * communicators overlapped with computation, one of them spanning two iterations, and
 * blocking collectives with derived datatypes on a split communicator.
 *
 *   usage: inflight_coll [ITERS [WORK]]
 *          defaults 3000 200000: about half a second natively at -n 2 on an idle 2-core
 *          machine; the run time grows linearly with ITERS (and with WORK, the number of
 *          floating-point updates per iteration).
 *
 * Communicators: MPI_COMM_WORLD; "dup", a duplicate of it; "split", MPI_Comm_split of it
 * (with 4 or more ranks into even and odd ranks, otherwise all ranks in reverse order).
 *
 * Every iteration it:
 *   - MPI_Iallreduce (4 x int64, MPI_SUM) on MPI_COMM_WORLD is started and left running;
 *     it is completed in iteration it + 1, so two are in flight at once;
 *   - MPI_Ibcast (64 ints, root it % size) on dup is started, the computation runs in four
 *     chunks with an MPI_Test between them, then MPI_Wait;
 *   - every BLOCKING_EVERY iterations, on split: MPI_Allreduce, MPI_Bcast, MPI_Allgather, an
 *     MPI_Alltoall whose send side is a strided vector datatype resized to interleave the
 *     blocks, MPI_Reduce (MAX), and MPI_Barrier;
 *   - every IBARRIER_EVERY iterations an MPI_Ibarrier on dup, completed IBARRIER_EVERY / 2
 *     iterations later.
 * Every result is checked against its closed form as it completes and folded into a digest
 * (integers only, so the sums do not depend on the reduction order). Rank 0 prints the
 * totals at the end; the output depends only on the arguments and the rank count.
 * Any number of ranks works.
 */
#include "mpitest.h"

#define NB 64 /* ints per Ibcast */
#define BLOCKING_EVERY 5
#define IBARRIER_EVERY 12

/* What rank r contributes to the Iallreduce of iteration it, element k. */
static long long contrib(int r, long it, int k)
{
  return (long long)(r + 1) * (it + 1) * (k + 1) + k * r;
}

/* The Ibcast payload of iteration it, element j. */
static int bcast_value(long it, int j)
{
  return (int)((it * 2654435761u + (unsigned)j * 40503u) & 0x7fffffff);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("inflight_coll");
  const int me = mt_.rank, np = mt_.size;
  const long iters = mt_arg("inflight_coll", argc, argv, 1, 3000);
  const long work = mt_arg("inflight_coll", argc, argv, 2, 200000);
  double t_start = MPI_Wtime();

  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int color = np >= 4 ? me % 2 : 0;
  MPI_Comm_split(MPI_COMM_WORLD, color, np - me, &split);
  int sme, snp;
  MPI_Comm_rank(split, &sme);
  MPI_Comm_size(split, &snp);
  /* world ranks of the split communicator's members, in split rank order */
  int *members = mt_alloc(sizeof(int) * (size_t)snp);
  MPI_Allgather(&me, 1, MPI_INT, members, 1, MPI_INT, split);

  /* Alltoall send type: the block for destination d is ints 6d and 6d + 3 of the send
   * buffer (a vector of 2 with stride 3, resized to an extent of 6 ints so that count 1 per
   * destination steps from one block to the next); it arrives as 2 contiguous ints. */
  MPI_Datatype pair_strided, pair_resized;
  MPI_Type_vector(2, 1, 3, MPI_INT, &pair_strided);
  MPI_Type_create_resized(pair_strided, 0, (MPI_Aint)(6 * sizeof(int)), &pair_resized);
  MPI_Type_commit(&pair_resized);

  double *field = mt_alloc(sizeof(double) * 4096);
  for (int i = 0; i < 4096; i++)
    field[i] = (double)((i * 41 + me) % 103) / 103.0;
  double acc = 0;

  long long ared_in[2][4], ared_out[2][4];
  MPI_Request ared_rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  long ared_it[2] = {-1, -1};
  int *bc = mt_alloc(sizeof(int) * NB);
  MPI_Request ibarrier = MPI_REQUEST_NULL;
  long ibarrier_due = -1;

  long n_ared = 0, n_bcast = 0, n_blocking = 0, n_ibarrier = 0, bad = 0, tests_done = 0;
  uint64_t digest = 0;
  int *a2a_send = mt_alloc(sizeof(int) * 6 * (size_t)snp);
  int *a2a_recv = mt_alloc(sizeof(int) * 2 * (size_t)snp);
  int *gathered = mt_alloc(sizeof(int) * (size_t)snp);

  for (long it = 0; it < iters; it++) {
    /* start this iteration's Iallreduce; complete the previous one */
    int slot = (int)(it % 2);
    for (int k = 0; k < 4; k++)
      ared_in[slot][k] = contrib(me, it, k);
    MPI_Iallreduce(ared_in[slot], ared_out[slot], 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD,
                   &ared_rq[slot]);
    ared_it[slot] = it;

    /* Ibcast overlapped with the computation */
    int root = (int)(it % np);
    for (int j = 0; j < NB; j++)
      bc[j] = me == root ? bcast_value(it, j) : -1;
    MPI_Request brq;
    MPI_Ibcast(bc, NB, MPI_INT, root, dup, &brq);
    for (int chunk = 0; chunk < 4; chunk++) {
      for (long w = 0; w < work / 4; w++) {
        double *f = &field[(w + chunk) & 4095];
        *f = *f * 0.999 + 0.001 * (double)(w & 7);
        acc += *f;
      }
      int flag = 0;
      if (brq != MPI_REQUEST_NULL) {
        MPI_Test(&brq, &flag, MPI_STATUS_IGNORE);
        tests_done++;
      }
    }
    MPI_Wait(&brq, MPI_STATUS_IGNORE);
    int ok = 1;
    for (int j = 0; j < NB; j++)
      ok &= bc[j] == bcast_value(it, j);
    if (!ok)
      bad++;
    n_bcast++;
    digest += mt_mix((uint64_t)it * 3 + 1) ^ (uint64_t)bc[it % NB];

    int prev = 1 - slot;
    if (ared_rq[prev] != MPI_REQUEST_NULL) {
      MPI_Wait(&ared_rq[prev], MPI_STATUS_IGNORE);
      long pit = ared_it[prev];
      ok = 1;
      for (int k = 0; k < 4; k++) {
        long long expect = 0;
        for (int r = 0; r < np; r++)
          expect += contrib(r, pit, k);
        ok &= ared_out[prev][k] == expect;
        digest += mt_mix((uint64_t)ared_out[prev][k] + (uint64_t)k);
      }
      if (!ok)
        bad++;
      n_ared++;
    }

    if (it % IBARRIER_EVERY == 0 && ibarrier == MPI_REQUEST_NULL) {
      MPI_Ibarrier(dup, &ibarrier);
      ibarrier_due = it + IBARRIER_EVERY / 2;
    }
    if (it == ibarrier_due) {
      MPI_Wait(&ibarrier, MPI_STATUS_IGNORE);
      n_ibarrier++;
    }

    if (it % BLOCKING_EVERY == BLOCKING_EVERY - 1) {
      /* Allreduce */
      long long mine = (long long)(me + 1) * it, sum = 0, expect = 0;
      MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, split);
      for (int s = 0; s < snp; s++)
        expect += (long long)(members[s] + 1) * it;
      ok = sum == expect;
      /* Bcast from a rotating root */
      int broot = (int)((it / BLOCKING_EVERY) % snp);
      long long word = sme == broot ? (long long)mt_mix((uint64_t)it) : 0;
      MPI_Bcast(&word, 1, MPI_LONG_LONG, broot, split);
      ok &= word == (long long)mt_mix((uint64_t)it);
      /* Allgather */
      int g = (int)(it % 1000) * 100 + me;
      MPI_Allgather(&g, 1, MPI_INT, gathered, 1, MPI_INT, split);
      for (int s = 0; s < snp; s++)
        ok &= gathered[s] == (int)(it % 1000) * 100 + members[s];
      /* Alltoall with a strided send type: block d is ints 6d and 6d+3 of a2a_send */
      for (int d = 0; d < snp; d++) {
        for (int x = 0; x < 6; x++)
          a2a_send[6 * d + x] = -1;
        a2a_send[6 * d] = (int)(it % 1000) * 10000 + sme * 100 + d;
        a2a_send[6 * d + 3] = -(int)(it % 1000) * 10000 - sme * 100 - d;
      }
      MPI_Alltoall(a2a_send, 1, pair_resized, a2a_recv, 2, MPI_INT, split);
      for (int s = 0; s < snp; s++) {
        ok &= a2a_recv[2 * s] == (int)(it % 1000) * 10000 + s * 100 + sme;
        ok &= a2a_recv[2 * s + 1] == -(int)(it % 1000) * 10000 - s * 100 - sme;
      }
      /* Reduce (MAX) to split rank 0 */
      long long q[4], qmax[4];
      for (int k = 0; k < 4; k++)
        q[k] = contrib(me, it, k);
      MPI_Reduce(q, qmax, 4, MPI_LONG_LONG, MPI_MAX, 0, split);
      if (sme == 0)
        for (int k = 0; k < 4; k++) {
          long long expect_max = contrib(members[0], it, k);
          for (int s = 1; s < snp; s++)
            if (contrib(members[s], it, k) > expect_max)
              expect_max = contrib(members[s], it, k);
          ok &= qmax[k] == expect_max;
        }
      MPI_Barrier(split);
      if (!ok)
        bad++;
      n_blocking++;
      digest += mt_mix((uint64_t)sum ^ (uint64_t)word ^ ((uint64_t)it << 20));
    }
  }
  /* the last Iallreduce and a pending Ibarrier */
  for (int s = 0; s < 2; s++)
    if (ared_rq[s] != MPI_REQUEST_NULL) {
      MPI_Wait(&ared_rq[s], MPI_STATUS_IGNORE);
      int ok = 1;
      for (int k = 0; k < 4; k++) {
        long long expect = 0;
        for (int r = 0; r < np; r++)
          expect += contrib(r, ared_it[s], k);
        ok &= ared_out[s][k] == expect;
        digest += mt_mix((uint64_t)ared_out[s][k] + (uint64_t)k);
      }
      if (!ok)
        bad++;
      n_ared++;
    }
  if (ibarrier != MPI_REQUEST_NULL) {
    MPI_Wait(&ibarrier, MPI_STATUS_IGNORE);
    n_ibarrier++;
  }

  long expect_ibarrier = (iters + IBARRIER_EVERY - 1) / IBARRIER_EVERY;
  mt_log("parameters: ranks %d, iterations %ld, work %ld, split size %d", np, iters, work, snp);
  mt_log("digest %016llx, computation %.6e", (unsigned long long)digest, acc);
  mt_check_int("Iallreduce results", n_ared, iters);
  mt_check_int("Ibcast results", n_bcast, iters);
  mt_check_int("rounds of blocking collectives", n_blocking, iters / BLOCKING_EVERY);
  mt_check_int("Ibarriers", n_ibarrier, expect_ibarrier);
  mt_check_int("results different from their closed form", bad, 0);

  int status = mt_report();
  double elapsed = MPI_Wtime() - t_start;
  if (me == 0)
    fprintf(stderr, "inflight_coll: %ld iterations in %.3f s (rank 0: %ld MPI_Test calls)\n", iters,
            elapsed, tests_done);
  MPI_Type_free(&pair_strided);
  MPI_Type_free(&pair_resized);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  free(members);
  free(bc);
  free(field);
  free(a2a_send);
  free(a2a_recv);
  free(gathered);
  MPI_Finalize();
  return status;
}
