/*
 * std_coll_reduce.c - MINLOC/MAXLOC reductions, a user-defined commutative reduction on a
 * derived type, a non-commutative user-defined segmented scan, and all-to-all exchanges.
 *
 * Source: MPI-3.1, chapter 5 (Collective Communication):
 *   section 5.9.4 "MINLOC and MAXLOC", its three examples: R1 for each of 30 doubles the
 *     largest value and the rank holding it (MPI_DOUBLE_INT, MPI_MAXLOC); R2 the same in the
 *     Fortran form, with the rank coerced to a double (MPI_2DOUBLE_PRECISION); R3 the global
 *     minimum of non-empty local arrays with the rank and the local index encoded in one int
 *     (MPI_FLOAT_INT, MPI_MINLOC);
 *   section 5.9.5 "Example of User-defined Reduce", the first example: R4 the product of 100
 *     complex numbers (MPI_Type_contiguous of 2 doubles, MPI_Op_create commutative);
 *   section 5.11.3 "Example using MPI_SCAN": R5 a segmented scan with a non-commutative
 *     user operation on a struct {double, int} (MPI_Type_create_struct);
 *   plus, not an example of the standard but the semantics of section 5.8 (All-to-All
 *   Scatter/Gather) and of section 5.12 (the nonblocking variants): R6 the complex product
 *   again with MPI_Iallreduce, computation overlapping it; R7 MPI_Alltoall, MPI_Alltoallv
 *   with counts that vary by pair, and MPI_Alltoallw transposing a block-distributed matrix
 *   with a column type per destination.
 * Adaptations: the elided data are filled deterministically (the values have ties, so the
 * rule "the first rank with the maximum" is exercised); every result is compared with a
 * value computed locally from every rank's formula.  ROUNDS rounds, the root moving.
 * Ranks: 2 or more (R7's matrix is 4*size columns).
 */
#include "../programs/mpitest.h"

#define ROUNDS 8
#define LEN 1000

typedef struct {
  double real, imag;
} Complex;

static void myProd(void *inP, void *inoutP, int *len, MPI_Datatype *dptr)
{
  (void)dptr;
  Complex c;
  Complex *in = (Complex *)inP, *inout = (Complex *)inoutP;
  for (int i = 0; i < *len; ++i) {
    c.real = inout->real * in->real - inout->imag * in->imag;
    c.imag = inout->real * in->imag + inout->imag * in->real;
    *inout = c;
    in++;
    inout++;
  }
}

typedef struct {
  double val;
  int log;
} SegScanPair;

static void segScan(void *inP, void *inoutP, int *len, MPI_Datatype *dptr)
{
  (void)dptr;
  SegScanPair *in = inP, *inout = inoutP, c;
  for (int i = 0; i < *len; ++i) {
    if (in->log == inout->log)
      c.val = in->val + inout->val;
    else
      c.val = inout->val;
    c.log = inout->log;
    *inout = c;
    in++;
    inout++;
  }
}

static double ain_of(int rank, int round, int i)
{
  return (double)((rank * 7 + i * 3 + round) % 5);
}
static Complex cval(int rank, int round, int k)
{
  Complex c = {(double)(1 + (rank + k + round) % 3), (double)((rank * k + round) % 2)};
  return c;
}
static SegScanPair seg_of(int rank, int round, int k)
{
  SegScanPair p = {(double)(rank + 1 + k), ((rank + round + k) / 2) % 2};
  return p;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_coll_reduce");
  int myrank = mt_.rank, gsize = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  int bad[9] = {0};

  MPI_Op myOp, segOp;
  MPI_Datatype ctype, sspair;
  MPI_Type_contiguous(2, MPI_DOUBLE, &ctype);
  MPI_Type_commit(&ctype);
  MPI_Op_create(myProd, 1, &myOp);
  {
    SegScanPair a;
    MPI_Datatype type[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Aint disp[2], base;
    int blocklen[2] = {1, 1};
    MPI_Get_address(&a, disp);
    MPI_Get_address(&a.log, disp + 1);
    base = disp[0];
    for (int i = 0; i < 2; ++i)
      disp[i] -= base;
    MPI_Type_create_struct(2, blocklen, disp, type, &sspair);
    MPI_Type_commit(&sspair);
  }
  MPI_Op_create(segScan, 0, &segOp);

  for (int round = 0; round < ROUNDS; round++) {
    int root = (round * 3) % gsize;

    /* R1: MAXLOC over 30 doubles with MPI_DOUBLE_INT */
    {
      double ain[30], aout[30];
      int ind[30];
      struct {
        double val;
        int rank;
      } in[30], out[30];
      for (int i = 0; i < 30; ++i) {
        ain[i] = ain_of(myrank, round, i);
        in[i].val = ain[i];
        in[i].rank = myrank;
      }
      MPI_Reduce(in, out, 30, MPI_DOUBLE_INT, MPI_MAXLOC, root, comm);
      if (myrank == root) {
        for (int i = 0; i < 30; ++i) {
          aout[i] = out[i].val;
          ind[i] = out[i].rank;
          double best = -1;
          int who = -1;
          for (int r = 0; r < gsize; r++)
            if (ain_of(r, round, i) > best) {
              best = ain_of(r, round, i);
              who = r;
            }
          bad[0] += aout[i] != best || ind[i] != who;
        }
      }
    }
    /* R2: the Fortran form, pairs of doubles */
    {
      double in[30][2], out[30][2];
      for (int i = 0; i < 30; i++) {
        in[i][0] = ain_of(myrank, round, i);
        in[i][1] = myrank;
      }
      MPI_Reduce(in, out, 30, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, root, comm);
      if (myrank == root)
        for (int i = 0; i < 30; ++i) {
          double best = -1;
          int who = -1;
          for (int r = 0; r < gsize; r++)
            if (ain_of(r, round, i) > best) {
              best = ain_of(r, round, i);
              who = r;
            }
          bad[1] += out[i][0] != best || (int)out[i][1] != who;
        }
    }
    /* R3: global MINLOC with rank and local index in one int */
    {
      static float val[LEN];
      int count = 100 + 37 * myrank + round, minrank, minindex;
      float minval;
      struct {
        float value;
        int index;
      } in, out;
      for (int i = 0; i < count; i++)
        val[i] = (float)((i * 37 + myrank * 11 + round * 5) % 1009) + 0.25f * (float)myrank;
      in.value = val[0];
      in.index = 0;
      for (int i = 1; i < count; i++)
        if (in.value > val[i]) {
          in.value = val[i];
          in.index = i;
        }
      in.index = myrank * LEN + in.index;
      MPI_Reduce(&in, &out, 1, MPI_FLOAT_INT, MPI_MINLOC, root, comm);
      if (myrank == root) {
        minval = out.value;
        minrank = out.index / LEN;
        minindex = out.index % LEN;
        float best = 1e30f;
        int br = -1, bi = -1;
        for (int r = 0; r < gsize; r++)
          for (int i = 0; i < 100 + 37 * r + round; i++) {
            float v = (float)((i * 37 + r * 11 + round * 5) % 1009) + 0.25f * (float)r;
            if (v < best) {
              best = v;
              br = r;
              bi = i;
            }
          }
        bad[2] += minval != best || minrank != br || minindex != bi;
      }
    }
    /* R4: product of 100 complex numbers */
    Complex want[100];
    for (int k = 0; k < 100; k++) {
      Complex p = {1, 0};
      for (int r = 0; r < gsize; r++) {
        Complex x = cval(r, round, k), c;
        c.real = p.real * x.real - p.imag * x.imag;
        c.imag = p.real * x.imag + p.imag * x.real;
        p = c;
      }
      want[k] = p;
    }
    {
      Complex a[100], answer[100];
      for (int k = 0; k < 100; k++)
        a[k] = cval(myrank, round, k);
      MPI_Reduce(a, answer, 100, ctype, myOp, root, comm);
      if (myrank == root)
        for (int k = 0; k < 100; k++)
          bad[3] += answer[k].real != want[k].real || answer[k].imag != want[k].imag;
    }
    /* R5: segmented scan, one pair and a vector of 8 pairs */
    {
      SegScanPair a[8], answer[8];
      for (int k = 0; k < 8; k++)
        a[k] = seg_of(myrank, round, k);
      MPI_Scan(a, answer, 1, sspair, segOp, comm);
      MPI_Scan(a, answer + 1, 7, sspair, segOp, comm);
      /* answer[0] is the scan of element 0; answer[1..7] of elements 0..6 */
      for (int k = 0; k < 8; k++) {
        int e = k == 0 ? 0 : k - 1;
        double s = 0;
        int lg = seg_of(myrank, round, e).log;
        for (int r = myrank; r >= 0 && seg_of(r, round, e).log == lg; r--)
          s += seg_of(r, round, e).val;
        bad[4] += answer[k].val != s || answer[k].log != lg;
      }
    }
    /* R6: the complex product with MPI_Iallreduce, overlapping computation */
    {
      Complex a[100], answer[100];
      MPI_Request req;
      for (int k = 0; k < 100; k++)
        a[k] = cval(myrank, round, k);
      MPI_Iallreduce(a, answer, 100, ctype, myOp, comm, &req);
      double busy = 0;
      for (int k = 0; k < 1000; k++)
        busy += k % 7;
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      bad[5] += busy != 2997.0;
      for (int k = 0; k < 100; k++)
        bad[5] += answer[k].real != want[k].real || answer[k].imag != want[k].imag;
    }
    /* R7: alltoall, alltoallv, alltoallw */
    {
      int *sb = mt_alloc(sizeof(int) * (size_t)gsize * 8),
          *rb = mt_alloc(sizeof(int) * (size_t)gsize * 8);
      for (int j = 0; j < gsize; j++)
        for (int k = 0; k < 8; k++)
          sb[j * 8 + k] = myrank * 10000 + j * 100 + k + round;
      MPI_Alltoall(sb, 8, MPI_INT, rb, 8, MPI_INT, comm);
      for (int i = 0; i < gsize; i++)
        for (int k = 0; k < 8; k++)
          bad[6] += rb[i * 8 + k] != i * 10000 + myrank * 100 + k + round;

      /* alltoallv: process i sends 1+(i+j+round)%4 ints to j, packed at sdispls */
      int *sc = mt_alloc(sizeof(int) * (size_t)gsize), *sd = mt_alloc(sizeof(int) * (size_t)gsize);
      int *rc = mt_alloc(sizeof(int) * (size_t)gsize), *rd = mt_alloc(sizeof(int) * (size_t)gsize);
      int so = 0, ro = 0;
      for (int j = 0; j < gsize; j++) {
        sc[j] = 1 + (myrank + j + round) % 4;
        sd[j] = so;
        so += sc[j] + 1; /* a gap of one int */
        rc[j] = 1 + (j + myrank + round) % 4;
        rd[j] = ro;
        ro += rc[j];
      }
      int *vs = mt_alloc(sizeof(int) * (size_t)so), *vr = mt_alloc(sizeof(int) * (size_t)ro);
      for (int j = 0; j < gsize; j++)
        for (int k = 0; k < sc[j]; k++)
          vs[sd[j] + k] = myrank * 1000 + j * 10 + k;
      MPI_Alltoallv(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, comm);
      for (int i = 0; i < gsize; i++)
        for (int k = 0; k < rc[i]; k++)
          bad[7] += vr[rd[i] + k] != i * 1000 + myrank * 10 + k;

      /* alltoallw: a 4 x (4*gsize) matrix per process, rows owned by process; the
       * transpose block to j is the 4x4 submatrix at columns 4j, sent column by column with
       * a vector type and received contiguously (each column becomes a row). */
      int ncol = 4 * gsize;
      int *m = mt_alloc(sizeof(int) * 4 * (size_t)ncol),
          *t = mt_alloc(sizeof(int) * 4 * (size_t)ncol);
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < ncol; c++)
          m[r * ncol + c] = (myrank * 4 + r) * 1000 + c + round;
      MPI_Datatype col, col1, *st = mt_alloc(sizeof(MPI_Datatype) * (size_t)gsize);
      MPI_Datatype *rt = mt_alloc(sizeof(MPI_Datatype) * (size_t)gsize);
      MPI_Type_vector(4, 1, ncol, MPI_INT, &col);
      MPI_Type_create_resized(col, 0, sizeof(int), &col1);
      MPI_Type_commit(&col1);
      for (int j = 0; j < gsize; j++) {
        sc[j] = 4;
        sd[j] = (int)(4 * j * sizeof(int));
        st[j] = col1;
        rc[j] = 16;
        rd[j] = (int)(16 * j * sizeof(int));
        rt[j] = MPI_INT;
      }
      MPI_Alltoallw(m, sc, sd, st, t, rc, rd, rt, comm);
      /* t now holds 4 rows (global columns 4*myrank..4*myrank+3) of the transpose, each
       * 4*gsize long, as blocks of 4 from every process */
      for (int i = 0; i < gsize; i++)
        for (int c = 0; c < 4; c++)
          for (int r = 0; r < 4; r++)
            bad[8] += t[16 * i + 4 * c + r] != (i * 4 + r) * 1000 + 4 * myrank + c + round;
      MPI_Type_free(&col);
      MPI_Type_free(&col1);
      free(st);
      free(rt);
      free(m);
      free(t);
      free(sc);
      free(sd);
      free(rc);
      free(rd);
      free(vs);
      free(vr);
      free(sb);
      free(rb);
    }
  }
  const char *names[9] = {"R1 maxloc double_int",  "R2 maxloc 2double_precision",
                          "R3 minloc float_int",   "R4 complex product reduce",
                          "R5 segmented scan",     "R6 complex product iallreduce",
                          "R7 alltoall",           "R7 alltoallv",
                          "R7 alltoallw transpose"};
  for (int i = 0; i < 9; i++) {
    char what[96];
    snprintf(what, sizeof what, "%s: wrong results", names[i]);
    mt_check_int(what, bad[i], 0);
  }
  MPI_Op_free(&myOp);
  MPI_Op_free(&segOp);
  MPI_Type_free(&ctype);
  MPI_Type_free(&sspair);
  mt_allreduce_steps(4);
  return mt_end();
}
