/*
 * p2p_probe.c - Probe/Iprobe (size a message before receiving it), matched probes
 * Mprobe/Improbe with Mrecv/Imrecv (a matched message cannot be stolen by a later receive),
 * MPI_PROC_NULL probes (MPI_MESSAGE_NO_PROC) and Iprobe of a message that never comes.
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_probe");
  mt_require_size(2);
  const int me = mt_.rank;

  /* 1. Probe to size an unknown-length message, then receive exactly that much */
  if (me == 0) {
    int v[37];
    for (int i = 0; i < 37; i++)
      v[i] = i * 3;
    MPI_Send(v, 37, MPI_INT, 1, 5, MPI_COMM_WORLD);
  } else {
    MPI_Status st;
    int cnt;
    MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("probe: count", cnt, 37);
    mt_check_int("probe: tag", st.MPI_TAG, 5);
    int *v = malloc(sizeof(int) * (size_t)cnt);
    MPI_Recv(v, cnt, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
    long sum = 0;
    for (int i = 0; i < cnt; i++)
      sum += v[i];
    mt_check_int("probe then recv: sum", sum, 3 * 36 * 37 / 2);
    free(v);
  }

  /* 2. Iprobe: nothing pending on an unused tag; then poll until a message shows up */
  {
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    mt_check_int("iprobe of a tag nobody sends: flag", flag, 0);
    if (me == 1) {
      double d[5] = {1.5, 2.5, 3.5, 4.5, 5.5};
      MPI_Send(d, 5, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
    } else {
      MPI_Status st;
      int cnt;
      flag = 0;
      while (!flag)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
      MPI_Get_count(&st, MPI_DOUBLE, &cnt);
      mt_check(st.MPI_SOURCE == 1 && st.MPI_TAG == 6 && cnt == 5,
               "iprobe status: source 1 tag 6 count 5");
      /* probing again still sees the same message: probe does not consume */
      MPI_Probe(1, 6, MPI_COMM_WORLD, &st);
      double d[5];
      MPI_Recv(d, 5, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      double exp[5] = {1.5, 2.5, 3.5, 4.5, 5.5};
      mt_check_dbls("iprobe then recv", d, exp, 5);
    }
  }

  /* 3. Mprobe + Mrecv; a matched message is not visible to a later wildcard receive */
  if (me == 0) {
    int a = 111, b = 222;
    MPI_Send(&a, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
    MPI_Send(&b, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
  } else {
    MPI_Message msg;
    MPI_Status st;
    int cnt, x = 0, y = 0;
    MPI_Mprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check(st.MPI_TAG == 7 && cnt == 1, "mprobe matched the first message (tag 7, count 1)");
    /* this receive must get the *second* message, the first one is already matched */
    MPI_Recv(&y, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    mt_check(y == 222 && st.MPI_TAG == 8, "receive after mprobe skips the matched message");
    MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
    mt_check(x == 111 && st.MPI_TAG == 7, "mrecv delivers the matched message");
    mt_check(msg == MPI_MESSAGE_NULL, "mrecv sets the message handle to MPI_MESSAGE_NULL");
  }

  /* 4. Improbe polling + Imrecv + Wait */
  if (me == 1) {
    int v[4] = {9, 8, 7, 6};
    MPI_Send(v, 4, MPI_INT, 0, 9, MPI_COMM_WORLD);
  } else {
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    int flag = 0, cnt, v[4] = {0, 0, 0, 0};
    while (!flag)
      MPI_Improbe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("improbe count", cnt, 4);
    MPI_Request req;
    MPI_Imrecv(v, 4, MPI_INT, &msg, &req);
    MPI_Wait(&req, &st);
    int exp[4] = {9, 8, 7, 6};
    mt_check_ints("imrecv payload", v, exp, 4);
    mt_check_int("imrecv status source", st.MPI_SOURCE, 1);
  }

  /* 5. Probing MPI_PROC_NULL */
  {
    MPI_Message msg;
    MPI_Status st;
    int flag = 0, v = 5;
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    mt_check(msg == MPI_MESSAGE_NO_PROC, "mprobe(PROC_NULL) gives MPI_MESSAGE_NO_PROC");
    MPI_Mrecv(&v, 1, MPI_INT, &msg, &st);
    mt_check(st.MPI_SOURCE == MPI_PROC_NULL && v == 5,
             "mrecv of MPI_MESSAGE_NO_PROC: source PROC_NULL, buffer untouched");
    MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
    mt_check(flag == 1 && st.MPI_SOURCE == MPI_PROC_NULL,
             "iprobe(PROC_NULL): flag 1, source PROC_NULL");
  }

  /* 6. Several pending messages probed by tag out of arrival order */
  if (me == 0) {
    for (int t = 0; t < 4; t++) {
      int v[8];
      for (int i = 0; i <= t; i++)
        v[i] = t * 10 + i;
      MPI_Send(v, t + 1, MPI_INT, 1, 20 + t, MPI_COMM_WORLD);
    }
  } else {
    int counts[4], sums[4];
    for (int t = 3; t >= 0; t--) {
      MPI_Status st;
      MPI_Message m;
      int v[8];
      MPI_Mprobe(0, 20 + t, MPI_COMM_WORLD, &m, &st);
      MPI_Get_count(&st, MPI_INT, &counts[t]);
      MPI_Mrecv(v, 8, MPI_INT, &m, MPI_STATUS_IGNORE);
      sums[t] = 0;
      for (int i = 0; i < counts[t]; i++)
        sums[t] += v[i];
    }
    int ec[4] = {1, 2, 3, 4}, es[4] = {0, 21, 63, 126};
    mt_check_ints("mprobe by tag in reverse order: counts", counts, ec, 4);
    mt_check_ints("mprobe by tag in reverse order: sums", sums, es, 4);
  }

  return mt_end();
}
