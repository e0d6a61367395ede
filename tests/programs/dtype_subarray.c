/*
 * dtype_subarray.c - array-shaped datatypes: Type_create_subarray in C and Fortran order
 * (2-D and 3-D) and Type_create_darray (BLOCK, CYCLIC(k), NONE distributions over a 1x2 and a
 * 2x1 process grid), with their extents and envelopes. Subarrays travel between the two ranks
 * in both directions; each rank extracts its darray piece of a global array (every element
 * holds its global index) with a send-to-self, and the pieces are also gathered on rank 0.
 * Ranks: 2.
 */
#include "mpitest.h"

#define MAXE 256

/* send `type` from a buffer whose element i holds i to myself, receive contiguous ints and
 * compare them with the n expected indices */
static void extract_self(const char *what, MPI_Datatype type, const int *exp, int n)
{
  int g[MAXE], out[MAXE];
  for (int i = 0; i < MAXE; i++)
    g[i] = i;
  MPI_Status st;
  int cnt;
  MPI_Sendrecv(g, 1, type, mt_.rank, 0, out, MAXE, MPI_INT, mt_.rank, 0, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, MPI_INT, &cnt);
  if (mt_check(cnt == n, "%s: %d elements", what, cnt))
    mt_check_ints(what, out, exp, n);
}

static void subarray_between_ranks(const char *name, MPI_Datatype t, const int *sel, int n)
{
  char what[128];
  int g[MAXE];
  if (mt_.rank == 0) {
    for (int i = 0; i < MAXE; i++)
      g[i] = i;
    MPI_Send(g, 1, t, 1, 1, MPI_COMM_WORLD);
    for (int i = 0; i < MAXE; i++)
      g[i] = -1;
    MPI_Recv(g, 1, t, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int exp[MAXE];
    for (int i = 0; i < MAXE; i++)
      exp[i] = -1;
    for (int k = 0; k < n; k++)
      exp[sel[k]] = -100 - k;
    snprintf(what, sizeof what, "%s: received into subarray (whole array)", name);
    mt_check_ints(what, g, exp, MAXE);
  } else {
    MPI_Recv(g, n, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    snprintf(what, sizeof what, "%s: sent from subarray", name);
    mt_check_ints(what, g, sel, n);
    for (int k = 0; k < n; k++)
      g[k] = -100 - k;
    MPI_Send(g, n, MPI_INT, 0, 2, MPI_COMM_WORLD);
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dtype_subarray");
  mt_require_size(2);
  const int me = mt_.rank;
  int ni, na, nd, comb;
  MPI_Aint lb, ext;

  /* 2-D C order: 6x8 array, 3x4 block starting at (2,3) */
  {
    MPI_Datatype t;
    int sizes[2] = {6, 8}, sub[2] = {3, 4}, start[2] = {2, 3};
    MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[12], k = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++)
        sel[k++] = (2 + i) * 8 + 3 + j;
    MPI_Type_get_extent(t, &lb, &ext);
    mt_check(lb == 0 && ext == 48 * (MPI_Aint)sizeof(int),
             "C subarray extent = whole array (%ld bytes)", (long)ext);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    mt_check(comb == MPI_COMBINER_SUBARRAY && ni == 3 * 2 + 2 && na == 0 && nd == 1,
             "subarray envelope: %d ints %d addrs %d types", ni, na, nd);
    int ints[8];
    MPI_Aint a[1];
    MPI_Datatype ty[1];
    MPI_Type_get_contents(t, 8, 0, 1, ints, a, ty);
    mt_check_ints("subarray contents (ndims, sizes, subsizes, starts, order)", ints,
                  (int[]){2, 6, 8, 3, 4, 2, 3, MPI_ORDER_C}, 8);
    subarray_between_ranks("C subarray 3x4 @ (2,3) of 6x8", t, sel, 12);
    MPI_Type_free(&t);
  }

  /* 2-D Fortran order: 8x6 (column-major), 4x3 block at (3,2): element (i,j) is i + 8j */
  {
    MPI_Datatype t;
    int sizes[2] = {8, 6}, sub[2] = {4, 3}, start[2] = {3, 2};
    MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[12], k = 0;
    for (int j = 0; j < 3; j++)
      for (int i = 0; i < 4; i++)
        sel[k++] = (3 + i) + 8 * (2 + j);
    subarray_between_ranks("Fortran subarray 4x3 @ (3,2) of 8x6", t, sel, 12);
    MPI_Type_free(&t);
  }

  /* 3-D C order: 4x5x6, 2x2x3 block at (1,2,1) */
  {
    MPI_Datatype t;
    int sizes[3] = {4, 5, 6}, sub[3] = {2, 2, 3}, start[3] = {1, 2, 1};
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[12], k = 0;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++)
        for (int l = 0; l < 3; l++)
          sel[k++] = ((1 + i) * 5 + (2 + j)) * 6 + (1 + l);
    subarray_between_ranks("3-D subarray 2x2x3 @ (1,2,1) of 4x5x6", t, sel, 12);
    MPI_Type_free(&t);
  }

  /* darray 1: 8x6 ints, dim0 not distributed, dim1 CYCLIC(2) over 2 processes (grid 1x2):
   * rank 0 owns columns 0,1,4,5 and rank 1 owns columns 2,3 */
  {
    MPI_Datatype t;
    int gs[2] = {8, 6}, db[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC};
    int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {1, 2};
    MPI_Type_create_darray(2, me, 2, gs, db, da, ps, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    int exp[48], n = 0;
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 6; j++)
        if ((j / 2) % 2 == me)
          exp[n++] = i * 6 + j;
    extract_self("darray NONE x CYCLIC(2) on 1x2 grid", t, exp, n);
    int size;
    MPI_Type_size(t, &size);
    MPI_Type_get_extent(t, &lb, &ext);
    mt_check(size == n * 4 && lb == 0 && ext == 48 * 4, "darray size %d extent %ld", size,
             (long)ext);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    mt_check(comb == MPI_COMBINER_DARRAY && ni == 4 * 2 + 4,
             "darray envelope: combiner DARRAY, %d ints", ni);

    /* gather everyone's piece on rank 0 and reassemble the global array */
    int piece[48], cnts[2], dsp[2] = {0, 0}, all[48];
    memcpy(piece, exp, sizeof(int) * (size_t)n);
    MPI_Gather(&n, 1, MPI_INT, cnts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me == 0)
      dsp[1] = cnts[0];
    MPI_Gatherv(piece, n, MPI_INT, all, cnts, dsp, MPI_INT, 0, MPI_COMM_WORLD);
    if (me == 0) {
      /* receiving the pieces back through each rank's darray type rebuilds 0..47 */
      int g[48], ok = 1;
      for (int i = 0; i < 48; i++)
        g[i] = -1;
      MPI_Datatype t1;
      MPI_Type_create_darray(2, 1, 2, gs, db, da, ps, MPI_ORDER_C, MPI_INT, &t1);
      MPI_Type_commit(&t1);
      MPI_Sendrecv(all, cnts[0], MPI_INT, 0, 3, g, 1, t, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Sendrecv(all + cnts[0], cnts[1], MPI_INT, 0, 4, g, 1, t1, 0, 4, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      for (int i = 0; i < 48; i++)
        if (g[i] != i)
          ok = 0;
      mt_check(ok, "global 8x6 array reassembled from both darray pieces");
      MPI_Type_free(&t1);
    }
    MPI_Type_free(&t);
  }

  /* darray 2: 5x7 ints, dim0 CYCLIC(1) over 2 processes, dim1 BLOCK over 1 (grid 2x1):
   * rank 0 owns rows 0,2,4 and rank 1 owns rows 1,3 */
  {
    MPI_Datatype t;
    int gs[2] = {5, 7}, db[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
    int da[2] = {1, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 1};
    MPI_Type_create_darray(2, me, 2, gs, db, da, ps, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    int exp[35], n = 0;
    for (int i = me; i < 5; i += 2)
      for (int j = 0; j < 7; j++)
        exp[n++] = i * 7 + j;
    extract_self("darray CYCLIC(1) x BLOCK on 2x1 grid", t, exp, n);
    MPI_Type_free(&t);
  }

  /* darray 3: 10 ints in 1-D, BLOCK over 2 in Fortran order: 5 each */
  {
    MPI_Datatype t;
    int gs[1] = {10}, db[1] = {MPI_DISTRIBUTE_BLOCK}, da[1] = {MPI_DISTRIBUTE_DFLT_DARG},
        ps[1] = {2};
    MPI_Type_create_darray(2, me, 1, gs, db, da, ps, MPI_ORDER_FORTRAN, MPI_INT, &t);
    MPI_Type_commit(&t);
    int exp[5];
    for (int i = 0; i < 5; i++)
      exp[i] = me * 5 + i;
    extract_self("1-D darray BLOCK (Fortran order)", t, exp, 5);
    MPI_Type_free(&t);
  }

  return mt_end();
}
