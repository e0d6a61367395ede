/*
 * p2p_wildcard.c - MPI_ANY_SOURCE / MPI_ANY_TAG receives (blocking and non-blocking) with
 * three ranks: rank 0 receives from ranks 1 and 2 whose messages differ in tag and length,
 * and identifies each message only through its status (MPI_SOURCE, MPI_TAG, MPI_Get_count,
 * MPI_Get_elements). Results are recorded by sender so arrival order does not matter.
 * Ranks: 3.
 */
#include "mpitest.h"

#define ROUNDS 4

/* message from sender s in round k: tag, length and content all depend on (s, k) */
static int msg_tag(int s, int k)
{
  return 10 * s + k;
}
static int msg_len(int s, int k)
{
  return 3 * s + k + 1;
}
static int msg_val(int s, int k, int i)
{
  return s * 1000 + k * 100 + i;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_wildcard");
  mt_require_size(3);
  const int me = mt_.rank;

  /* 1. blocking MPI_ANY_SOURCE + MPI_ANY_TAG */
  if (me == 0) {
    int got[3][ROUNDS], okdata = 1, okcount = 1, buf[64];
    memset(got, 0, sizeof got);
    for (int n = 0; n < 2 * ROUNDS; n++) {
      MPI_Status st;
      int cnt;
      MPI_Recv(buf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_INT, &cnt);
      int s = st.MPI_SOURCE, k = st.MPI_TAG - 10 * s;
      if (s < 1 || s > 2 || k < 0 || k >= ROUNDS) {
        okdata = 0;
        continue;
      }
      got[s][k]++;
      if (cnt != msg_len(s, k))
        okcount = 0;
      for (int i = 0; i < cnt && i < 64; i++)
        if (buf[i] != msg_val(s, k, i))
          okdata = 0;
    }
    int exp[ROUNDS] = {1, 1, 1, 1};
    mt_check_ints("any/any: messages from rank 1 by round", got[1], exp, ROUNDS);
    mt_check_ints("any/any: messages from rank 2 by round", got[2], exp, ROUNDS);
    mt_check(okcount, "any/any: get_count matches each sender's length");
    mt_check(okdata, "any/any: payload matches (source, tag)");
  } else {
    for (int k = 0; k < ROUNDS; k++) {
      int buf[64];
      for (int i = 0; i < msg_len(me, k); i++)
        buf[i] = msg_val(me, k, i);
      MPI_Send(buf, msg_len(me, k), MPI_INT, 0, msg_tag(me, k), MPI_COMM_WORLD);
    }
    mt_log("sent %d messages to rank 0", ROUNDS);
  }
  /* keep the later tag-77 traffic from being matched by the any-tag receives above */
  MPI_Barrier(MPI_COMM_WORLD);

  /* 2. ANY_SOURCE with a fixed tag, and a fixed source with ANY_TAG: ordering per sender */
  if (me == 0) {
    int order_ok = 1, src_count[3] = {0, 0, 0};
    int last[3] = {-1, -1, -1};
    for (int n = 0; n < 6; n++) {
      int v;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &st);
      src_count[st.MPI_SOURCE]++;
      if (v / 10 != st.MPI_SOURCE || v % 10 <= last[st.MPI_SOURCE])
        order_ok = 0;
      last[st.MPI_SOURCE] = v % 10;
    }
    int expc[3] = {0, 3, 3};
    mt_check_ints("any-source/tag 77: messages per source", src_count, expc, 3);
    mt_check(order_ok, "any-source: per-sender order preserved");
    int tags[3];
    for (int n = 0; n < 3; n++) {
      int v;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, 2, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      tags[n] = st.MPI_TAG;
    }
    int expt[3] = {90, 91, 92};
    mt_check_ints("source 2 any-tag: tags in send order", tags, expt, 3);
  } else {
    for (int i = 0; i < 3; i++) {
      int v = me * 10 + i;
      MPI_Send(&v, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
    }
    if (me == 2)
      for (int i = 0; i < 3; i++)
        MPI_Send(&i, 1, MPI_INT, 0, 90 + i, MPI_COMM_WORLD);
  }

  /* 3. non-blocking wildcard receives, completed with Waitall */
  if (me == 0) {
    MPI_Request rq[4];
    MPI_Status st[4];
    double d[4][8];
    for (int i = 0; i < 4; i++)
      MPI_Irecv(d[i], 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]);
    MPI_Waitall(4, rq, st);
    int per_src[3] = {0, 0, 0}, ok = 1;
    for (int i = 0; i < 4; i++) {
      int cnt;
      MPI_Get_count(&st[i], MPI_DOUBLE, &cnt);
      per_src[st[i].MPI_SOURCE]++;
      if (cnt != st[i].MPI_SOURCE + 2 || st[i].MPI_TAG != 200 + st[i].MPI_SOURCE)
        ok = 0;
      for (int j = 0; j < cnt; j++)
        if (d[i][j] != st[i].MPI_SOURCE + j * 0.5)
          ok = 0;
    }
    int expc[3] = {0, 2, 2};
    mt_check_ints("irecv any/any: messages per source", per_src, expc, 3);
    mt_check(ok, "irecv any/any: count, tag and payload consistent with source");
  } else {
    double d[8];
    for (int j = 0; j < 8; j++)
      d[j] = me + j * 0.5;
    for (int i = 0; i < 2; i++)
      MPI_Send(d, me + 2, MPI_DOUBLE, 0, 200 + me, MPI_COMM_WORLD);
  }

  /* 4. Get_count that is not a whole number of elements -> MPI_UNDEFINED; Get_elements */
  if (me == 1) {
    char bytes[6] = {1, 2, 3, 4, 5, 6};
    MPI_Send(bytes, 6, MPI_BYTE, 2, 300, MPI_COMM_WORLD);
  } else if (me == 2) {
    char bytes[16];
    MPI_Status st;
    int cnt, el;
    MPI_Recv(bytes, 16, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check(cnt == MPI_UNDEFINED, "get_count(MPI_INT) of a 6-byte message is MPI_UNDEFINED");
    MPI_Get_count(&st, MPI_SHORT, &cnt);
    mt_check_int("get_count(MPI_SHORT) of a 6-byte message", cnt, 3);
    MPI_Get_elements(&st, MPI_BYTE, &el);
    mt_check_int("get_elements(MPI_BYTE)", el, 6);
    mt_check(st.MPI_SOURCE == 1 && st.MPI_TAG == 300,
             "status of wildcard receive: source 1 tag 300");
  }

  /* 5. ring with wildcard receives: everyone forwards a token, three laps */
  {
    int token = 0;
    int next = (me + 1) % 3;
    for (int lap = 0; lap < 3; lap++) {
      if (me == 0) {
        token += 1;
        MPI_Send(&token, 1, MPI_INT, next, 400 + lap, MPI_COMM_WORLD);
        MPI_Status st;
        MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_SOURCE != 2 || st.MPI_TAG != 400 + lap)
          mt_check(0, "ring: unexpected status");
      } else {
        MPI_Status st;
        MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_SOURCE != me - 1 || st.MPI_TAG != 400 + lap)
          mt_check(0, "ring: unexpected status");
        token = token * 10 + me;
        MPI_Send(&token, 1, MPI_INT, next, st.MPI_TAG, MPI_COMM_WORLD);
      }
    }
    /* lap 0: 1 -> 11 -> 112; lap 1: 113 -> 1131 -> 11312; lap 2: 11313 -> 113131 -> 1131312 */
    if (me == 0)
      mt_check_int("ring token after 3 laps", token, 1131312);
  }

  return mt_end();
}
