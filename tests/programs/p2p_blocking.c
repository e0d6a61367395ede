/*
 * p2p_blocking.c - blocking point-to-point between two ranks.
 * Send/Recv (small, eager and large rendezvous-sized), status fields and MPI_Get_count,
 * receive into a larger buffer, zero-length messages, message ordering, MPI_PROC_NULL,
 * Sendrecv and Sendrecv_replace.
 * Ranks: 2.
 */
#include "mpitest.h"

#define BIG (1 << 18) /* 256 Ki ints = 1 MiB: well above any eager threshold */

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_blocking");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  MPI_Status st;
  int count;

  /* 1. small int message 0 -> 1 with status checks */
  {
    int buf[8], exp[8];
    for (int i = 0; i < 8; i++)
      exp[i] = 100 + i * i;
    if (me == 0) {
      MPI_Send(exp, 8, MPI_INT, 1, 11, MPI_COMM_WORLD);
      mt_log("sent 8 ints with tag 11");
    } else {
      memset(buf, 0, sizeof buf);
      MPI_Recv(buf, 8, MPI_INT, 0, 11, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_INT, &count);
      mt_check_ints("recv small ints", buf, exp, 8);
      mt_check_int("status.MPI_SOURCE", st.MPI_SOURCE, 0);
      mt_check_int("status.MPI_TAG", st.MPI_TAG, 11);
      mt_check_int("get_count", count, 8);
    }
  }

  /* 2. doubles 1 -> 0, received into a larger buffer: count must be the sent count */
  {
    double buf[10], exp[10];
    for (int i = 0; i < 10; i++) {
      exp[i] = i < 6 ? 0.5 * i - 1.25 : -7.0;
      buf[i] = -7.0;
    }
    if (me == 1) {
      MPI_Send(exp, 6, MPI_DOUBLE, 0, 22, MPI_COMM_WORLD);
      mt_log("sent 6 doubles with tag 22");
    } else {
      MPI_Recv(buf, 10, MPI_DOUBLE, 1, 22, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_DOUBLE, &count);
      mt_check_dbls("recv 6 doubles into 10 (tail untouched)", buf, exp, 10);
      mt_check_int("get_count of short message", count, 6);
      MPI_Get_count(&st, MPI_BYTE, &count);
      mt_check_int("get_count in bytes", count, 48);
    }
  }

  /* 3. large message both ways (rendezvous path) */
  {
    int *buf = malloc(sizeof(int) * BIG);
    long long sum = 0, expsum = 0;
    for (int i = 0; i < BIG; i++)
      expsum += (long long)(i % 1000) * (peer + 1);
    if (me == 0) {
      for (int i = 0; i < BIG; i++)
        buf[i] = (i % 1000) * (me + 1);
      MPI_Send(buf, BIG, MPI_INT, 1, 33, MPI_COMM_WORLD);
      MPI_Recv(buf, BIG, MPI_INT, 1, 33, MPI_COMM_WORLD, &st);
    } else {
      int *tmp = malloc(sizeof(int) * BIG);
      for (int i = 0; i < BIG; i++)
        tmp[i] = (i % 1000) * (me + 1);
      MPI_Recv(buf, BIG, MPI_INT, 0, 33, MPI_COMM_WORLD, &st);
      MPI_Send(tmp, BIG, MPI_INT, 0, 33, MPI_COMM_WORLD);
      free(tmp);
    }
    MPI_Get_count(&st, MPI_INT, &count);
    for (int i = 0; i < BIG; i++)
      sum += buf[i];
    mt_check_int("large message count", count, BIG);
    mt_check_int("large message checksum", sum, expsum);
    free(buf);
  }

  /* 4. zero-length message */
  {
    int dummy = 12345;
    if (me == 0) {
      MPI_Send(NULL, 0, MPI_INT, 1, 44, MPI_COMM_WORLD);
    } else {
      MPI_Recv(&dummy, 1, MPI_INT, 0, 44, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_INT, &count);
      mt_check_int("zero-length get_count", count, 0);
      mt_check_int("zero-length buffer untouched", dummy, 12345);
      mt_check_int("zero-length tag", st.MPI_TAG, 44);
    }
  }

  /* 5. non-overtaking: several messages with the same tag arrive in order */
  {
    int got[6], exp[6];
    for (int i = 0; i < 6; i++)
      exp[i] = 1000 * (me + 1) + i;
    if (me == 0) {
      for (int i = 0; i < 6; i++) {
        int v = 1000 * (peer + 1) + i;
        MPI_Send(&v, 1, MPI_INT, 1, 55, MPI_COMM_WORLD);
      }
      for (int i = 0; i < 6; i++)
        MPI_Recv(&got[i], 1, MPI_INT, 1, 55, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      for (int i = 0; i < 6; i++)
        MPI_Recv(&got[i], 1, MPI_INT, 0, 55, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < 6; i++) {
        int v = 1000 * (peer + 1) + i;
        MPI_Send(&v, 1, MPI_INT, 0, 55, MPI_COMM_WORLD);
      }
    }
    mt_check_ints("ordered same-tag messages", got, exp, 6);
  }

  /* 6. MPI_PROC_NULL */
  {
    int v = 77;
    MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 66, MPI_COMM_WORLD);
    MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 66, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    mt_check_int("recv from PROC_NULL: buffer untouched", v, 77);
    mt_check_int("recv from PROC_NULL: source", st.MPI_SOURCE, MPI_PROC_NULL);
    mt_check_int("recv from PROC_NULL: tag is MPI_ANY_TAG", st.MPI_TAG, MPI_ANY_TAG);
    mt_check_int("recv from PROC_NULL: count", count, 0);
  }

  /* 7. Sendrecv exchange; the receive buffer is larger than the message */
  {
    int sendv[4], recvv[6] = {-1, -1, -1, -1, -1, -1}, exp[6] = {0, 0, 0, 0, -1, -1};
    for (int i = 0; i < 4; i++) {
      sendv[i] = me * 10 + i;
      exp[i] = peer * 10 + i;
    }
    MPI_Sendrecv(sendv, 4, MPI_INT, peer, 77, recvv, 6, MPI_INT, peer, 77, MPI_COMM_WORLD, &st);
    mt_check_ints("sendrecv payload", recvv, exp, 6);
    MPI_Get_count(&st, MPI_INT, &count);
    mt_check_int("sendrecv count", count, 4);
    mt_check_int("sendrecv source", st.MPI_SOURCE, peer);
  }

  /* 8. Sendrecv_replace, with different send and receive tags */
  {
    double buf[5], exp[5];
    for (int i = 0; i < 5; i++) {
      buf[i] = me + 0.25 * i;
      exp[i] = peer + 0.25 * i;
    }
    int stag = me == 0 ? 80 : 81, rtag = me == 0 ? 81 : 80;
    MPI_Sendrecv_replace(buf, 5, MPI_DOUBLE, peer, stag, peer, rtag, MPI_COMM_WORLD, &st);
    mt_check_dbls("sendrecv_replace", buf, exp, 5);
    mt_check_int("sendrecv_replace tag", st.MPI_TAG, rtag);
  }

  /* 9. send to self */
  {
    int a[3] = {me, me + 1, me + 2}, b[3] = {0, 0, 0};
    MPI_Sendrecv(a, 3, MPI_INT, me, 99, b, 3, MPI_INT, me, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    mt_check_ints("sendrecv to self", b, a, 3);
  }

  return mt_end();
}
