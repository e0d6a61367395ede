/*
 * rma_shared.c - MPI-3 shared-memory windows: Comm_split_type(MPI_COMM_TYPE_SHARED),
 * Win_allocate_shared (contiguous by default, different sizes per rank), Win_shared_query
 * for every rank's segment (size, disp_unit, and that segments are laid out contiguously),
 * direct load/store into a neighbour's segment synchronised with lock_all + Win_sync +
 * Barrier, and a Put through the same window; a window of one int per rank (parts not
 * 16-byte aligned) with its attributes and a Put in a fence epoch; a window where rank 1
 * gives no memory (no address for it).
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma_shared");
  mt_require_size(2);
  const int me = mt_.rank;

  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nsz, nrk;
  MPI_Comm_size(node, &nsz);
  MPI_Comm_rank(node, &nrk);
  mt_check(nsz == 2 && nrk == me, "shared-memory communicator: size %d rank %d", nsz, nrk);

  /* rank r contributes (r + 1) * 8 ints */
  const int mine = (me + 1) * 8;
  int *base;
  MPI_Win win;
  MPI_Win_allocate_shared((MPI_Aint)mine * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, node,
                          &base, &win);

  int *seg[2];
  for (int r = 0; r < 2; r++) {
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(win, r, &sz, &du, &seg[r]);
    mt_check(sz == (MPI_Aint)((r + 1) * 8 * sizeof(int)) && du == (int)sizeof(int),
             "shared_query(%d): size %ld bytes, disp_unit %d", r, (long)sz, du);
  }
  mt_check(seg[me] == base, "shared_query of myself returns my base pointer");
  mt_check(seg[1] == seg[0] + 8, "segments are contiguous (rank 1 follows rank 0's 8 ints)");

  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  for (int i = 0; i < mine; i++)
    base[i] = me * 100 + i;
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);

  /* read the neighbour's segment with plain loads */
  int other = 1 - me, n_other = (other + 1) * 8;
  long sum = 0, esum = 0;
  for (int i = 0; i < n_other; i++) {
    sum += seg[other][i];
    esum += other * 100 + i;
  }
  mt_check_int("sum of the neighbour's segment via direct loads", sum, esum);

  /* store into the neighbour's segment directly, element 3 */
  seg[other][3] = -(me + 1);
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);
  mt_check_int("my element 3 after the neighbour's direct store", base[3], -(other + 1));

  /* a Put through the window into the neighbour's element 5 */
  int pv = 5000 + me;
  MPI_Put(&pv, 1, MPI_INT, other, 5, 1, MPI_INT, win);
  MPI_Win_flush(other, win);
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);
  mt_check_int("my element 5 after the neighbour's put", base[5], 5000 + other);
  MPI_Win_unlock_all(win);

  /* whole shared array seen identically from both ranks */
  {
    int all[24], ok = 1;
    memcpy(all, seg[0], sizeof all);
    for (int i = 0; i < 24; i++) {
      int r = i < 8 ? 0 : 1, j = i < 8 ? i : i - 8;
      int e = r * 100 + j;
      if (j == 3)
        e = -((1 - r) + 1);
      if (j == 5)
        e = 5000 + (1 - r);
      if (all[i] != e)
        ok = 0;
    }
    mt_check(ok, "the whole 24-int shared array has the expected contents");
  }

  MPI_Barrier(node);
  MPI_Win_free(&win);

  /* one int per rank: rank 1's part is 4 bytes past a 16-byte boundary (MPICH 4.0.2 puts an
   * operation on such a window base at the boundary; mana's real window must not) */
  {
    int *one_base;
    MPI_Win w1;
    MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &one_base, &w1);
    *one_base = -1;
    MPI_Aint *sz;
    int *du, flag;
    void *b;
    MPI_Win_get_attr(w1, MPI_WIN_BASE, &b, &flag);
    MPI_Win_get_attr(w1, MPI_WIN_SIZE, &sz, &flag);
    MPI_Win_get_attr(w1, MPI_WIN_DISP_UNIT, &du, &flag);
    mt_check(b == one_base && *sz == (MPI_Aint)sizeof(int) && *du == (int)sizeof(int),
             "one-int shared window: base, size %ld, disp_unit %d", (long)*sz, *du);
    int v = 70 + me;
    MPI_Win_fence(0, w1);
    MPI_Put(&v, 1, MPI_INT, 1 - me, 0, 1, MPI_INT, w1);
    MPI_Win_fence(0, w1);
    mt_check_int("one-int shared window: the neighbour's put", *one_base, 70 + (1 - me));
    MPI_Win_free(&w1);
  }

  /* rank 1 gives no memory: it has no address, in its own base and in every query (MPICH's
   * rma/win_shared_noncontig_put asserts it) */
  {
    int *zb;
    MPI_Win wz;
    MPI_Win_allocate_shared(me == 1 ? 0 : 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &zb,
                            &wz);
    mt_check((zb == NULL) == (me == 1), "zero-size part: own base null only on rank 1");
    for (int r = 0; r < 2; r++) {
      MPI_Aint qs = -1;
      int qd = 0;
      int *qb = NULL;
      MPI_Win_shared_query(wz, r, &qs, &qd, &qb);
      mt_check((qb == NULL) == (r == 1) && qs == (r == 1 ? 0 : 8 * (MPI_Aint)sizeof(int)),
               "zero-size part: query of rank %d: size %ld, base null %d", r, (long)qs, qb == NULL);
    }
    MPI_Win_free(&wz);
  }
  MPI_Comm_free(&node);
  return mt_end();
}
