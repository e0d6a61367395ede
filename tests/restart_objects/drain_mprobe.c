/*
 * drain_mprobe.c - matched messages (MPI_Mprobe, MPI_Improbe) that are not received yet when
 * the drain runs: the drain receives them into buffers and the message handles the
 * application holds name those from then on.  Rank 0 sends rank 1 messages on
 * MPI_COMM_WORLD, on a dup and across an intercommunicator: small ones, a rendezvous-sized
 * one and a non-contiguous one; rank 1 matches them (blocking and non-blocking matched probes,
 * by tag and with wildcards) and leaves one unmatched.  After the drain, rank 1 receives them
 * with MPI_Mrecv and MPI_Imrecv (one into a datatype other than the sender's, one into a
 * buffer too short, which must fail with MPI_ERR_TRUNCATE raised on MPI_COMM_WORLD, as
 * MPICH raises MPI_Mrecv's errors) and prints every value and status.  The round runs twice: the job goes on
 * after the first drain; after the second, every object is rebuilt as at a restart.
 * Natively the drains do nothing: the output must be the same.
 * Ranks: 2.
 */
#include "drain.h"

enum { BIG = 100000 };

static void show_status(const char *what, const MPI_Status *st, MPI_Datatype type)
{
  int count = -1;
  MPI_Get_count(st, type, &count);
  mt_log("%s: source %d tag %d count %d", what, st->MPI_SOURCE, st->MPI_TAG, count);
}

static void round_trip(int restart)
{
  const int T = restart ? 100 : 0, me = mt_.rank;
  MPI_Comm dup, half, inter;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, me, 0, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - me, 3, &inter);
  MPI_Datatype pairs;
  MPI_Type_vector(4, 2, 3, MPI_INT, &pairs);
  MPI_Type_commit(&pairs);
  int *big = mt_alloc(BIG * sizeof(int));
  MPI_Request big_req = MPI_REQUEST_NULL;
  MPI_Message m_small, m_any, m_big, m_pairs, m_dup, m_inter, m_trunc;
  MPI_Status st;

  if (me == 0) {
    int v = 10 + T, grid[12];
    for (int i = 0; i < 12; i++)
      grid[i] = 100 * (T + 1) + i;
    for (int i = 0; i < BIG; i++)
      big[i] = i ^ T;
    MPI_Send(&v, 1, MPI_INT, 1, T + 1, MPI_COMM_WORLD);
    v = 11 + T;
    MPI_Send(&v, 1, MPI_INT, 1, T + 2, MPI_COMM_WORLD);
    MPI_Isend(big, BIG, MPI_INT, 1, T + 3, MPI_COMM_WORLD, &big_req);
    MPI_Send(grid, 1, pairs, 1, T + 4, MPI_COMM_WORLD);
    v = 12 + T;
    MPI_Send(&v, 1, MPI_INT, 1, T + 5, dup);
    v = 13 + T;
    MPI_Send(&v, 1, MPI_INT, 0, T + 6, inter);
    double d[3] = {1.5, 2.5, 3.5 + T};
    MPI_Send(d, 3, MPI_DOUBLE, 1, T + 7, dup);
    v = 14 + T; /* unmatched: the drain buffers it, a matched probe takes it after */
    MPI_Send(&v, 1, MPI_INT, 1, T + 8, MPI_COMM_WORLD);
  } else {
    MPI_Mprobe(0, T + 2, MPI_COMM_WORLD, &m_small, &st); /* by tag, out of order */
    show_status("matched by tag", &st, MPI_INT);
    int flag = 0;
    while (!flag)
      MPI_Improbe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m_any, MPI_STATUS_IGNORE);
    MPI_Mprobe(MPI_ANY_SOURCE, T + 3, MPI_COMM_WORLD, &m_big, MPI_STATUS_IGNORE);
    MPI_Mprobe(0, T + 4, MPI_COMM_WORLD, &m_pairs, &st);
    show_status("matched non-contiguous", &st, MPI_INT);
    MPI_Mprobe(0, MPI_ANY_TAG, dup, &m_dup, MPI_STATUS_IGNORE);
    MPI_Mprobe(0, T + 6, inter, &m_inter, &st);
    show_status("matched across the intercommunicator", &st, MPI_INT);
    flag = 0;
    while (!flag)
      MPI_Improbe(MPI_ANY_SOURCE, T + 7, dup, &flag, &m_trunc, &st);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  drain_checked(restart ? "with matched messages, then rebuilt" : "with matched messages", restart);

  if (me == 1) {
    int v = -1, recv_pairs[8];
    double d[2] = {-1, -1};
    MPI_Request rq;
    MPI_Mrecv(&v, 1, MPI_INT, &m_any, &st);
    show_status("Mrecv of the wildcard match", &st, MPI_INT);
    mt_log("  value %d, handle null %d", v, m_any == MPI_MESSAGE_NULL);
    MPI_Imrecv(&v, 1, MPI_INT, &m_small, &rq);
    MPI_Wait(&rq, &st);
    show_status("Imrecv of the tag match", &st, MPI_INT);
    mt_log("  value %d", v);
    MPI_Mrecv(big, BIG, MPI_INT, &m_big, &st);
    long long sum = 0;
    for (int i = 0; i < BIG; i++)
      sum += big[i];
    show_status("Mrecv of the rendezvous-sized message", &st, MPI_INT);
    mt_log("  sum %lld", sum);
    MPI_Mrecv(recv_pairs, 8, MPI_INT, &m_pairs, &st); /* contiguous on this side */
    show_status("Mrecv of the vector, contiguous", &st, MPI_INT);
    mt_append("OK     values ");
    mt_fmt_ints(recv_pairs, 8);
    mt_append("\n");
    MPI_Mrecv(&v, 1, MPI_INT, &m_dup, &st);
    show_status("Mrecv on the dup", &st, MPI_INT);
    mt_log("  value %d", v);
    MPI_Imrecv(&v, 1, MPI_INT, &m_inter, &rq);
    MPI_Wait(&rq, &st);
    show_status("Imrecv across the intercommunicator", &st, MPI_INT);
    mt_log("  value %d", v);
    /* MPICH raises an MPI_Mrecv error on MPI_COMM_WORLD, not on the message's (fatal) dup */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Mrecv(d, 2, MPI_DOUBLE, &m_trunc, &st);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    mt_check(cls == MPI_ERR_TRUNCATE, "Mrecv into a short buffer: truncated (class %d)", cls);
    MPI_Message later;
    MPI_Mprobe(0, T + 8, MPI_COMM_WORLD, &later, &st);
    show_status("matched after the drain", &st, MPI_INT);
    MPI_Mrecv(&v, 1, MPI_INT, &later, MPI_STATUS_IGNORE);
    mt_log("  value %d", v);
  }
  if (me == 0)
    MPI_Wait(&big_req, MPI_STATUS_IGNORE);
  free(big);
  MPI_Type_free(&pairs);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("drain_mprobe");
  mt_require_size(2);
  round_trip(0);
  round_trip(1);
  return mt_end();
}
