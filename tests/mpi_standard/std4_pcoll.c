/*
 * std4_pcoll.c - persistent collective operations (every MPI_<coll>_init, started in
 * different orders on different processes, restarted with new buffer contents), and the
 * valid examples of the collective correctness section, in their nonblocking form and in the
 * same form with persistent collective requests.
 *
 * Source: MPI-4.1, chapter 7 (Collective Communication):
 *   section 7.13 "Persistent Collective Operations" and 7.13.1-7.13.12 (no example there):
 *     following their definitions, MPI_Barrier_init, MPI_Bcast_init (and MPI_Bcast_init_c),
 *     MPI_Gatherv_init, MPI_Scatterv_init, MPI_Allgatherv_init, MPI_Alltoall_init,
 *     MPI_Alltoallv_init,
 *     MPI_Alltoallw_init, MPI_Reduce_init, MPI_Allreduce_init, MPI_Reduce_scatter_block_init,
 *     MPI_Reduce_scatter_init, MPI_Scan_init and MPI_Exscan_init, initialized once in the
 *     same order everywhere, then started ROUNDS times with MPI_Startall in an order that
 *     depends on the rank and the round ("once initialized, persistent collective operations
 *     can be started in any order and the order can differ among the MPI processes"), the
 *     send buffers changed between rounds, completed with MPI_Waitall, freed when inactive;
 *   section 7.14 "Correctness", its valid examples: (E5) MPI_Ibarrier, MPI_Bcast, MPI_Wait;
 *     (E6, second part) the reversed MPI_Ibarrier/MPI_Bcast order made correct with a
 *     duplicate communicator; (E7) progress of MPI_Ibarrier inside MPI_Recv; (E9)
 *     collective and point-to-point requests completed by one MPI_Waitall; (E10) three
 *     outstanding MPI_Ibcast of computed buffers; (E11) MPI_Iallreduce on three overlapping
 *     communicators of three processes; (E12) two MPI_Ibcast completed in reverse order.
 *     The erroneous examples (E1-E4, E6's first part, E8) are left out.
 * The HTML edition shows the examples of 7.14 as images; their code was read from a Markdown
 * rendering of the same standard text (E11's code was lost there and is written from the
 * text: comm1 = {0,1}, comm2 = {1,2}, comm3 = {0,2}, each process starting an
 * MPI_Iallreduce on its two communicators, then MPI_Waitall).
 * Adaptations: buf/count/type/tag are filled in (ints); compute(buf) writes values derived
 * from the round; the rank-0/rank-1 cases of E6, E7 and E9 run in the pairs (0,1), (2,3), ...
 * on split communicators of two processes (an odd last rank sits out); E11 needs three
 * processes and runs on ranks 0-2 only when there are at least three (not at 2 ranks).  Each
 * example then runs once more with persistent requests (MPI_Barrier_init, MPI_Bcast_init,
 * MPI_Allreduce_init) started with MPI_Start in the example's place of the nonblocking call.
 * Left out, broken natively in Debian's MPICH 4.0.2: MPI_Gather_init (the root receives
 * garbage from the first start), MPI_Allgather_init (its default recursive-doubling schedule
 * loses the other processes' blocks from the second start on) and MPI_Scatter_init (a
 * non-root process receives nothing from the second start on): the vector forms stand for
 * them.
 * Ranks: 2 or more (E11 from 3).
 */
#include "../programs/mpitest.h"

#define ROUNDS 4
#define CNT 4
#define NCOLL 15

static int val(int round, int rank, int k)
{
  return round * 1000 + rank * 10 + k;
}

static int bad_pc;

/* ---- 7.13: one of each persistent collective, started in a varying order ---- */
static void persistent_all(MPI_Comm comm)
{
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int root = size - 1;
  MPI_Info info = MPI_INFO_NULL;
  MPI_Request req[NCOLL];
  int n = 0;

  int bc[CNT], bc_c[CNT];
  int gv_s[CNT], *gv_r = mt_alloc(sizeof(int) * CNT * size), *gv_cnt = mt_alloc(sizeof(int) * size),
                 *gv_dsp = mt_alloc(sizeof(int) * size);
  int *scv_s = mt_alloc(sizeof(int) * CNT * size), scv_r[CNT];
  int agv_s[CNT], *agv_r = mt_alloc(sizeof(int) * CNT * size);
  int *a2a_s = mt_alloc(sizeof(int) * size), *a2a_r = mt_alloc(sizeof(int) * size);
  int *a2av_s = mt_alloc(sizeof(int) * 2 * size), *a2av_r = mt_alloc(sizeof(int) * 2 * size);
  int *ones = mt_alloc(sizeof(int) * size), *disp = mt_alloc(sizeof(int) * size),
      *disp2 = mt_alloc(sizeof(int) * size), *bdisp = mt_alloc(sizeof(int) * size);
  double *a2aw_s = mt_alloc(sizeof(double) * size), *a2aw_r = mt_alloc(sizeof(double) * size);
  MPI_Datatype *dts = mt_alloc(sizeof(MPI_Datatype) * size);
  int red_s[CNT], red_r[CNT], ar_s[CNT], ar_r[CNT];
  int *rsb_s = mt_alloc(sizeof(int) * 2 * size), rsb_r[2];
  int *rs_s = mt_alloc(sizeof(int) * size * (size + 1) / 2), *rs_cnt = mt_alloc(sizeof(int) * size),
      *rs_r = mt_alloc(sizeof(int) * size);
  int scan_s[CNT], scan_r[CNT], ex_s[CNT], ex_r[CNT];
  for (int q = 0; q < size; q++) {
    gv_cnt[q] = 1 + q % CNT;
    gv_dsp[q] = q * CNT;
    ones[q] = 1;
    disp[q] = q;
    disp2[q] = 2 * q + 1; /* alltoallv: element 2q+1 of each pair */
    bdisp[q] = q * (int)sizeof(double);
    dts[q] = MPI_DOUBLE;
    rs_cnt[q] = q + 1;
  }

  MPI_Barrier_init(comm, info, &req[n++]);
  MPI_Bcast_init(bc, CNT, MPI_INT, root, comm, info, &req[n++]);
  MPI_Bcast_init_c(bc_c, (MPI_Count)CNT, MPI_INT, 0, comm, info, &req[n++]);
  MPI_Gatherv_init(gv_s, gv_cnt[rank], MPI_INT, gv_r, gv_cnt, gv_dsp, MPI_INT, 0, comm, info,
                   &req[n++]);
  MPI_Scatterv_init(scv_s, gv_cnt, gv_dsp, MPI_INT, scv_r, gv_cnt[rank], MPI_INT, 0, comm, info,
                    &req[n++]);
  MPI_Allgatherv_init(agv_s, gv_cnt[rank], MPI_INT, agv_r, gv_cnt, gv_dsp, MPI_INT, comm, info,
                      &req[n++]);
  MPI_Alltoall_init(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, comm, info, &req[n++]);
  MPI_Alltoallv_init(a2av_s, ones, disp2, MPI_INT, a2av_r, ones, disp, MPI_INT, comm, info,
                     &req[n++]);
  MPI_Alltoallw_init(a2aw_s, ones, bdisp, dts, a2aw_r, ones, bdisp, dts, comm, info, &req[n++]);
  MPI_Reduce_init(red_s, red_r, CNT, MPI_INT, MPI_SUM, root, comm, info, &req[n++]);
  MPI_Allreduce_init(ar_s, ar_r, CNT, MPI_INT, MPI_MAX, comm, info, &req[n++]);
  MPI_Reduce_scatter_block_init(rsb_s, rsb_r, 2, MPI_INT, MPI_SUM, comm, info, &req[n++]);
  MPI_Reduce_scatter_init(rs_s, rs_r, rs_cnt, MPI_INT, MPI_SUM, comm, info, &req[n++]);
  MPI_Scan_init(scan_s, scan_r, CNT, MPI_INT, MPI_SUM, comm, info, &req[n++]);
  MPI_Exscan_init(ex_s, ex_r, CNT, MPI_INT, MPI_SUM, comm, info, &req[n++]);
  int nreq = n;

  for (int round = 0; round < ROUNDS; round++) {
    /* new contents of the send buffers, receive buffers cleared */
    for (int k = 0; k < CNT; k++) {
      bc[k] = rank == root ? val(round, root, k) : -1;
      bc_c[k] = rank == 0 ? val(round, 0, k) + 7 : -1;
      gv_s[k] = agv_s[k] = val(round, rank, k);
      red_s[k] = ar_s[k] = scan_s[k] = ex_s[k] = val(round, rank, k);
      scv_r[k] = scan_r[k] = -1;
      ex_r[k] = -7;
    }
    for (int q = 0; q < size; q++)
      for (int k = 0; k < CNT; k++) {
        scv_s[q * CNT + k] = val(round, q, k) + 5;
        gv_r[q * CNT + k] = agv_r[q * CNT + k] = -1;
      }
    for (int q = 0; q < size; q++) {
      a2a_s[q] = val(round, rank, q);
      a2av_s[2 * q] = -3;
      a2av_s[2 * q + 1] = val(round, rank, q) + 1;
      a2aw_s[q] = val(round, rank, q) + 0.5;
      a2a_r[q] = a2av_r[q] = -1;
      a2aw_r[q] = -1.0;
      rsb_s[2 * q] = val(round, rank, q);
      rsb_s[2 * q + 1] = 1;
      rs_r[q] = -1;
    }
    for (int i = 0; i < size * (size + 1) / 2; i++)
      rs_s[i] = round + i + rank;
    rsb_r[0] = rsb_r[1] = -1;

    /* start them in an order that depends on the rank and the round */
    MPI_Request order[NCOLL];
    for (int i = 0; i < nreq; i++)
      order[i] = req[(i * (2 * rank + 1) + round * 5) % nreq];
    int ok_perm = 1;
    /* not a permutation when 2*rank+1 and nreq = 15 share a factor */
    for (int i = 0; i < nreq && ok_perm; i++)
      for (int j = i + 1; j < nreq; j++)
        if (order[i] == order[j])
          ok_perm = 0;
    if (!ok_perm)
      for (int i = 0; i < nreq; i++)
        order[i] = req[(nreq - 1 - i + round) % nreq];
    if (round % 2 == 0)
      MPI_Startall(nreq, order);
    else
      for (int i = 0; i < nreq; i++)
        MPI_Start(&order[i]);
    MPI_Waitall(nreq, order, MPI_STATUSES_IGNORE);

    /* check */
    int b = 0;
    for (int k = 0; k < CNT; k++) {
      b += bc[k] != val(round, root, k);
      b += bc_c[k] != val(round, 0, k) + 7;
      if (k < gv_cnt[rank])
        b += scv_r[k] != val(round, rank, k) + 5;
      int ssum = 0, esum = 0, tot = 0, mx = val(round, size - 1, k);
      for (int q = 0; q < size; q++) {
        tot += val(round, q, k);
        if (q <= rank)
          ssum += val(round, q, k);
        if (q < rank)
          esum += val(round, q, k);
      }
      b += scan_r[k] != ssum;
      if (rank > 0)
        b += ex_r[k] != esum;
      b += ar_r[k] != mx;
      if (rank == root)
        b += red_r[k] != tot;
    }
    for (int q = 0; q < size; q++) {
      for (int k = 0; k < CNT; k++) {
        if (rank == 0 && k < gv_cnt[q])
          b += gv_r[q * CNT + k] != val(round, q, k);
        if (k < gv_cnt[q])
          b += agv_r[q * CNT + k] != val(round, q, k);
      }
      b += a2a_r[q] != val(round, q, rank);
      b += a2av_r[q] != val(round, q, rank) + 1;
      b += a2aw_r[q] != val(round, q, rank) + 0.5;
    }
    int rsb0 = 0;
    for (int q = 0; q < size; q++)
      rsb0 += val(round, q, rank);
    b += rsb_r[0] != rsb0 || rsb_r[1] != size;
    int off = rank * (rank + 1) / 2;
    for (int i = 0; i < rank + 1; i++) {
      int want = 0;
      for (int q = 0; q < size; q++)
        want += round + off + i + q;
      b += rs_r[i] != want;
    }
    bad_pc += b;
    /* every request is inactive again, none freed */
    for (int i = 0; i < nreq; i++)
      bad_pc += req[i] == MPI_REQUEST_NULL;
    mt_local_calls(2);
  }
  for (int i = 0; i < nreq; i++)
    MPI_Request_free(&req[i]);
  free(gv_r);
  free(gv_cnt);
  free(gv_dsp);
  free(scv_s);
  free(agv_r);
  free(a2a_s);
  free(a2a_r);
  free(a2av_s);
  free(a2av_r);
  free(ones);
  free(disp);
  free(disp2);
  free(bdisp);
  free(a2aw_s);
  free(a2aw_r);
  free(dts);
  free(rsb_s);
  free(rs_s);
  free(rs_cnt);
  free(rs_r);
}

/* The broadcast of an example, started as a persistent request (pers) or as MPI_Ibcast. */
static void bcast_start(int pers, int *buf, int count, MPI_Datatype type, MPI_Comm comm,
                        MPI_Request *req)
{
  if (pers)
    MPI_Start(req);
  else
    MPI_Ibcast(buf, count, type, 0, comm, req);
}

/* The same for a barrier. */
static void barrier_start(int pers, MPI_Comm comm, MPI_Request *req)
{
  if (pers)
    MPI_Start(req);
  else
    MPI_Ibarrier(comm, req);
}

static void compute(int *buf, int count, int round, int which)
{
  for (int k = 0; k < count; k++)
    buf[k] = val(round, which, k);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std4_pcoll");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);

  persistent_all(comm);
  mt_check_int("7.13 every persistent collective, started in varying orders: wrong", bad_pc, 0);
  mt_allreduce_steps(2);

  /* pairs (0,1), (2,3), ... for the two-process examples */
  int pr = rank / 2;
  int in_pair = 2 * pr + 1 < size;
  MPI_Comm pcomm;
  MPI_Comm_split(MPI_COMM_WORLD, in_pair ? pr : MPI_UNDEFINED, rank, &pcomm);
  int prank = rank % 2;

  int count = CNT, tag = 5;
  MPI_Datatype type = MPI_INT, dtype = MPI_INT;
  int buf[CNT], buf1[CNT], buf2[CNT], buf3[CNT];
  int bad[2][7];
  memset(bad, 0, sizeof bad);

  for (int pers = 0; pers < 2; pers++) {
    for (int round = 0; round < ROUNDS; round++) {
      /* E5: a nonblocking barrier around a blocking broadcast */
      {
        MPI_Request req;
        compute(buf1, count, round, rank == 0 ? 50 : 99);
        if (pers) {
          MPI_Barrier_init(comm, MPI_INFO_NULL, &req);
          MPI_Start(&req);
        } else
          MPI_Ibarrier(comm, &req);
        MPI_Bcast(buf1, count, type, 0, comm);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (pers)
          MPI_Request_free(&req);
        for (int k = 0; k < count; k++)
          bad[pers][0] += buf1[k] != val(round, 50, k);
      }
      if (in_pair) {
        /* E6: the reversed order, made correct by a duplicate communicator */
        MPI_Request req;
        MPI_Comm dupcomm;
        MPI_Comm_dup(pcomm, &dupcomm);
        if (pers)
          MPI_Barrier_init(pcomm, MPI_INFO_NULL, &req);
        compute(buf1, count, round, prank == 0 ? 60 : 99);
        switch (prank) {
        case 0:
          barrier_start(pers, pcomm, &req);
          MPI_Bcast(buf1, count, type, 0, dupcomm);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          break;
        case 1:
          MPI_Bcast(buf1, count, type, 0, dupcomm);
          barrier_start(pers, pcomm, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          break;
        }
        if (pers)
          MPI_Request_free(&req);
        MPI_Comm_free(&dupcomm);
        for (int k = 0; k < count; k++)
          bad[pers][1] += buf1[k] != val(round, 60, k);

        /* E7: the barrier progresses inside MPI_Recv */
        if (pers)
          MPI_Barrier_init(pcomm, MPI_INFO_NULL, &req);
        compute(buf, count, round, prank == 0 ? 70 : 99);
        switch (prank) {
        case 0:
          barrier_start(pers, pcomm, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          MPI_Send(buf, count, dtype, 1, tag, pcomm);
          break;
        case 1:
          barrier_start(pers, pcomm, &req);
          MPI_Recv(buf, count, dtype, 0, tag, pcomm, MPI_STATUS_IGNORE);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          break;
        }
        if (pers)
          MPI_Request_free(&req);
        for (int k = 0; k < count; k++)
          bad[pers][2] += buf[k] != val(round, 70, k);

        /* E9: collective and point-to-point requests in one MPI_Waitall */
        MPI_Request reqs[2];
        compute(buf, count, round, prank == 0 ? 90 : 99);
        MPI_Request preq;
        if (pers)
          MPI_Barrier_init(pcomm, MPI_INFO_NULL, &preq);
        switch (prank) {
        case 0:
          if (pers) {
            reqs[0] = preq;
            MPI_Start(&reqs[0]);
          } else
            MPI_Ibarrier(pcomm, &reqs[0]);
          MPI_Send(buf, count, dtype, 1, tag, pcomm);
          MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
          break;
        case 1:
          MPI_Irecv(buf, count, dtype, 0, tag, pcomm, &reqs[0]);
          if (pers) {
            reqs[1] = preq;
            MPI_Start(&reqs[1]);
          } else
            MPI_Ibarrier(pcomm, &reqs[1]);
          MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
          break;
        }
        if (pers)
          MPI_Request_free(&preq);
        for (int k = 0; k < count; k++)
          bad[pers][3] += buf[k] != val(round, 90, k);
      }
      /* E10: three outstanding broadcasts */
      {
        MPI_Request reqs[3];
        if (pers) {
          MPI_Bcast_init(buf1, count, type, 0, comm, MPI_INFO_NULL, &reqs[0]);
          MPI_Bcast_init(buf2, count, type, 0, comm, MPI_INFO_NULL, &reqs[1]);
          MPI_Bcast_init(buf3, count, type, 0, comm, MPI_INFO_NULL, &reqs[2]);
        }
        compute(buf1, count, round, rank == 0 ? 101 : 99);
        bcast_start(pers, buf1, count, type, comm, &reqs[0]);
        compute(buf2, count, round, rank == 0 ? 102 : 99);
        bcast_start(pers, buf2, count, type, comm, &reqs[1]);
        compute(buf3, count, round, rank == 0 ? 103 : 99);
        bcast_start(pers, buf3, count, type, comm, &reqs[2]);
        MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
        if (pers)
          for (int i = 0; i < 3; i++)
            MPI_Request_free(&reqs[i]);
        for (int k = 0; k < count; k++)
          bad[pers][4] += buf1[k] != val(round, 101, k) || buf2[k] != val(round, 102, k) ||
                          buf3[k] != val(round, 103, k);
      }
      /* E12: two broadcasts completed in reverse order */
      {
        MPI_Request reqs[2];
        if (pers) {
          MPI_Bcast_init(buf1, count, type, 0, comm, MPI_INFO_NULL, &reqs[0]);
          MPI_Bcast_init(buf2, count, type, 0, comm, MPI_INFO_NULL, &reqs[1]);
        }
        compute(buf1, count, round, rank == 0 ? 121 : 99);
        bcast_start(pers, buf1, count, type, comm, &reqs[0]);
        compute(buf2, count, round, rank == 0 ? 122 : 99);
        bcast_start(pers, buf2, count, type, comm, &reqs[1]);
        MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
        /* nothing is known about the status of the first bcast here */
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        if (pers) {
          MPI_Request_free(&reqs[0]);
          MPI_Request_free(&reqs[1]);
        }
        for (int k = 0; k < count; k++)
          bad[pers][6] += buf1[k] != val(round, 121, k) || buf2[k] != val(round, 122, k);
      }
      int v = rank, s = 0;
      MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      bad[pers][5] += s != size * (size - 1) / 2;
    }
  }
  if (in_pair)
    MPI_Comm_free(&pcomm);

  /* E11: three overlapping communicators of ranks 0-2 */
  int bad11[2] = {0, 0};
  if (size >= 3) {
    MPI_Group wgroup, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    int members[3][2] = {{0, 1}, {1, 2}, {0, 2}};
    MPI_Comm c[3] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    for (int i = 0; i < 3; i++)
      if (rank == members[i][0] || rank == members[i][1]) {
        MPI_Group_incl(wgroup, 2, members[i], &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, 10 + i, &c[i]);
        MPI_Group_free(&g);
      }
    MPI_Group_free(&wgroup);
    MPI_Comm comm1 = c[0], comm2 = c[1], comm3 = c[2];
    for (int pers = 0; pers < 2; pers++)
      for (int round = 0; round < ROUNDS; round++) {
        if (rank > 2)
          continue;
        int sbuf1[CNT], sbuf2[CNT], sbuf3[CNT], rbuf1[CNT], rbuf2[CNT], rbuf3[CNT];
        for (int k = 0; k < count; k++) {
          sbuf1[k] = val(round, rank, k);
          sbuf2[k] = val(round, rank, k) * 2;
          sbuf3[k] = val(round, rank, k) * 3;
          rbuf1[k] = rbuf2[k] = rbuf3[k] = -1;
        }
        MPI_Request reqs[2];
        MPI_Comm ca = rank == 2 ? comm2 : comm1, cb = rank == 1 ? comm2 : comm3;
        int *sa = rank == 2 ? sbuf2 : sbuf1, *ra = rank == 2 ? rbuf2 : rbuf1;
        int *sb = rank == 1 ? sbuf2 : sbuf3, *rb = rank == 1 ? rbuf2 : rbuf3;
        if (pers) {
          MPI_Allreduce_init(sa, ra, count, dtype, MPI_SUM, ca, MPI_INFO_NULL, &reqs[0]);
          MPI_Allreduce_init(sb, rb, count, dtype, MPI_SUM, cb, MPI_INFO_NULL, &reqs[1]);
          MPI_Startall(2, reqs);
        } else {
          MPI_Iallreduce(sa, ra, count, dtype, MPI_SUM, ca, &reqs[0]);
          MPI_Iallreduce(sb, rb, count, dtype, MPI_SUM, cb, &reqs[1]);
        }
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        if (pers) {
          MPI_Request_free(&reqs[0]);
          MPI_Request_free(&reqs[1]);
        }
        for (int k = 0; k < count; k++) {
          int w1 = val(round, 0, k) + val(round, 1, k);
          int w2 = 2 * (val(round, 1, k) + val(round, 2, k));
          int w3 = 3 * (val(round, 0, k) + val(round, 2, k));
          if (rank == 0)
            bad11[pers] += rbuf1[k] != w1 || rbuf3[k] != w3;
          if (rank == 1)
            bad11[pers] += rbuf1[k] != w1 || rbuf2[k] != w2;
          if (rank == 2)
            bad11[pers] += rbuf2[k] != w2 || rbuf3[k] != w3;
        }
      }
    for (int i = 0; i < 3; i++)
      if (c[i] != MPI_COMM_NULL)
        MPI_Comm_free(&c[i]);
  }

  const char *names[7] = {"E5 ibarrier around bcast",
                          "E6 reversed order on a duplicate communicator",
                          "E7 barrier progressed inside recv",
                          "E9 barrier and irecv in one waitall",
                          "E10 three outstanding bcasts",
                          "allreduces between the rounds",
                          "E12 two bcasts completed in reverse order"};
  for (int pers = 0; pers < 2; pers++) {
    for (int e = 0; e < 7; e++) {
      char what[160];
      snprintf(what, sizeof what, "7.14 %s (%s): wrong", names[e],
               pers ? "persistent" : "nonblocking");
      mt_check_int(what, bad[pers][e], 0);
    }
    if (size >= 3) {
      char what[160];
      snprintf(what, sizeof what, "7.14 E11 overlapping communicators (%s): wrong",
               pers ? "persistent" : "nonblocking");
      mt_check_int(what, bad11[pers], 0);
    }
  }
  MPI_Comm_free(&comm);
  mt_allreduce_steps(4);
  return mt_end();
}
