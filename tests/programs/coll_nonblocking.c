/*
 * coll_nonblocking.c - every non-blocking collective: Ibarrier, Ibcast, Igather(v),
 * Iscatter(v), Iallgather(v), Ialltoall(v,w), Ireduce, Iallreduce (also in place),
 * Ireduce_scatter(_block), Iscan, Iexscan. Most are started together and completed with one
 * Waitall (several outstanding collectives on one communicator), some with Test polling or
 * Waitany, and point-to-point traffic is interleaved while they are in flight.
 * Ranks: 3.
 */
#include "mpitest.h"

#define NREQ 17

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("coll_nonblocking");
  const int me = mt_.rank, np = mt_.size;
  const size_t unp = (size_t)np;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Request rq[NREQ];
  int nr = 0;

  /* ---- inputs and expected outputs ---- */
  int bc[4] = {0, 0, 0, 0}, bc_e[4] = {11, 22, 33, 44};
  if (me == np - 1)
    memcpy(bc, bc_e, sizeof bc);

  int g_in = me * 3 + 1, *g_out = mt_alloc(sizeof(int) * unp), *g_e = mt_alloc(sizeof(int) * unp);
  for (int r = 0; r < np; r++)
    g_e[r] = r * 3 + 1;

  int *gv_cnt = mt_alloc(sizeof(int) * unp), *gv_dsp = mt_alloc(sizeof(int) * unp), gv_tot = 0;
  for (int r = 0; r < np; r++) {
    gv_cnt[r] = r + 1;
    gv_dsp[r] = gv_tot;
    gv_tot += r + 1;
  }
  int gv_in[16], *gv_out = mt_alloc(sizeof(int) * (size_t)gv_tot),
                 *gv_e = mt_alloc(sizeof(int) * (size_t)gv_tot);
  for (int i = 0; i <= me; i++)
    gv_in[i] = me * 10 + i;
  for (int r = 0; r < np; r++)
    for (int i = 0; i <= r; i++)
      gv_e[gv_dsp[r] + i] = r * 10 + i;

  int *sc_in = mt_alloc(sizeof(int) * 2 * unp), sc_out[2] = {0, 0},
      sc_e[2] = {me * 2 + 500, me * 2 + 501};
  for (int i = 0; i < 2 * np; i++)
    sc_in[i] = i + 500;

  int scv_out[16] = {0}, scv_e[16] = {0};
  for (int i = 0; i <= me; i++)
    scv_e[i] = me * 10 + i; /* scatterv of gv_e from rank 1 */

  double ag_in = me * 0.25, *ag_out = mt_alloc(sizeof(double) * unp),
         *ag_e = mt_alloc(sizeof(double) * unp);
  for (int r = 0; r < np; r++)
    ag_e[r] = r * 0.25;

  int *agv_out = mt_alloc(sizeof(int) * (size_t)gv_tot);

  int *a2a_in = mt_alloc(sizeof(int) * unp), *a2a_out = mt_alloc(sizeof(int) * unp),
      *a2a_e = mt_alloc(sizeof(int) * unp);
  for (int j = 0; j < np; j++) {
    a2a_in[j] = me * 100 + j;
    a2a_e[j] = j * 100 + me;
  }

  /* alltoallv: rank i sends j+1 copies of (i*100+j) to rank j, receives me+1 from each */
  int *av_sc = mt_alloc(sizeof(int) * unp), *av_sd = mt_alloc(sizeof(int) * unp),
      *av_rc = mt_alloc(sizeof(int) * unp), *av_rd = mt_alloc(sizeof(int) * unp), av_st = 0;
  for (int j = 0; j < np; j++) {
    av_sc[j] = j + 1;
    av_sd[j] = av_st;
    av_st += j + 1;
    av_rc[j] = me + 1;
    av_rd[j] = j * (me + 1);
  }
  int *av_in = mt_alloc(sizeof(int) * (size_t)av_st),
      *av_out = mt_alloc(sizeof(int) * unp * (size_t)(me + 1)),
      *av_e = mt_alloc(sizeof(int) * unp * (size_t)(me + 1));
  for (int j = 0; j < np; j++)
    for (int k = 0; k <= j; k++)
      av_in[av_sd[j] + k] = me * 100 + j;
  for (int j = 0; j < np; j++)
    for (int k = 0; k <= me; k++)
      av_e[j * (me + 1) + k] = j * 100 + me;

  /* alltoallw: one double to each rank, received in reverse order */
  double *aw_in = mt_alloc(sizeof(double) * unp), *aw_out = mt_alloc(sizeof(double) * unp),
         *aw_e = mt_alloc(sizeof(double) * unp);
  int *aw_cnt = mt_alloc(sizeof(int) * unp), *aw_sd = mt_alloc(sizeof(int) * unp),
      *aw_rd = mt_alloc(sizeof(int) * unp);
  MPI_Datatype *aw_t = mt_alloc(sizeof(MPI_Datatype) * unp);
  for (int j = 0; j < np; j++) {
    aw_in[j] = me + j / 8.0;
    aw_e[np - 1 - j] = j + me / 8.0;
    aw_cnt[j] = 1;
    aw_sd[j] = j * (int)sizeof(double);
    aw_rd[j] = (np - 1 - j) * (int)sizeof(double);
    aw_t[j] = MPI_DOUBLE;
  }

  int red_in[2] = {me + 1, -(me + 1)}, red_out[2] = {0, 0}, red_e[2] = {np, -1};
  long long ar_in = 1LL << (me * 4), ar_out = 0, ar_e = 0;
  for (int r = 0; r < np; r++)
    ar_e += 1LL << (r * 4);
  int arip[3] = {me, me * 2, me * 3},
      arip_e[3] = {np * (np - 1) / 2, np * (np - 1), 3 * np * (np - 1) / 2};

  int *rs_cnt = mt_alloc(sizeof(int) * unp), *rs_in = mt_alloc(sizeof(int) * unp * 2),
      rs_out[2] = {0, 0}, rs_e[2];
  for (int r = 0; r < np; r++)
    rs_cnt[r] = 2;
  for (int i = 0; i < 2 * np; i++)
    rs_in[i] = i * (me + 1);
  for (int k = 0; k < 2; k++)
    rs_e[k] = (2 * me + k) * np * (np + 1) / 2;
  int *rsb_in = mt_alloc(sizeof(int) * unp), rsb_out = 0, rsb_e = me * np;
  for (int i = 0; i < np; i++)
    rsb_in[i] = i;

  int scan_in = me + 1, scan_out = 0, scan_e = (me + 1) * (me + 2) / 2;
  int exs_in = me + 1, exs_out = -1, exs_e = me * (me + 1) / 2;

  /* ---- start them all ---- */
  MPI_Ibcast(bc, 4, MPI_INT, np - 1, w, &rq[nr++]);
  MPI_Igather(&g_in, 1, MPI_INT, g_out, 1, MPI_INT, 0, w, &rq[nr++]);
  MPI_Igatherv(gv_in, me + 1, MPI_INT, gv_out, gv_cnt, gv_dsp, MPI_INT, np - 1, w, &rq[nr++]);
  MPI_Iscatter(sc_in, 2, MPI_INT, sc_out, 2, MPI_INT, 0, w, &rq[nr++]);
  MPI_Iscatterv(gv_e, gv_cnt, gv_dsp, MPI_INT, scv_out, me + 1, MPI_INT, 1 % np, w, &rq[nr++]);
  MPI_Iallgather(&ag_in, 1, MPI_DOUBLE, ag_out, 1, MPI_DOUBLE, w, &rq[nr++]);
  MPI_Iallgatherv(gv_in, me + 1, MPI_INT, agv_out, gv_cnt, gv_dsp, MPI_INT, w, &rq[nr++]);
  MPI_Ialltoall(a2a_in, 1, MPI_INT, a2a_out, 1, MPI_INT, w, &rq[nr++]);
  MPI_Ialltoallv(av_in, av_sc, av_sd, MPI_INT, av_out, av_rc, av_rd, MPI_INT, w, &rq[nr++]);
  MPI_Ialltoallw(aw_in, aw_cnt, aw_sd, aw_t, aw_out, aw_cnt, aw_rd, aw_t, w, &rq[nr++]);
  MPI_Ireduce(red_in, red_out, 2, MPI_INT, MPI_MAX, 0, w, &rq[nr++]);
  MPI_Iallreduce(&ar_in, &ar_out, 1, MPI_LONG_LONG, MPI_SUM, w, &rq[nr++]);
  MPI_Iallreduce(MPI_IN_PLACE, arip, 3, MPI_INT, MPI_SUM, w, &rq[nr++]);
  MPI_Ireduce_scatter(rs_in, rs_out, rs_cnt, MPI_INT, MPI_SUM, w, &rq[nr++]);
  MPI_Ireduce_scatter_block(rsb_in, &rsb_out, 1, MPI_INT, MPI_SUM, w, &rq[nr++]);
  MPI_Iscan(&scan_in, &scan_out, 1, MPI_INT, MPI_SUM, w, &rq[nr++]);
  MPI_Iexscan(&exs_in, &exs_out, 1, MPI_INT, MPI_SUM, w, &rq[nr++]);

  /* point-to-point ring traffic while they are all in flight */
  {
    int tok = me * 1000, in = -1;
    MPI_Sendrecv(&tok, 1, MPI_INT, (me + 1) % np, 5, &in, 1, MPI_INT, (me + np - 1) % np, 5, w,
                 MPI_STATUS_IGNORE);
    mt_check_int("p2p during outstanding collectives", in, ((me + np - 1) % np) * 1000);
  }

  mt_check_int("number of outstanding collectives", nr, NREQ);
  MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);

  mt_check_ints("ibcast", bc, bc_e, 4);
  if (me == 0)
    mt_check_ints("igather", g_out, g_e, np);
  if (me == np - 1)
    mt_check_ints("igatherv", gv_out, gv_e, gv_tot);
  mt_check_ints("iscatter", sc_out, sc_e, 2);
  mt_check_ints("iscatterv", scv_out, scv_e, me + 1);
  mt_check_dbls("iallgather", ag_out, ag_e, np);
  mt_check_ints("iallgatherv", agv_out, gv_e, gv_tot);
  mt_check_ints("ialltoall", a2a_out, a2a_e, np);
  mt_check_ints("ialltoallv", av_out, av_e, np * (me + 1));
  mt_check_dbls("ialltoallw reversed", aw_out, aw_e, np);
  if (me == 0)
    mt_check_ints("ireduce max", red_out, red_e, 2);
  mt_check_int("iallreduce long long", ar_out, ar_e);
  mt_check_ints("iallreduce in place", arip, arip_e, 3);
  mt_check_ints("ireduce_scatter", rs_out, rs_e, 2);
  mt_check_int("ireduce_scatter_block", rsb_out, rsb_e);
  mt_check_int("iscan", scan_out, scan_e);
  if (me > 0)
    mt_check_int("iexscan", exs_out, exs_e);

  /* Ibarrier completed by Test polling */
  {
    MPI_Request b;
    int flag = 0;
    long polls = 0;
    MPI_Ibarrier(w, &b);
    while (!flag) {
      MPI_Test(&b, &flag, MPI_STATUS_IGNORE);
      polls++;
    }
    mt_check(b == MPI_REQUEST_NULL && polls >= 1, "ibarrier completed through MPI_Test");
  }

  /* Two Iallreduces completed in whatever order with Waitany */
  {
    int a = me, b = 2 * me, ra = 0, rb = 0, idx, seen = 0;
    MPI_Request r2[2];
    MPI_Iallreduce(&a, &ra, 1, MPI_INT, MPI_SUM, w, &r2[0]);
    MPI_Iallreduce(&b, &rb, 1, MPI_INT, MPI_MAX, w, &r2[1]);
    for (int k = 0; k < 2; k++) {
      MPI_Waitany(2, r2, &idx, MPI_STATUS_IGNORE);
      seen |= 1 << idx;
    }
    int got[3] = {ra, rb, seen}, e[3] = {np * (np - 1) / 2, 2 * (np - 1), 3};
    mt_check_ints("two iallreduce via waitany (sum, max, seen mask)", got, e, 3);
  }

  free(g_out);
  free(g_e);
  free(gv_cnt);
  free(gv_dsp);
  free(gv_out);
  free(gv_e);
  free(sc_in);
  free(ag_out);
  free(ag_e);
  free(agv_out);
  free(a2a_in);
  free(a2a_out);
  free(a2a_e);
  free(av_sc);
  free(av_sd);
  free(av_rc);
  free(av_rd);
  free(av_in);
  free(av_out);
  free(av_e);
  free(aw_in);
  free(aw_out);
  free(aw_e);
  free(aw_cnt);
  free(aw_sd);
  free(aw_rd);
  free(aw_t);
  free(rs_cnt);
  free(rs_in);
  free(rsb_in);
  return mt_end();
}
