/*
 * p2p_nonblocking.c - Isend/Irecv with every completion call: Wait, Waitall, Waitany,
 * Waitsome, Test, Testall, Testany, Testsome, Request_get_status, and the MPI_REQUEST_NULL
 * corner cases, and calls with no requests and null arrays. Completion order is not deterministic, so the programs only report the set
 * of completed requests and the data, never the order.
 * Ranks: 2.
 */
#include "mpitest.h"

#define K 8
#define LEN 64

static int value(int src, int tag, int i)
{
  return src * 100000 + tag * 1000 + i;
}

/* Post K receives from the peer (tags base..base+K-1) and K sends to the peer in reverse tag
 * order, so receives complete out of order. */
static void post(int me, int base, int rbuf[K][LEN], int sbuf[K][LEN], MPI_Request *rreq,
                 MPI_Request *sreq)
{
  int peer = 1 - me;
  for (int k = 0; k < K; k++)
    MPI_Irecv(rbuf[k], LEN, MPI_INT, peer, base + k, MPI_COMM_WORLD, &rreq[k]);
  for (int k = K - 1; k >= 0; k--) {
    for (int i = 0; i < LEN; i++)
      sbuf[k][i] = value(me, base + k, i);
    MPI_Isend(sbuf[k], LEN, MPI_INT, peer, base + k, MPI_COMM_WORLD, &sreq[k]);
  }
}

static int data_ok(int me, int base, int rbuf[K][LEN])
{
  int peer = 1 - me;
  for (int k = 0; k < K; k++)
    for (int i = 0; i < LEN; i++)
      if (rbuf[k][i] != value(peer, base + k, i))
        return 0;
  return 1;
}

static int statuses_ok(int me, int base, const MPI_Status *st, const int *idx)
{
  for (int k = 0; k < K; k++) {
    int n, j = idx ? idx[k] : k;
    MPI_Get_count(&st[k], MPI_INT, &n);
    if (st[k].MPI_SOURCE != 1 - me || st[k].MPI_TAG != base + j || n != LEN)
      return 0;
  }
  return 1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_nonblocking");
  mt_require_size(2);
  const int me = mt_.rank;
  static int rbuf[K][LEN], sbuf[K][LEN];
  MPI_Request rreq[K], sreq[K];
  MPI_Status st[K];

  /* 1. Waitall on receives and sends */
  post(me, 100, rbuf, sbuf, rreq, sreq);
  memset(st, 0x41, sizeof st);
  MPI_Waitall(K, rreq, st);
  MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
  mt_check(data_ok(me, 100, rbuf), "waitall: data");
  mt_check(statuses_ok(me, 100, st, NULL), "waitall: statuses (source, tag, count)");
  {
    /* MPICH sets them (MPI allows it; its part/multipart test reads them) */
    int errors_set = 1;
    for (int k = 0; k < K; k++)
      errors_set &= st[k].MPI_ERROR == MPI_SUCCESS;
    mt_check(errors_set, "waitall: MPI_ERROR of every status is MPI_SUCCESS");
  }
  {
    int allnull = 1;
    for (int k = 0; k < K; k++)
      allnull &= rreq[k] == MPI_REQUEST_NULL && sreq[k] == MPI_REQUEST_NULL;
    mt_check(allnull, "waitall: requests set to MPI_REQUEST_NULL");
  }

  /* 2. Waitany: every index exactly once, then MPI_UNDEFINED */
  {
    memset(rbuf, 0, sizeof rbuf);
    post(me, 200, rbuf, sbuf, rreq, sreq);
    int seen[K] = {0}, tagok = 1, idx;
    MPI_Status s;
    for (int n = 0; n < K; n++) {
      MPI_Waitany(K, rreq, &idx, &s);
      if (idx >= 0 && idx < K)
        seen[idx]++;
      if (s.MPI_TAG != 200 + idx)
        tagok = 0;
    }
    MPI_Waitany(K, rreq, &idx, &s);
    mt_check(idx == MPI_UNDEFINED, "waitany on all-null array gives MPI_UNDEFINED");
    int ones[K];
    for (int k = 0; k < K; k++)
      ones[k] = 1;
    mt_check_ints("waitany: completions per index", seen, ones, K);
    mt_check(tagok, "waitany: status tag matches the index");
    mt_check(data_ok(me, 200, rbuf), "waitany: data");
    for (int n = 0; n < K; n++)
      MPI_Waitany(K, sreq, &idx, MPI_STATUS_IGNORE);
  }

  /* 3. Waitsome */
  {
    memset(rbuf, 0, sizeof rbuf);
    post(me, 300, rbuf, sbuf, rreq, sreq);
    int seen[K] = {0}, done = 0, outcount, idx[K], tagok = 1;
    while (done < K) {
      MPI_Waitsome(K, rreq, &outcount, idx, st);
      for (int j = 0; j < outcount; j++) {
        seen[idx[j]]++;
        if (st[j].MPI_TAG != 300 + idx[j])
          tagok = 0;
      }
      done += outcount;
    }
    MPI_Waitsome(K, rreq, &outcount, idx, st);
    mt_check(outcount == MPI_UNDEFINED, "waitsome on all-null array gives MPI_UNDEFINED");
    int ones[K];
    for (int k = 0; k < K; k++)
      ones[k] = 1;
    mt_check_ints("waitsome: completions per index", seen, ones, K);
    mt_check(tagok, "waitsome: status tag matches the index");
    mt_check(data_ok(me, 300, rbuf), "waitsome: data");
    MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
  }

  /* 4. Testall polling loop */
  {
    memset(rbuf, 0, sizeof rbuf);
    post(me, 400, rbuf, sbuf, rreq, sreq);
    int flag = 0;
    while (!flag)
      MPI_Testall(K, rreq, &flag, st);
    mt_check(data_ok(me, 400, rbuf), "testall: data");
    mt_check(statuses_ok(me, 400, st, NULL), "testall: statuses");
    flag = 0;
    while (!flag)
      MPI_Testall(K, sreq, &flag, MPI_STATUSES_IGNORE);
    MPI_Testall(K, rreq, &flag, MPI_STATUSES_IGNORE);
    mt_check_int("testall on all-null array: flag", flag, 1);
  }

  /* 5. Testany polling loop */
  {
    memset(rbuf, 0, sizeof rbuf);
    post(me, 500, rbuf, sbuf, rreq, sreq);
    int seen[K] = {0}, done = 0, idx, flag;
    MPI_Status s;
    while (done < K) {
      MPI_Testany(K, rreq, &idx, &flag, &s);
      if (flag && idx != MPI_UNDEFINED) {
        seen[idx]++;
        done++;
      }
    }
    MPI_Testany(K, rreq, &idx, &flag, &s);
    mt_check(flag == 1 && idx == MPI_UNDEFINED,
             "testany on all-null array: flag=1 index=MPI_UNDEFINED");
    int ones[K];
    for (int k = 0; k < K; k++)
      ones[k] = 1;
    mt_check_ints("testany: completions per index", seen, ones, K);
    mt_check(data_ok(me, 500, rbuf), "testany: data");
    MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
  }

  /* 6. Testsome polling loop */
  {
    memset(rbuf, 0, sizeof rbuf);
    post(me, 600, rbuf, sbuf, rreq, sreq);
    int seen[K] = {0}, done = 0, outcount, idx[K];
    while (done < K) {
      MPI_Testsome(K, rreq, &outcount, idx, MPI_STATUSES_IGNORE);
      for (int j = 0; j < outcount; j++)
        seen[idx[j]]++;
      if (outcount != MPI_UNDEFINED)
        done += outcount;
    }
    MPI_Testsome(K, rreq, &outcount, idx, MPI_STATUSES_IGNORE);
    mt_check(outcount == MPI_UNDEFINED, "testsome on all-null array gives MPI_UNDEFINED");
    int ones[K];
    for (int k = 0; k < K; k++)
      ones[k] = 1;
    mt_check_ints("testsome: completions per index", seen, ones, K);
    mt_check(data_ok(me, 600, rbuf), "testsome: data");
    MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
  }

  /* 7. Test and Request_get_status on a single request; Wait/Test on MPI_REQUEST_NULL */
  {
    int v = -1, flag = 0, gflag = 0, n;
    MPI_Request r, s;
    MPI_Status stat;
    MPI_Irecv(&v, 1, MPI_INT, 1 - me, 700, MPI_COMM_WORLD, &r);
    int sv = 7000 + me;
    MPI_Isend(&sv, 1, MPI_INT, 1 - me, 700, MPI_COMM_WORLD, &s);
    /* Request_get_status does not free the request */
    while (!gflag)
      MPI_Request_get_status(r, &gflag, &stat);
    mt_check(r != MPI_REQUEST_NULL, "request_get_status leaves the request allocated");
    MPI_Get_count(&stat, MPI_INT, &n);
    mt_check_int("request_get_status count", n, 1);
    while (!flag)
      MPI_Test(&r, &flag, &stat);
    mt_check(r == MPI_REQUEST_NULL, "test frees the completed request");
    mt_check_int("test: value", v, 7000 + (1 - me));
    MPI_Wait(&s, MPI_STATUS_IGNORE);

    MPI_Request nul = MPI_REQUEST_NULL;
    flag = 0;
    MPI_Test(&nul, &flag, &stat);
    MPI_Get_count(&stat, MPI_INT, &n);
    mt_check(flag == 1 && stat.MPI_SOURCE == MPI_ANY_SOURCE && stat.MPI_TAG == MPI_ANY_TAG &&
                 n == 0,
             "test on MPI_REQUEST_NULL: flag=1 and empty status");
    MPI_Wait(&nul, &stat);
    mt_check(stat.MPI_SOURCE == MPI_ANY_SOURCE && stat.MPI_TAG == MPI_ANY_TAG,
             "wait on MPI_REQUEST_NULL: empty status");
  }

  /* 8. many outstanding requests mixed with blocking traffic on another tag */
  {
    enum { M = 32 };
    int in[M], out[M], blk = 0;
    MPI_Request rq[2 * M];
    for (int i = 0; i < M; i++) {
      MPI_Irecv(&in[i], 1, MPI_INT, 1 - me, 800 + i, MPI_COMM_WORLD, &rq[i]);
      out[i] = i * i + me;
    }
    /* a blocking exchange overtakes the pending non-blocking ones (different tag) */
    MPI_Sendrecv(&me, 1, MPI_INT, 1 - me, 899, &blk, 1, MPI_INT, 1 - me, 899, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < M; i++)
      MPI_Isend(&out[i], 1, MPI_INT, 1 - me, 800 + i, MPI_COMM_WORLD, &rq[M + i]);
    MPI_Waitall(2 * M, rq, MPI_STATUSES_IGNORE);
    int exp[M];
    for (int i = 0; i < M; i++)
      exp[i] = i * i + (1 - me);
    mt_check_int("blocking exchange amid pending requests", blk, 1 - me);
    mt_check_ints("32 outstanding irecvs", in, exp, M);
  }

  /* 9. no requests at all, with null arrays: every completion call succeeds at once */
  {
    int flag = 0, index = 0, outcount = 0, rcs[6];
    rcs[0] = MPI_Waitall(0, NULL, NULL);
    rcs[1] = MPI_Testall(0, NULL, &flag, NULL);
    rcs[2] = MPI_Waitany(0, NULL, &index, MPI_STATUS_IGNORE);
    rcs[3] = MPI_Testany(0, NULL, &index, &flag, MPI_STATUS_IGNORE);
    rcs[4] = MPI_Waitsome(0, NULL, &outcount, NULL, NULL);
    rcs[5] = MPI_Testsome(0, NULL, &outcount, NULL, NULL);
    mt_check_ints(
        "Waitall Testall Waitany Testany Waitsome Testsome of no requests", rcs,
        (int[]){MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS}, 6);
    mt_check(flag && index == MPI_UNDEFINED && outcount == MPI_UNDEFINED,
             "flag %d, index MPI_UNDEFINED, outcount MPI_UNDEFINED", flag);
  }

  return mt_end();
}
