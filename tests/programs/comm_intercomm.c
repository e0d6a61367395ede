/*
 * comm_intercomm.c - intercommunicators: two groups A = {0,2} and B = {1,3} (split of world by
 * parity), Intercomm_create, Comm_test_inter, Comm_size/Comm_remote_size, Comm_remote_group,
 * point-to-point across the intercomm, collectives on the intercomm (Bcast with MPI_ROOT /
 * MPI_PROC_NULL, Allreduce, Barrier), Comm_dup of an intercomm, and Intercomm_merge with the
 * high flag ordering B before A.
 * Ranks: 4.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_intercomm");
  mt_require_size(4);
  const int me = mt_.rank;
  const int inA = me % 2 == 0;
  int flag, sz, rsz, lrank;

  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &local);
  MPI_Comm_rank(local, &lrank);
  /* local leader is local rank 0 (world 0 for A, world 1 for B); remote leader in world */
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? 1 : 0, 42, &inter);

  MPI_Comm_test_inter(inter, &flag);
  mt_check_int("comm_test_inter(inter)", flag, 1);
  MPI_Comm_test_inter(local, &flag);
  mt_check_int("comm_test_inter(local)", flag, 0);
  MPI_Comm_size(inter, &sz);
  MPI_Comm_remote_size(inter, &rsz);
  mt_check(sz == 2 && rsz == 2, "local size %d, remote size %d", sz, rsz);
  {
    int r;
    MPI_Comm_rank(inter, &r);
    mt_check_int("rank in intercomm = rank in local group", r, lrank);
  }

  /* the remote group, translated to world ranks */
  {
    MPI_Group rg, wg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int idx[2] = {0, 1}, wr[2];
    MPI_Group_translate_ranks(rg, 2, idx, wg, wr);
    int exp[2] = {inA ? 1 : 0, inA ? 3 : 2};
    mt_check_ints("remote group in world ranks", wr, exp, 2);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
  }

  /* point-to-point: local rank i talks to remote rank i */
  {
    int out = 1000 + me, in = -1;
    MPI_Status st;
    MPI_Sendrecv(&out, 1, MPI_INT, lrank, 5, &in, 1, MPI_INT, lrank, 5, inter, &st);
    int partner = inA ? me + 1 : me - 1;
    mt_check(in == 1000 + partner && st.MPI_SOURCE == lrank,
             "intercomm sendrecv got %d from remote rank %d", in, st.MPI_SOURCE);
  }

  /* Bcast from A's rank 1 (world 2) to all of B */
  {
    int v[3] = {0, 0, 0};
    if (inA) {
      if (lrank == 1) {
        v[0] = 7;
        v[1] = 8;
        v[2] = 9;
      }
      MPI_Bcast(v, 3, MPI_INT, lrank == 1 ? MPI_ROOT : MPI_PROC_NULL, inter);
      if (lrank == 0)
        mt_check(v[0] == 0, "bcast: non-root member of root group untouched");
      else
        mt_log("bcast root (MPI_ROOT)");
    } else {
      MPI_Bcast(v, 3, MPI_INT, 1, inter);
      mt_check_ints("bcast received from remote rank 1", v, (int[]){7, 8, 9}, 3);
    }
  }

  /* Allreduce on an intercomm: each side receives the reduction of the *other* side */
  {
    int v = inA ? 10 * (me + 1) : me + 1, out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, inter);
    /* A = {0,2} contributes 10 + 30 = 40; B = {1,3} contributes 2 + 4 = 6 */
    mt_check_int("intercomm allreduce = sum over remote group", out, inA ? 6 : 40);
  }

  MPI_Barrier(inter);
  mt_log("intercomm barrier passed");

  /* Comm_dup of an intercomm is an intercomm with the same shape */
  {
    MPI_Comm d;
    MPI_Comm_dup(inter, &d);
    MPI_Comm_test_inter(d, &flag);
    MPI_Comm_remote_size(d, &rsz);
    int res;
    MPI_Comm_compare(inter, d, &res);
    mt_check(flag == 1 && rsz == 2 && res == MPI_CONGRUENT,
             "dup of intercomm: inter %d, remote size %d, congruent %d", flag, rsz,
             res == MPI_CONGRUENT);
    MPI_Comm_free(&d);
  }

  /* Merge: B passes high=0, A passes high=1, so B's ranks come first */
  {
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, inA ? 1 : 0, &merged);
    int r;
    MPI_Comm_rank(merged, &r);
    MPI_Comm_size(merged, &sz);
    int exp = inA ? 2 + lrank : lrank;
    mt_check(sz == 4 && r == exp, "merged (B low): size %d rank %d", sz, r);
    MPI_Comm_test_inter(merged, &flag);
    mt_check_int("merged is intra", flag, 0);
    int all[4];
    MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, merged);
    mt_check_ints("merged order in world ranks", all, (int[]){1, 3, 0, 2}, 4);
    MPI_Comm_free(&merged);
  }

  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  return mt_end();
}
