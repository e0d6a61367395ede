/*
 * std_p2p_persistent.c - communication modes (buffered, synchronous, ready), the exchange
 * patterns of the point-to-point semantics, persistent requests of every send mode, send-
 * receive shifts and null processes.
 *
 * Source: MPI-3.1, chapter 3 (Point-to-Point Communication):
 *   section 3.5 "Semantics of Point-to-Point Communication", its examples 1, 2, 3 and 5:
 *     M1 non-overtaking (two MPI_Bsend received by MPI_ANY_TAG then by tag, in order);
 *     M2 two intertwined matching pairs (MPI_Bsend tag1, MPI_Ssend tag2, received tag2 first);
 *     M3 an exchange of messages (send/recv against recv/send, safe with synchronous sends
 *        too: done with MPI_Ssend); M5 an exchange that relies on buffering (both send first;
 *        a small count, within MPICH's eager buffering); example 4, the errant exchange that
 *        always deadlocks, is left out;
 *   section 3.6 "Buffer Allocation and Usage": MPI_Buffer_attach/MPI_Buffer_detach around
 *     the buffered sends;
 *   section 3.9 "Persistent Communication Requests": MPI_Send_init, MPI_Bsend_init,
 *     MPI_Ssend_init, MPI_Rsend_init and MPI_Recv_init bound once and used in the sequence
 *     Create (Start Complete)* Free the section gives, with MPI_Start/MPI_Startall and
 *     MPI_Wait/MPI_Waitall, the buffers changed between rounds;
 *   section 3.10 "Send-Receive": a shift around a ring with MPI_Sendrecv and with
 *     MPI_Sendrecv_replace;
 *   section 3.11 "Null Processes": an end-off shift along a chain whose ends send to and
 *     receive from MPI_PROC_NULL (status source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0).
 * Adaptations: the two-process examples run in pairs (0,1), (2,3); the persistent ring
 * runs ROUNDS rounds; a ready-mode start is preceded by a barrier after the matching
 * receive was started, as ready mode requires.  Every value is checked.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 8
#define CNT 16

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_p2p_persistent");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Status status;
  int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
  if (peer >= size)
    peer = -1;
  int lo = rank % 2 == 0;

  int bufsize = 8 * (CNT * (int)sizeof(float) + MPI_BSEND_OVERHEAD);
  char *bsbuf = mt_alloc((size_t)bufsize);
  MPI_Buffer_attach(bsbuf, bufsize);

  float buf1[CNT], buf2[CNT];
  int tag = 3, tag1 = 1, tag2 = 2;
  if (peer >= 0) {
    /* M1: non-overtaking */
    if (lo) {
      for (int k = 0; k < CNT; k++) {
        buf1[k] = (float)k;
        buf2[k] = (float)(100 + k);
      }
      MPI_Bsend(buf1, CNT, MPI_FLOAT, peer, tag, comm);
      MPI_Bsend(buf2, CNT, MPI_FLOAT, peer, tag, comm);
    } else {
      MPI_Recv(buf1, CNT, MPI_FLOAT, peer, MPI_ANY_TAG, comm, &status);
      MPI_Recv(buf2, CNT, MPI_FLOAT, peer, tag, comm, &status);
      mt_check(buf1[5] == 5.0f && buf2[5] == 105.0f, "M1 the two buffered sends arrived in order");
    }
    /* M2: intertwined pairs */
    if (lo) {
      for (int k = 0; k < CNT; k++) {
        buf1[k] = (float)(200 + k);
        buf2[k] = (float)(300 + k);
      }
      MPI_Bsend(buf1, CNT, MPI_FLOAT, peer, tag1, comm);
      MPI_Ssend(buf2, CNT, MPI_FLOAT, peer, tag2, comm);
    } else {
      MPI_Recv(buf1, CNT, MPI_FLOAT, peer, tag2, comm, &status);
      MPI_Recv(buf2, CNT, MPI_FLOAT, peer, tag1, comm, &status);
      mt_check(buf1[3] == 303.0f && buf2[3] == 203.0f,
               "M2 received in the reverse order of sending");
    }
    /* M3: an exchange of messages, with synchronous sends */
    float sendbuf[CNT], recvbuf[CNT];
    for (int k = 0; k < CNT; k++)
      sendbuf[k] = (float)(rank * 1000 + k);
    if (lo) {
      MPI_Ssend(sendbuf, CNT, MPI_FLOAT, peer, tag, comm);
      MPI_Recv(recvbuf, CNT, MPI_FLOAT, peer, tag, comm, &status);
    } else {
      MPI_Recv(recvbuf, CNT, MPI_FLOAT, peer, tag, comm, &status);
      MPI_Ssend(sendbuf, CNT, MPI_FLOAT, peer, tag, comm);
    }
    mt_check(recvbuf[7] == (float)(peer * 1000 + 7), "M3 exchange send/recv against recv/send");
    /* M5: an exchange that relies on buffering */
    MPI_Send(sendbuf, CNT, MPI_FLOAT, peer, tag, comm);
    MPI_Recv(recvbuf, CNT, MPI_FLOAT, peer, tag, comm, &status);
    mt_check(recvbuf[9] == (float)(peer * 1000 + 9), "M5 exchange relying on buffering");
  }

  /* Persistent requests around a ring: to the next rank in each of four modes, from the
   * previous one with four persistent receives. */
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  static float out[4][CNT], in[4][CNT];
  MPI_Request sreq[4], rreq[4];
  MPI_Send_init(out[0], CNT, MPI_FLOAT, next, 10, comm, &sreq[0]);
  MPI_Bsend_init(out[1], CNT, MPI_FLOAT, next, 11, comm, &sreq[1]);
  MPI_Ssend_init(out[2], CNT, MPI_FLOAT, next, 12, comm, &sreq[2]);
  MPI_Rsend_init(out[3], CNT, MPI_FLOAT, next, 13, comm, &sreq[3]);
  for (int m = 0; m < 4; m++)
    MPI_Recv_init(in[m], CNT, MPI_FLOAT, prev, 10 + m, comm, &rreq[m]);
  int bad_pers = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int m = 0; m < 4; m++)
      for (int k = 0; k < CNT; k++) {
        out[m][k] = (float)(rank * 10000 + r * 100 + m * 20 + k);
        in[m][k] = -1.0f;
      }
    /* receives first, so that the ready-mode send finds its receive posted */
    if (r % 2 == 0)
      MPI_Startall(4, rreq);
    else
      for (int m = 3; m >= 0; m--)
        MPI_Start(&rreq[m]);
    MPI_Barrier(comm);
    MPI_Startall(3, sreq);
    MPI_Start(&sreq[3]);
    MPI_Status sts[4];
    if (r % 2 == 0) {
      MPI_Waitall(4, rreq, sts);
      MPI_Waitall(4, sreq, sts);
    } else {
      for (int m = 0; m < 4; m++) {
        MPI_Wait(&sreq[m], &status);
        MPI_Wait(&rreq[m], &status);
        bad_pers += status.MPI_SOURCE != prev || status.MPI_TAG != 10 + m;
      }
    }
    for (int m = 0; m < 4; m++)
      for (int k = 0; k < CNT; k++)
        bad_pers += in[m][k] != (float)(prev * 10000 + r * 100 + m * 20 + k);
    /* the requests are inactive again, not freed */
    for (int m = 0; m < 4; m++)
      bad_pers += sreq[m] == MPI_REQUEST_NULL || rreq[m] == MPI_REQUEST_NULL;
  }
  for (int m = 0; m < 4; m++) {
    MPI_Request_free(&sreq[m]);
    MPI_Request_free(&rreq[m]);
  }
  mt_check_int("persistent send/bsend/ssend/rsend ring: wrong", bad_pers, 0);

  /* Send-receive shift around the ring, then with replace */
  int bad_sr = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int v = rank * 100 + r, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, next, 20, &w, 1, MPI_INT, prev, 20, comm, &status);
    bad_sr += w != prev * 100 + r;
    double d[3] = {rank + 0.5, r, rank * 2.0};
    MPI_Sendrecv_replace(d, 3, MPI_DOUBLE, next, 21, prev, 21, comm, &status);
    bad_sr += d[0] != prev + 0.5 || d[1] != r || d[2] != prev * 2.0;
  }
  mt_check_int("sendrecv and sendrecv_replace ring shift: wrong", bad_sr, 0);

  /* Null processes: an end-off shift up a chain */
  {
    int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int bad_null = 0;
    for (int r = 0; r < ROUNDS; r++) {
      int v = rank * 7 + r, w = -5, count;
      MPI_Sendrecv(&v, 1, MPI_INT, up, 30, &w, 1, MPI_INT, down, 30, comm, &status);
      MPI_Get_count(&status, MPI_INT, &count);
      if (down == MPI_PROC_NULL)
        bad_null += w != -5 || status.MPI_SOURCE != MPI_PROC_NULL ||
                    status.MPI_TAG != MPI_ANY_TAG || count != 0;
      else
        bad_null += w != down * 7 + r || count != 1;
    }
    mt_check_int("end-off shift with MPI_PROC_NULL: wrong", bad_null, 0);
  }

  void *det;
  int detsize;
  MPI_Buffer_detach(&det, &detsize);
  mt_check(det == (void *)bsbuf && detsize == bufsize, "the detached buffer is the attached one");
  free(bsbuf);
  mt_allreduce_steps(4);
  return mt_end();
}
