/*
 * coll_persistent.c - MPI-4 persistent collectives as exported by MPICH 4.0.2:
 * Barrier_init, Bcast_init, Reduce_init, Allreduce_init, Gather(v)_init, Scatter(v)_init,
 * Allgather(v)_init, Alltoall(v,w)_init, Reduce_scatter(_block)_init, Scan_init, Exscan_init.
 * Each request is started several times with new inputs (Start and Startall), completed with
 * Wait/Waitall/Test, and freed with Request_free - except Gather_init, Scatter_init and
 * Allgather_init, which are broken for repeated starts in MPICH 4.0.2 (see section 4).
 * Ranks: 3.
 */
#include "mpitest.h"

#define ROUNDS 3

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("coll_persistent");
  const int me = mt_.rank, np = mt_.size;
  const size_t unp = (size_t)np;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Info info = MPI_INFO_NULL;
  char what[80];

  /* 1. Allreduce_init, started ROUNDS times with changing input */
  {
    int in[2], out[2];
    MPI_Request rq;
    MPI_Allreduce_init(in, out, 2, MPI_INT, MPI_SUM, w, info, &rq);
    for (int r = 0; r < ROUNDS; r++) {
      in[0] = me + r;
      in[1] = me * r;
      MPI_Start(&rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      int e[2] = {np * (np - 1) / 2 + np * r, r * np * (np - 1) / 2};
      snprintf(what, sizeof what, "allreduce_init round %d", r);
      mt_check_ints(what, out, e, 2);
    }
    mt_check(rq != MPI_REQUEST_NULL, "persistent collective request survives wait");
    MPI_Request_free(&rq);
    mt_check(rq == MPI_REQUEST_NULL, "request_free of persistent collective");
  }

  /* 2. Barrier_init + Bcast_init + Reduce_init started together with Startall */
  {
    MPI_Request rq[3];
    double b[3];
    long long rin, rout = 0;
    MPI_Barrier_init(w, info, &rq[0]);
    MPI_Bcast_init(b, 3, MPI_DOUBLE, np - 1, w, info, &rq[1]);
    MPI_Reduce_init(&rin, &rout, 1, MPI_LONG_LONG, MPI_MAX, 0, w, info, &rq[2]);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < 3; i++)
        b[i] = me == np - 1 ? r * 10.0 + i : -1.0;
      rin = (long long)(me + 1) * 1000000000LL * (r + 1);
      MPI_Startall(3, rq);
      MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
      for (int i = 0; i < 3; i++)
        if (b[i] != r * 10.0 + i)
          ok = 0;
      if (me == 0 && rout != (long long)np * 1000000000LL * (r + 1))
        ok = 0;
    }
    mt_check(ok, "barrier_init/bcast_init/reduce_init with startall, 3 rounds");
    for (int i = 0; i < 3; i++)
      MPI_Request_free(&rq[i]);
  }

  /* 3. Gatherv_init / Scatterv_init over several rounds: the scatterv returns what the
   *    gatherv collected, so every rank gets its own data back. */
  {
    int *cnt = mt_alloc(sizeof(int) * unp), *dsp = mt_alloc(sizeof(int) * unp), tot = 0;
    for (int r = 0; r < np; r++) {
      cnt[r] = np - r;
      dsp[r] = tot;
      tot += np - r;
    }
    int gvin[16], *gvout = mt_alloc(sizeof(int) * (size_t)tot), svout[16];
    MPI_Request rq[2];
    MPI_Gatherv_init(gvin, np - me, MPI_INT, gvout, cnt, dsp, MPI_INT, 0, w, info, &rq[0]);
    MPI_Scatterv_init(gvout, cnt, dsp, MPI_INT, svout, np - me, MPI_INT, 0, w, info, &rq[1]);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < np - me; i++) {
        gvin[i] = 1000 * r + 10 * me + i;
        svout[i] = -1;
      }
      MPI_Start(&rq[0]);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
      MPI_Start(&rq[1]);
      int flag = 0;
      while (!flag)
        MPI_Test(&rq[1], &flag, MPI_STATUS_IGNORE);
      for (int i = 0; i < np - me; i++)
        if (svout[i] != 1000 * r + 10 * me + i)
          ok = 0;
      if (me == 0)
        for (int q = 0; q < np; q++)
          for (int i = 0; i < np - q; i++)
            if (gvout[dsp[q] + i] != 1000 * r + 10 * q + i)
              ok = 0;
    }
    mt_check(ok, "gatherv_init/scatterv_init, 3 rounds");
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    free(cnt);
    free(dsp);
    free(gvout);
  }

  /* 4. Gather_init, Scatter_init and Allgather_init are only started once each: in MPICH
   *    4.0.2 their schedules do not re-read the buffers on later starts (stale results, or
   *    a crash in MPI_Wait for Scatter_init with 3+ ranks), and Gather_init drops the root's
   *    own contribution, hence MPI_IN_PLACE at the root. See tests/programs/README.md. */
  {
    int gin = me * 7 + 3, *gout = mt_alloc(sizeof(int) * unp), *gexp = mt_alloc(sizeof(int) * unp);
    int *sin = mt_alloc(sizeof(int) * unp), sout = -1, agin = me * me,
        *agout = mt_alloc(sizeof(int) * unp);
    int *agexp = mt_alloc(sizeof(int) * unp);
    for (int q = 0; q < np; q++) {
      gexp[q] = q * 7 + 3;
      sin[q] = 50 + q;
      agexp[q] = q * q;
    }
    MPI_Request rq[3];
    if (me == 0) {
      gout[0] = gin;
      MPI_Gather_init(MPI_IN_PLACE, 1, MPI_INT, gout, 1, MPI_INT, 0, w, info, &rq[0]);
    } else {
      MPI_Gather_init(&gin, 1, MPI_INT, NULL, 0, MPI_INT, 0, w, info, &rq[0]);
    }
    MPI_Scatter_init(sin, 1, MPI_INT, &sout, 1, MPI_INT, np - 1, w, info, &rq[1]);
    MPI_Allgather_init(&agin, 1, MPI_INT, agout, 1, MPI_INT, w, info, &rq[2]);
    MPI_Startall(3, rq);
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    if (me == 0)
      mt_check_ints("gather_init (in place at root), one start", gout, gexp, np);
    mt_check_int("scatter_init, one start", sout, 50 + me);
    mt_check_ints("allgather_init, one start", agout, agexp, np);
    for (int i = 0; i < 3; i++)
      MPI_Request_free(&rq[i]);
    free(gout);
    free(gexp);
    free(sin);
    free(agout);
    free(agexp);
  }

  /* 4b. Allgatherv_init, Alltoall(v,w)_init over several rounds */
  {
    int *cnt = mt_alloc(sizeof(int) * unp), *dsp = mt_alloc(sizeof(int) * unp);
    for (int r = 0; r < np; r++) {
      cnt[r] = 2;
      dsp[r] = 2 * (np - 1 - r);
    }
    int agvin[2], *agvout = mt_alloc(sizeof(int) * 2 * unp);
    int *a2ain = mt_alloc(sizeof(int) * unp), *a2aout = mt_alloc(sizeof(int) * unp);
    int *a2avin = mt_alloc(sizeof(int) * 2 * unp), *a2avout = mt_alloc(sizeof(int) * 2 * unp);
    int *a2awin = mt_alloc(sizeof(int) * unp), *a2awout = mt_alloc(sizeof(int) * unp);
    int *ones = mt_alloc(sizeof(int) * unp), *bdsp = mt_alloc(sizeof(int) * unp);
    MPI_Datatype *types = mt_alloc(sizeof(MPI_Datatype) * unp);
    for (int r = 0; r < np; r++) {
      ones[r] = 1;
      bdsp[r] = r * (int)sizeof(int);
      types[r] = MPI_INT;
    }
    MPI_Request rq[4];
    MPI_Allgatherv_init(agvin, 2, MPI_INT, agvout, cnt, dsp, MPI_INT, w, info, &rq[0]);
    MPI_Alltoall_init(a2ain, 1, MPI_INT, a2aout, 1, MPI_INT, w, info, &rq[1]);
    MPI_Alltoallv_init(a2avin, cnt, dsp, MPI_INT, a2avout, cnt, dsp, MPI_INT, w, info, &rq[2]);
    MPI_Alltoallw_init(a2awin, ones, bdsp, types, a2awout, ones, bdsp, types, w, info, &rq[3]);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++) {
      agvin[0] = me;
      agvin[1] = r;
      for (int j = 0; j < np; j++) {
        a2ain[j] = 100 * me + j + 1000 * r;
        a2avin[dsp[j]] = me;
        a2avin[dsp[j] + 1] = j + r;
        a2awin[j] = -(100 * me + j + 1000 * r);
      }
      MPI_Startall(4, rq);
      MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
      for (int q = 0; q < np; q++) {
        if (agvout[2 * (np - 1 - q)] != q || agvout[2 * (np - 1 - q) + 1] != r)
          ok = 0;
        if (a2aout[q] != 100 * q + me + 1000 * r)
          ok = 0;
        if (a2avout[dsp[q]] != q || a2avout[dsp[q] + 1] != me + r)
          ok = 0;
        if (a2awout[q] != -(100 * q + me + 1000 * r))
          ok = 0;
      }
    }
    mt_check(ok, "allgatherv/alltoall/alltoallv/alltoallw _init, 3 rounds");
    for (int i = 0; i < 4; i++)
      MPI_Request_free(&rq[i]);
    free(cnt);
    free(dsp);
    free(agvout);
    free(a2ain);
    free(a2aout);
    free(a2avin);
    free(a2avout);
    free(a2awin);
    free(a2awout);
    free(ones);
    free(bdsp);
    free(types);
  }

  /* 5. Reduce_scatter(_block)_init, Scan_init, Exscan_init */
  {
    int *rsin = mt_alloc(sizeof(int) * unp), rsout = 0, *cnt = mt_alloc(sizeof(int) * unp);
    int rsbout = 0, scin, scout = 0, exin, exout = 0;
    for (int r = 0; r < np; r++)
      cnt[r] = 1;
    MPI_Request rq[4];
    MPI_Reduce_scatter_init(rsin, &rsout, cnt, MPI_INT, MPI_SUM, w, info, &rq[0]);
    MPI_Reduce_scatter_block_init(rsin, &rsbout, 1, MPI_INT, MPI_MIN, w, info, &rq[1]);
    MPI_Scan_init(&scin, &scout, 1, MPI_INT, MPI_PROD, w, info, &rq[2]);
    MPI_Exscan_init(&exin, &exout, 1, MPI_INT, MPI_SUM, w, info, &rq[3]);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++) {
      for (int j = 0; j < np; j++)
        rsin[j] = j * (me + 1) + r;
      scin = me + 2 + r;
      exin = (me + 1) * (r + 1);
      MPI_Startall(4, rq);
      MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
      int ers = me * np * (np + 1) / 2 + np * r, ersb = me + r, esc = 1, eex = 0;
      for (int q = 0; q <= me; q++)
        esc *= q + 2 + r;
      for (int q = 0; q < me; q++)
        eex += (q + 1) * (r + 1);
      if (rsout != ers || rsbout != ersb || scout != esc)
        ok = 0;
      if (me > 0 && exout != eex)
        ok = 0;
    }
    mt_check(ok, "reduce_scatter/reduce_scatter_block/scan/exscan _init, 3 rounds");
    mt_log("last round: reduce_scatter %d, reduce_scatter_block %d, scan %d", rsout, rsbout, scout);
    for (int i = 0; i < 4; i++)
      MPI_Request_free(&rq[i]);
    free(rsin);
    free(cnt);
  }

  /* 6. an inactive persistent collective request freed without ever being started */
  {
    MPI_Request rq;
    int x = 1, y;
    MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_SUM, w, info, &rq);
    MPI_Request_free(&rq);
    mt_check(rq == MPI_REQUEST_NULL, "free a never-started persistent collective");
  }

  return mt_end();
}
