/*
 * p2p_modes.c - send modes: synchronous (Ssend/Issend), buffered (Bsend/Ibsend with
 * Buffer_attach/Buffer_detach) and ready (Rsend/Irsend, receive posted first and announced
 * with a zero-byte message).
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_modes");
  mt_require_size(2);
  const int me = mt_.rank;
  MPI_Status st;

  /* 1. Ssend / Recv, both directions */
  for (int dir = 0; dir < 2; dir++) {
    int sender = dir, v[4];
    char what[64];
    if (me == sender) {
      for (int i = 0; i < 4; i++)
        v[i] = 7 * i + dir;
      MPI_Ssend(v, 4, MPI_INT, 1 - me, 10 + dir, MPI_COMM_WORLD);
    } else {
      int exp[4];
      for (int i = 0; i < 4; i++)
        exp[i] = 7 * i + dir;
      MPI_Recv(v, 4, MPI_INT, 1 - me, 10 + dir, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "ssend payload from rank %d", sender);
      mt_check_ints(what, v, exp, 4);
    }
  }

  /* 2. Bsend with an attached buffer; several messages outstanding in the buffer */
  {
    enum { NMSG = 5, LEN = 100 };
    int packsz;
    MPI_Pack_size(LEN, MPI_DOUBLE, MPI_COMM_WORLD, &packsz);
    int bufsize = (NMSG + 1) * (packsz + MPI_BSEND_OVERHEAD); /* +1 slot for the Ibsend */
    char *attach = malloc((size_t)bufsize);
    MPI_Buffer_attach(attach, bufsize);
    if (me == 0) {
      double msg[LEN];
      for (int m = 0; m < NMSG; m++) {
        for (int i = 0; i < LEN; i++)
          msg[i] = m * 1000.0 + i;
        MPI_Bsend(msg, LEN, MPI_DOUBLE, 1, 20 + m, MPI_COMM_WORLD);
        /* msg may be reused immediately: Bsend copied it */
      }
      mt_log("bsent %d messages of %d doubles", NMSG, LEN);
    } else {
      /* receive in reverse tag order to force the messages to sit in the buffer */
      double sum[NMSG], exp[NMSG];
      for (int m = NMSG - 1; m >= 0; m--) {
        double msg[LEN];
        MPI_Recv(msg, LEN, MPI_DOUBLE, 0, 20 + m, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sum[m] = 0;
        exp[m] = 0;
        for (int i = 0; i < LEN; i++) {
          sum[m] += msg[i];
          exp[m] += m * 1000.0 + i;
        }
      }
      mt_check_dbls("bsend message sums", sum, exp, NMSG);
    }
    /* Ibsend as well */
    {
      int v = 4242 + me, r = 0;
      MPI_Request req;
      MPI_Ibsend(&v, 1, MPI_INT, 1 - me, 30, MPI_COMM_WORLD, &req);
      MPI_Recv(&r, 1, MPI_INT, 1 - me, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      mt_check_int("ibsend value", r, 4242 + (1 - me));
    }
    void *detached = NULL;
    int detsize = 0;
    MPI_Buffer_detach(&detached, &detsize);
    mt_check(detached == (void *)attach, "buffer_detach returns the attached address");
    mt_check_int("buffer_detach size", detsize, bufsize);
    free(attach);
  }

  /* 3. Rsend: receiver posts Irecv, then tells the sender it is ready */
  {
    int v[3] = {0, 0, 0};
    if (me == 1) {
      MPI_Request req;
      MPI_Irecv(v, 3, MPI_INT, 0, 40, MPI_COMM_WORLD, &req);
      MPI_Send(NULL, 0, MPI_INT, 0, 41, MPI_COMM_WORLD);
      MPI_Wait(&req, &st);
      int exp[3] = {-1, -2, -3};
      mt_check_ints("rsend payload", v, exp, 3);
      mt_check_int("rsend status tag", st.MPI_TAG, 40);
    } else {
      MPI_Recv(NULL, 0, MPI_INT, 1, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int s[3] = {-1, -2, -3};
      MPI_Rsend(s, 3, MPI_INT, 1, 40, MPI_COMM_WORLD);
      mt_log("rsent 3 ints");
    }
  }

  /* 4. Irsend and Issend */
  {
    int v = -1;
    if (me == 0) {
      MPI_Request req;
      MPI_Irecv(&v, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &req);
      MPI_Send(NULL, 0, MPI_INT, 1, 51, MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      mt_check_int("irsend value", v, 5050);
      MPI_Recv(&v, 1, MPI_INT, 1, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      mt_check_int("issend value", v, 5252);
    } else {
      MPI_Request req[2];
      int a = 5050, b = 5252;
      MPI_Recv(NULL, 0, MPI_INT, 0, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Irsend(&a, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, &req[0]);
      MPI_Issend(&b, 1, MPI_INT, 0, 52, MPI_COMM_WORLD, &req[1]);
      MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
      mt_check(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL,
               "irsend/issend requests are MPI_REQUEST_NULL after waitall");
    }
  }

  /* 5. Issend does not complete before the matching receive is posted:
   *    the receiver only posts after the sender has observed "not complete yet" once and
   *    told it so. (Test may legitimately never see completion before the receive.) */
  {
    if (me == 0) {
      int x = 99, flag = 1;
      MPI_Request req;
      MPI_Issend(&x, 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &req);
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      mt_check(flag == 0, "issend incomplete before the receive is posted");
      MPI_Send(NULL, 0, MPI_INT, 1, 61, MPI_COMM_WORLD);
      if (!flag)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      int x = 0;
      MPI_Recv(NULL, 0, MPI_INT, 0, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(&x, 1, MPI_INT, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      mt_check_int("late-received issend value", x, 99);
    }
  }

  return mt_end();
}
