/*
 * user_ops.c - user-defined reduction operations (MPI_Op_create):
 *   - commutative "max of absolute value" on MPI_INT, in Reduce / Allreduce / Iallreduce;
 *   - non-commutative 2x2 integer matrix product on a derived type (contiguous 4 ints), in
 *     Reduce (non-zero root), Allreduce, Iallreduce, Scan and Exscan, so the rank order of the
 *     operands matters; the callback also checks it is handed the same datatype handle the
 *     program passed in;
 *   - a commutative op on a struct type {double; int} (sum / max);
 *   - Reduce_local, Op_commutative, Op_free.
 * Ranks: 3.
 */
#include "mpitest.h"
#include <stddef.h>

static MPI_Datatype mat_type, rec_type;
static int bad_type_calls; /* callbacks that got an unexpected datatype handle */

static void absmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  const int *a = in;
  int *b = inout;
  if (*dt != MPI_INT)
    bad_type_calls++;
  for (int i = 0; i < *len; i++) {
    int x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
    b[i] = x > y ? x : y;
  }
}

/* inout = in x inout (in holds the lower-ranked operand) */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  const int *a = in;
  int *b = inout;
  if (*dt != mat_type)
    bad_type_calls++;
  for (int k = 0; k < *len; k++, a += 4, b += 4) {
    int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                a[2] * b[1] + a[3] * b[3]};
    memcpy(b, r, sizeof r);
  }
}

struct rec {
  double v;
  int i;
};

static void recop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  const struct rec *a = in;
  struct rec *b = inout;
  if (*dt != rec_type)
    bad_type_calls++;
  for (int k = 0; k < *len; k++) {
    b[k].v += a[k].v;
    if (a[k].i > b[k].i)
      b[k].i = a[k].i;
  }
}

static void mat_of(int r, int m[4])
{
  m[0] = r + 1;
  m[1] = 1;
  m[2] = 1;
  m[3] = r % 2 ? -1 : 0;
}

static void mat_mul(const int a[4], const int b[4], int out[4])
{
  int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
              a[2] * b[1] + a[3] * b[3]};
  memcpy(out, r, sizeof r);
}

/* product M_lo x ... x M_hi (identity if empty) */
static void prefix(int lo, int hi, int out[4])
{
  int acc[4] = {1, 0, 0, 1};
  for (int r = lo; r <= hi; r++) {
    int m[4];
    mat_of(r, m);
    mat_mul(acc, m, acc);
  }
  memcpy(out, acc, sizeof acc);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("user_ops");
  const int me = mt_.rank, np = mt_.size;
  MPI_Comm w = MPI_COMM_WORLD;
  int flag;

  MPI_Op op_abs, op_mat, op_rec;
  MPI_Op_create(absmax, 1, &op_abs);
  MPI_Op_create(matmul, 0, &op_mat);
  MPI_Op_create(recop, 1, &op_rec);
  MPI_Op_commutative(op_abs, &flag);
  mt_check_int("op_commutative(absmax)", flag, 1);
  MPI_Op_commutative(op_mat, &flag);
  mt_check_int("op_commutative(matmul)", flag, 0);
  MPI_Op_commutative(MPI_SUM, &flag);
  mt_check_int("op_commutative(MPI_SUM)", flag, 1);

  MPI_Type_contiguous(4, MPI_INT, &mat_type);
  MPI_Type_commit(&mat_type);
  {
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {offsetof(struct rec, v), offsetof(struct rec, i)};
    MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Datatype tmp;
    MPI_Type_create_struct(2, bl, dp, ty, &tmp);
    MPI_Type_create_resized(tmp, 0, sizeof(struct rec), &rec_type);
    MPI_Type_commit(&rec_type);
    MPI_Type_free(&tmp);
  }

  /* commutative absmax */
  {
    int v[4] = {me * (me % 2 ? -3 : 3), -me, 5 - me, -(10 + me)}, out[4] = {0}, e[4] = {0};
    for (int r = 0; r < np; r++) {
      int x[4] = {r * 3, r, abs(5 - r), 10 + r};
      for (int i = 0; i < 4; i++)
        if (x[i] > e[i])
          e[i] = x[i];
    }
    MPI_Allreduce(v, out, 4, MPI_INT, op_abs, w);
    mt_check_ints("allreduce absmax", out, e, 4);
    int ro[4] = {0};
    MPI_Reduce(v, ro, 4, MPI_INT, op_abs, np - 1, w);
    if (me == np - 1)
      mt_check_ints("reduce absmax at last rank", ro, e, 4);
    int io[4] = {0};
    MPI_Request rq;
    MPI_Iallreduce(v, io, 4, MPI_INT, op_abs, w, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    mt_check_ints("iallreduce absmax", io, e, 4);
  }

  /* non-commutative matrix product, 2 matrices per rank: M_r and N_r = [[1, r+2], [r, 1]] */
  {
    int in[8], out[8], e[8], all[4];
    mat_of(me, in);
    in[4] = 1;
    in[5] = me + 2;
    in[6] = me;
    in[7] = 1;
    prefix(0, np - 1, all);
    memcpy(e, all, sizeof all);
    int acc[4] = {1, 0, 0, 1};
    for (int r = 0; r < np; r++) {
      int n[4] = {1, r + 2, r, 1};
      mat_mul(acc, n, acc);
    }
    memcpy(e + 4, acc, sizeof acc);
    {
      /* the operands really do not commute: reversed order gives a different answer */
      int rev[4] = {1, 0, 0, 1};
      for (int r = np - 1; r >= 0; r--) {
        int m[4];
        mat_of(r, m);
        mat_mul(rev, m, rev);
      }
      mt_check(memcmp(rev, all, sizeof rev) != 0, "matrices chosen so that order matters");
    }
    MPI_Allreduce(in, out, 2, mat_type, op_mat, w);
    mt_check_ints("allreduce matmul (M0..Mn-1, N0..Nn-1)", out, e, 8);
    memset(out, 0, sizeof out);
    MPI_Reduce(in, out, 2, mat_type, op_mat, 1 % np, w);
    if (me == 1 % np)
      mt_check_ints("reduce matmul at rank 1", out, e, 8);
    memset(out, 0, sizeof out);
    MPI_Request rq;
    MPI_Iallreduce(in, out, 2, mat_type, op_mat, w, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    mt_check_ints("iallreduce matmul", out, e, 8);

    int sc[4], esc[4];
    MPI_Scan(in, sc, 1, mat_type, op_mat, w);
    prefix(0, me, esc);
    mt_check_ints("scan matmul (prefix product)", sc, esc, 4);
    int ex[4] = {0, 0, 0, 0};
    MPI_Exscan(in, ex, 1, mat_type, op_mat, w);
    prefix(0, me - 1, esc);
    if (me > 0)
      mt_check_ints("exscan matmul", ex, esc, 4);

    /* in-place allreduce with the user op */
    memcpy(out, in, sizeof in);
    MPI_Allreduce(MPI_IN_PLACE, out, 2, mat_type, op_mat, w);
    mt_check_ints("allreduce matmul in place", out, e, 8);
  }

  /* struct records */
  {
    struct rec r[3], o[3];
    for (int k = 0; k < 3; k++) {
      r[k].v = me * 0.5 + k;
      r[k].i = (me * 7 + k * 3) % 5;
    }
    MPI_Allreduce(r, o, 3, rec_type, op_rec, w);
    int ok = 1;
    for (int k = 0; k < 3; k++) {
      double ev = 0;
      int ei = -1;
      for (int q = 0; q < np; q++) {
        ev += q * 0.5 + k;
        if ((q * 7 + k * 3) % 5 > ei)
          ei = (q * 7 + k * 3) % 5;
      }
      if (o[k].v != ev || o[k].i != ei)
        ok = 0;
    }
    mt_check(ok, "allreduce on struct type: (%g,%d) (%g,%d) (%g,%d)", o[0].v, o[0].i, o[1].v,
             o[1].i, o[2].v, o[2].i);
  }

  /* Reduce_local: inout = in op inout */
  {
    int a[4], b[4] = {1, 0, 0, 1}, e[4];
    mat_of(2, a);
    MPI_Reduce_local(a, b, 1, mat_type, op_mat);
    mt_check_ints("reduce_local matmul (M2 x I)", b, a, 4);
    int c[4];
    mat_of(1, c);
    MPI_Reduce_local(c, b, 1, mat_type, op_mat); /* b = M1 x M2 */
    prefix(1, 2, e);
    mt_check_ints("reduce_local matmul (M1 x M2)", b, e, 4);
    int x[3] = {-9, 2, 0}, y[3] = {4, -5, 0};
    MPI_Reduce_local(x, y, 3, MPI_INT, op_abs);
    mt_check_ints("reduce_local absmax", y, (int[]){9, 5, 0}, 3);
  }

  mt_check_int("callbacks that received an unexpected datatype handle", bad_type_calls, 0);

  MPI_Op_free(&op_abs);
  MPI_Op_free(&op_mat);
  MPI_Op_free(&op_rec);
  mt_check(op_abs == MPI_OP_NULL && op_mat == MPI_OP_NULL, "op_free sets MPI_OP_NULL");
  MPI_Type_free(&mat_type);
  MPI_Type_free(&rec_type);
  return mt_end();
}
