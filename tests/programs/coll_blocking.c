/*
 * coll_blocking.c - every blocking collective on MPI_COMM_WORLD, with non-zero roots,
 * v/w variants with rank-dependent counts, MPI_IN_PLACE, the predefined reduction ops
 * (SUM, PROD, MAX, MIN, LAND, BOR, BXOR) and MINLOC/MAXLOC on MPI_DOUBLE_INT and MPI_2INT.
 * Works for any size >= 2; registered with 3 ranks (about 30 collective calls in total).
 * Ranks: 3.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("coll_blocking");
  const int me = mt_.rank, np = mt_.size;
  const int root = np - 1; /* a root other than 0 */
  MPI_Comm w = MPI_COMM_WORLD;
  char what[96];

  /* Barrier */
  MPI_Barrier(w);
  mt_log("barrier passed");

  /* Bcast: ints from root, then doubles from rank 0 */
  {
    int v[5] = {0, 0, 0, 0, 0}, exp[5] = {5, 4, 3, 2, 1};
    if (me == root)
      memcpy(v, exp, sizeof v);
    MPI_Bcast(v, 5, MPI_INT, root, w);
    mt_check_ints("bcast ints from last rank", v, exp, 5);
    double d[2] = {0, 0}, ed[2] = {3.25, -1e10};
    if (me == 0)
      memcpy(d, ed, sizeof d);
    MPI_Bcast(d, 2, MPI_DOUBLE, 0, w);
    mt_check_dbls("bcast doubles from rank 0", d, ed, 2);
  }

  /* Gather and Gather with MPI_IN_PLACE at the root */
  {
    int mine[2] = {me * 10, me * 10 + 1};
    int *all = calloc((size_t)np * 2, sizeof(int)), *exp = mt_alloc(sizeof(int) * (size_t)np * 2);
    for (int r = 0; r < np; r++) {
      exp[2 * r] = r * 10;
      exp[2 * r + 1] = r * 10 + 1;
    }
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root, w);
    if (me == root)
      mt_check_ints("gather at last rank", all, exp, 2 * np);
    memset(all, 0, sizeof(int) * (size_t)np * 2);
    if (me == 0) {
      all[0] = 0;
      all[1] = 1;
      MPI_Gather(MPI_IN_PLACE, 2, MPI_INT, all, 2, MPI_INT, 0, w);
      mt_check_ints("gather in place at rank 0", all, exp, 2 * np);
    } else {
      MPI_Gather(mine, 2, MPI_INT, NULL, 0, MPI_INT, 0, w);
    }
    free(all);
    free(exp);
  }

  /* Gatherv: rank r contributes r+1 elements, placed in reverse rank order with gaps */
  {
    int mine[16];
    for (int i = 0; i <= me; i++)
      mine[i] = 100 * me + i;
    int *counts = mt_alloc(sizeof(int) * (size_t)np), *displs = mt_alloc(sizeof(int) * (size_t)np);
    int total = 0;
    for (int r = np - 1; r >= 0; r--) {
      counts[r] = r + 1;
      displs[r] = total;
      total += r + 1 + 1; /* one gap element after each block */
    }
    int *all = mt_alloc(sizeof(int) * (size_t)total), *exp = mt_alloc(sizeof(int) * (size_t)total);
    for (int i = 0; i < total; i++)
      all[i] = exp[i] = -1;
    for (int r = 0; r < np; r++)
      for (int i = 0; i <= r; i++)
        exp[displs[r] + i] = 100 * r + i;
    MPI_Gatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, 0, w);
    if (me == 0)
      mt_check_ints("gatherv reversed with gaps", all, exp, total);

    /* Scatterv: the inverse, from the last rank */
    int got[16], expg[16];
    for (int i = 0; i < 16; i++)
      got[i] = expg[i] = -5;
    for (int i = 0; i <= me; i++)
      expg[i] = 100 * me + i;
    MPI_Scatterv(exp, counts, displs, MPI_INT, got, me + 1, MPI_INT, root, w);
    mt_check_ints("scatterv", got, expg, me + 2);
    free(counts);
    free(displs);
    free(all);
    free(exp);
  }

  /* Scatter */
  {
    double *src = NULL, got[3], exp[3];
    if (me == 1 % np) {
      src = mt_alloc(sizeof(double) * 3 * (size_t)np);
      for (int i = 0; i < 3 * np; i++)
        src[i] = i * 1.5;
    }
    MPI_Scatter(src, 3, MPI_DOUBLE, got, 3, MPI_DOUBLE, 1 % np, w);
    for (int i = 0; i < 3; i++)
      exp[i] = (3 * me + i) * 1.5;
    mt_check_dbls("scatter from rank 1", got, exp, 3);
    free(src);
  }

  /* Allgather and Allgather in place */
  {
    int *all = mt_alloc(sizeof(int) * (size_t)np), *exp = mt_alloc(sizeof(int) * (size_t)np);
    int v = me * me + 3;
    for (int r = 0; r < np; r++)
      exp[r] = r * r + 3;
    MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, w);
    mt_check_ints("allgather", all, exp, np);
    for (int r = 0; r < np; r++)
      all[r] = r == me ? v : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, w);
    mt_check_ints("allgather in place", all, exp, np);
    free(all);
    free(exp);
  }

  /* Allgatherv: rank r contributes 2r+1 shorts */
  {
    short mine[32];
    for (int i = 0; i < 2 * me + 1; i++)
      mine[i] = (short)(me * 50 + i);
    int *counts = mt_alloc(sizeof(int) * (size_t)np), *displs = mt_alloc(sizeof(int) * (size_t)np),
        total = 0;
    for (int r = 0; r < np; r++) {
      counts[r] = 2 * r + 1;
      displs[r] = total;
      total += counts[r];
    }
    short *all = mt_alloc(sizeof(short) * (size_t)total);
    MPI_Allgatherv(mine, 2 * me + 1, MPI_SHORT, all, counts, displs, MPI_SHORT, w);
    int *got = mt_alloc(sizeof(int) * (size_t)total), *exp = mt_alloc(sizeof(int) * (size_t)total);
    for (int r = 0; r < np; r++)
      for (int i = 0; i < counts[r]; i++)
        exp[displs[r] + i] = r * 50 + i;
    for (int i = 0; i < total; i++)
      got[i] = all[i];
    mt_check_ints("allgatherv of shorts", got, exp, total);
    free(counts);
    free(displs);
    free(all);
    free(got);
    free(exp);
  }

  /* Alltoall */
  {
    int *s = mt_alloc(sizeof(int) * 2 * (size_t)np), *r = mt_alloc(sizeof(int) * 2 * (size_t)np),
        *e = mt_alloc(sizeof(int) * 2 * (size_t)np);
    for (int j = 0; j < np; j++) {
      s[2 * j] = 1000 * me + j;
      s[2 * j + 1] = -(1000 * me + j);
      e[2 * j] = 1000 * j + me;
      e[2 * j + 1] = -(1000 * j + me);
    }
    MPI_Alltoall(s, 2, MPI_INT, r, 2, MPI_INT, w);
    mt_check_ints("alltoall", r, e, 2 * np);
    free(s);
    free(r);
    free(e);
  }

  /* Alltoallv: rank i sends (i + j + 1) ints to rank j */
  {
    int *sc = mt_alloc(sizeof(int) * (size_t)np), *sd = mt_alloc(sizeof(int) * (size_t)np);
    int *rc = mt_alloc(sizeof(int) * (size_t)np), *rd = mt_alloc(sizeof(int) * (size_t)np);
    int st = 0, rt = 0;
    for (int j = 0; j < np; j++) {
      sc[j] = me + j + 1;
      sd[j] = st;
      st += sc[j];
      rc[j] = j + me + 1;
      rd[j] = rt;
      rt += rc[j];
    }
    int *s = mt_alloc(sizeof(int) * (size_t)st), *r = mt_alloc(sizeof(int) * (size_t)rt),
        *e = mt_alloc(sizeof(int) * (size_t)rt);
    for (int j = 0; j < np; j++)
      for (int k = 0; k < sc[j]; k++)
        s[sd[j] + k] = me * 10000 + j * 100 + k;
    for (int j = 0; j < np; j++)
      for (int k = 0; k < rc[j]; k++)
        e[rd[j] + k] = j * 10000 + me * 100 + k;
    MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, w);
    mt_check_ints("alltoallv", r, e, rt);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(s);
    free(r);
    free(e);
  }

  /* Alltoallw: every block is 2 ints; sent as one "2-int contiguous" element, received as
   * two MPI_INTs, and the receive blocks are placed in reverse rank order (byte displs). */
  {
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    int *s = mt_alloc(sizeof(int) * 2 * (size_t)np), *r = mt_alloc(sizeof(int) * 2 * (size_t)np),
        *e = mt_alloc(sizeof(int) * 2 * (size_t)np);
    int *scnt = mt_alloc(sizeof(int) * (size_t)np), *sdsp = mt_alloc(sizeof(int) * (size_t)np);
    int *rcnt = mt_alloc(sizeof(int) * (size_t)np), *rdsp = mt_alloc(sizeof(int) * (size_t)np);
    MPI_Datatype *st = mt_alloc(sizeof(MPI_Datatype) * (size_t)np),
                 *rt = mt_alloc(sizeof(MPI_Datatype) * (size_t)np);
    for (int j = 0; j < np; j++) {
      scnt[j] = 1;
      st[j] = two;
      sdsp[j] = 2 * j * (int)sizeof(int);
      rcnt[j] = 2;
      rt[j] = MPI_INT;
      rdsp[j] = 2 * (np - 1 - j) * (int)sizeof(int);
      s[2 * j] = me * 100 + j;
      s[2 * j + 1] = -(me * 100 + j);
      e[2 * (np - 1 - j)] = j * 100 + me;
      e[2 * (np - 1 - j) + 1] = -(j * 100 + me);
    }
    MPI_Alltoallw(s, scnt, sdsp, st, r, rcnt, rdsp, rt, w);
    mt_check_ints("alltoallw, mixed types, reversed placement", r, e, 2 * np);
    MPI_Type_free(&two);
    free(s);
    free(r);
    free(e);
    free(scnt);
    free(sdsp);
    free(rcnt);
    free(rdsp);
    free(st);
    free(rt);
  }

  /* Reduce (SUM to root, MAX to 0, in place at root) */
  {
    int v[3] = {me + 1, 2 * me, -me}, out[3] = {0, 0, 0};
    int esum[3] = {np * (np + 1) / 2, np * (np - 1), -np * (np - 1) / 2};
    MPI_Reduce(v, out, 3, MPI_INT, MPI_SUM, root, w);
    if (me == root)
      mt_check_ints("reduce sum at last rank", out, esum, 3);
    double d = (me % 2 ? -1.0 : 1.0) * (me + 0.5), dmax = 0;
    MPI_Reduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, w);
    double edmax = -1e300;
    for (int r = 0; r < np; r++) {
      double x = (r % 2 ? -1.0 : 1.0) * (r + 0.5);
      if (x > edmax)
        edmax = x;
    }
    if (me == 0)
      mt_check_dbls("reduce max of doubles", &dmax, &edmax, 1);
    int inout[3] = {me + 1, 2 * me, -me};
    if (me == 1 % np) {
      MPI_Reduce(MPI_IN_PLACE, inout, 3, MPI_INT, MPI_SUM, 1 % np, w);
      mt_check_ints("reduce sum in place at rank 1", inout, esum, 3);
    } else {
      MPI_Reduce(inout, NULL, 3, MPI_INT, MPI_SUM, 1 % np, w);
    }
  }

  /* Allreduce: SUM/PROD/MIN on long long, logical and bitwise ops in one go each, in place */
  {
    long long v[3] = {me + 1, me + 2, 7 - me}, o[3];
    MPI_Allreduce(v, o, 1, MPI_LONG_LONG, MPI_SUM, w);
    MPI_Allreduce(v + 1, o + 1, 1, MPI_LONG_LONG, MPI_PROD, w);
    MPI_Allreduce(v + 2, o + 2, 1, MPI_LONG_LONG, MPI_MIN, w);
    long long prod = 1;
    for (int r = 0; r < np; r++)
      prod *= r + 2;
    int got[3] = {(int)o[0], (int)o[1], (int)o[2]},
        exp[3] = {np * (np + 1) / 2, (int)prod, 7 - (np - 1)};
    mt_check_ints("allreduce sum/prod/min", got, exp, 3);

    unsigned bits[4] = {1u << me, 0xffu ^ (1u << me), (unsigned)me, 0}, ob[4];
    MPI_Allreduce(bits, ob, 1, MPI_UNSIGNED, MPI_BOR, w);
    MPI_Allreduce(bits + 1, ob + 1, 1, MPI_UNSIGNED, MPI_BAND, w);
    MPI_Allreduce(bits + 2, ob + 2, 1, MPI_UNSIGNED, MPI_BXOR, w);
    int land = me != 0, lor = me == np - 1, lres[2];
    MPI_Allreduce(&land, &lres[0], 1, MPI_INT, MPI_LAND, w);
    MPI_Allreduce(&lor, &lres[1], 1, MPI_INT, MPI_LOR, w);
    unsigned ebor = 0, eband = 0xffu, ebxor = 0;
    for (int r = 0; r < np; r++) {
      ebor |= 1u << r;
      eband &= 0xffu ^ (1u << r);
      ebxor ^= (unsigned)r;
    }
    int gb[5] = {(int)ob[0], (int)ob[1], (int)ob[2], lres[0], lres[1]};
    int eb[5] = {(int)ebor, (int)eband, (int)ebxor, 0, 1};
    mt_check_ints("allreduce bor/band/bxor/land/lor", gb, eb, 5);

    double inpl[4];
    for (int i = 0; i < 4; i++)
      inpl[i] = me * 0.5 + i;
    MPI_Allreduce(MPI_IN_PLACE, inpl, 4, MPI_DOUBLE, MPI_SUM, w);
    double ein[4];
    for (int i = 0; i < 4; i++)
      ein[i] = 0.5 * np * (np - 1) / 2 + np * i;
    mt_check_dbls("allreduce in place", inpl, ein, 4);
  }

  /* MINLOC / MAXLOC */
  {
    struct {
      double v;
      int loc;
    } in[2], out[2];
    /* values with a tie for max: rank ties break to the lowest index */
    in[0].v = (double)((me * 7) % np) - 0.5;
    in[0].loc = me;
    in[1].v = me == 0 || me == np - 1 ? 9.0 : 1.0;
    in[1].loc = me;
    MPI_Allreduce(in, out, 2, MPI_DOUBLE_INT, MPI_MAXLOC, w);
    double emax = -1e300;
    int eloc = -1;
    for (int r = 0; r < np; r++) {
      double x = (double)((r * 7) % np) - 0.5;
      if (x > emax) {
        emax = x;
        eloc = r;
      }
    }
    snprintf(what, sizeof what, "maxloc double_int = (%g,%d) (%g,%d)", out[0].v, out[0].loc,
             out[1].v, out[1].loc);
    mt_check(out[0].v == emax && out[0].loc == eloc && out[1].v == 9.0 && out[1].loc == 0, "%s",
             what);

    int pair[2] = {100 - me * me, me}, pout[2];
    MPI_Reduce(pair, pout, 1, MPI_2INT, MPI_MINLOC, 0, w);
    if (me == 0) {
      int e[2] = {100 - (np - 1) * (np - 1), np - 1};
      mt_check_ints("minloc 2int at rank 0", pout, e, 2);
    }
  }

  /* Reduce_scatter: rank i gets i+1 elements; Reduce_scatter_block: 2 each */
  {
    int *counts = mt_alloc(sizeof(int) * (size_t)np), total = 0;
    for (int r = 0; r < np; r++) {
      counts[r] = r + 1;
      total += r + 1;
    }
    int *v = mt_alloc(sizeof(int) * (size_t)total), out[16], exp[16];
    for (int i = 0; i < total; i++)
      v[i] = i * (me + 1);
    MPI_Reduce_scatter(v, out, counts, MPI_INT, MPI_SUM, w);
    int start = me * (me + 1) / 2;
    for (int k = 0; k <= me; k++)
      exp[k] = (start + k) * np * (np + 1) / 2;
    mt_check_ints("reduce_scatter", out, exp, me + 1);

    int *vb = mt_alloc(sizeof(int) * 2 * (size_t)np);
    for (int i = 0; i < 2 * np; i++)
      vb[i] = i + me;
    MPI_Reduce_scatter_block(vb, out, 2, MPI_INT, MPI_MAX, w);
    int eb[2] = {2 * me + np - 1, 2 * me + 1 + np - 1};
    mt_check_ints("reduce_scatter_block max", out, eb, 2);
    free(counts);
    free(v);
    free(vb);
  }

  /* Scan and Exscan */
  {
    int v[2] = {me + 1, (me + 1) * (me + 1)}, s[2] = {0, 0}, e[2] = {0, 0};
    MPI_Scan(v, s, 2, MPI_INT, MPI_SUM, w);
    for (int r = 0; r <= me; r++) {
      e[0] += r + 1;
      e[1] += (r + 1) * (r + 1);
    }
    mt_check_ints("scan sum", s, e, 2);
    int x = 1 << me, ex = -1, eex = 0;
    MPI_Exscan(&x, &ex, 1, MPI_INT, MPI_BOR, w);
    for (int r = 0; r < me; r++)
      eex |= 1 << r;
    if (me > 0)
      mt_check_int("exscan bor", ex, eex);
    else
      mt_log("exscan result on rank 0 is undefined; not checked");
  }

  return mt_end();
}
