/*
 * p2p_cancel.c - MPI_Cancel of receives that can never match (plain Irecv, wildcard Irecv,
 * started persistent Recv_init), MPI_Test_cancelled, and proof that a cancelled receive does
 * not swallow a later message with the same tag.
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_cancel");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;

  /* 1. cancel an Irecv nobody will match (yet) */
  {
    int v = -1, cancelled = 0;
    MPI_Request rq;
    MPI_Status st;
    MPI_Irecv(&v, 1, MPI_INT, peer, 500, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &cancelled);
    mt_check_int("irecv cancelled", cancelled, 1);
    mt_check_int("cancelled irecv buffer untouched", v, -1);
    mt_check(rq == MPI_REQUEST_NULL, "wait on cancelled request frees it");
  }

  /* 2. cancel a wildcard receive, completion detected through Test */
  {
    double d = 3.0;
    int cancelled = 0, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    MPI_Irecv(&d, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    while (!flag)
      MPI_Test(&rq, &flag, &st);
    MPI_Test_cancelled(&st, &cancelled);
    mt_check(cancelled == 1 && d == 3.0, "any-source/any-tag irecv cancelled, buffer untouched");
  }

  /* everyone has cancelled before anyone sends */
  MPI_Barrier(MPI_COMM_WORLD);

  /* 3. the tag of the cancelled receive still works: the message goes to a new receive */
  {
    int v = me * 7 + 1, r = 0;
    MPI_Status st;
    int cancelled = 1;
    MPI_Sendrecv(&v, 1, MPI_INT, peer, 500, &r, 1, MPI_INT, peer, 500, MPI_COMM_WORLD, &st);
    MPI_Test_cancelled(&st, &cancelled);
    mt_check_int("message after cancel delivered to the new receive", r, peer * 7 + 1);
    mt_check_int("normal receive: test_cancelled", cancelled, 0);
  }

  /* 4. persistent receive: start, cancel, then start again and match a real message */
  {
    int v = 0, cancelled = 0;
    MPI_Request rq;
    MPI_Status st;
    MPI_Recv_init(&v, 1, MPI_INT, peer, 600, MPI_COMM_WORLD, &rq);
    MPI_Start(&rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &cancelled);
    mt_check_int("started recv_init cancelled", cancelled, 1);
    mt_check(rq != MPI_REQUEST_NULL, "cancelled persistent request stays allocated");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Start(&rq);
    int s = 600 + me;
    MPI_Send(&s, 1, MPI_INT, peer, 600, MPI_COMM_WORLD);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &cancelled);
    mt_check(cancelled == 0 && v == 600 + peer, "restarted recv_init receives the real message");
    MPI_Request_free(&rq);
  }

  /* 5. many cancelled receives interleaved with live ones on the same tag space */
  {
    enum { M = 10 };
    int dead[M], live[M], nc = 0;
    MPI_Request rq[M];
    MPI_Status st;
    for (int i = 0; i < M; i++) {
      MPI_Irecv(&dead[i], 1, MPI_INT, peer, 700 + i, MPI_COMM_WORLD, &rq[i]);
      if (i % 2 == 0) {
        MPI_Cancel(&rq[i]);
        MPI_Wait(&rq[i], &st);
        int c;
        MPI_Test_cancelled(&st, &c);
        nc += c;
      }
    }
    mt_check_int("cancelled even-tag receives", nc, M / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the odd-tag receives are still pending; send everything */
    int out[M];
    MPI_Request sq[M];
    for (int i = 0; i < M; i++) {
      out[i] = 1000 * me + i;
      MPI_Isend(&out[i], 1, MPI_INT, peer, 700 + i, MPI_COMM_WORLD, &sq[i]);
    }
    /* receive the even tags into fresh receives */
    for (int i = 0; i < M; i += 2)
      MPI_Recv(&live[i], 1, MPI_INT, peer, 700 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 1; i < M; i += 2) {
      MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
      live[i] = dead[i];
    }
    MPI_Waitall(M, sq, MPI_STATUSES_IGNORE);
    int exp[M];
    for (int i = 0; i < M; i++)
      exp[i] = 1000 * peer + i;
    mt_check_ints("live messages after partial cancel", live, exp, M);
  }

  return mt_end();
}
