/*
 * p2p_truncate.c - receives whose message is longer than their buffer, with
 * MPI_ERRORS_RETURN: each completes with MPI_ERR_TRUNCATE, names its sender and tag, and has
 * taken the message, so the next message on the same tag goes to the next receive.  Every
 * way of completing a receive meets one: MPI_Recv (eager and rendezvous sizes), MPI_Irecv
 * with MPI_Wait and with MPI_Test, MPI_Waitall (MPI_ERR_IN_STATUS), MPI_Waitany,
 * MPI_Mprobe with MPI_Mrecv, MPI_Sendrecv and a persistent receive.  Rank 0 sends, rank 1
 * receives; a collective between steps gives a checkpoint a place to fall (run_at_calls.sh),
 * and the messages a truncated receive took must still be counted by the drain (MPICH's
 * errors/pt2pt/truncmsg1: the drain waited for a message the truncated receive had taken).
 * Ranks: 2.
 */
#include "mpitest.h"

#define LONG_LEN 100000

static int *buf;

static void step(void)
{
  int v = 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

static void sync_pair(int peer)
{
  MPI_Sendrecv(MPI_BOTTOM, 0, MPI_INT, peer, 1, MPI_BOTTOM, 0, MPI_INT, peer, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
}

static int err_class(int err)
{
  int c = -1;
  MPI_Error_class(err, &c);
  return c;
}

/* One truncated completion: its error class, sender and tag, and a code MPI can describe
 * (also after a restart, when the receive completed in the checkpoint's drain). */
static void check_truncated(const char *what, int err, const MPI_Status *st, int tag)
{
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  int described = MPI_Error_string(err, text, &len) == MPI_SUCCESS && strstr(text, "truncated");
  mt_check(err_class(err) == MPI_ERR_TRUNCATE && st->MPI_SOURCE == 0 && st->MPI_TAG == tag &&
               described,
           "%s: class %s, source %d, tag %d, %s", what,
           err_class(err) == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "other", st->MPI_SOURCE,
           st->MPI_TAG, described ? "described" : "not described");
}

/* The next message on the tag reaches the next receive whole: the truncated one took its
 * own message. */
static void check_next(const char *what, int round, int tag)
{
  int v = -1;
  MPI_Status st;
  int err = MPI_Recv(&v, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, &st);
  char label[96];
  snprintf(label, sizeof(label), "%s: next message on tag %d", what, tag);
  mt_check_int(label, err == MPI_SUCCESS ? v : -err, 1000 * round + tag);
}

static void send_next(int round, int tag)
{
  int v = 1000 * round + tag;
  MPI_Send(&v, 1, MPI_INT, 1, tag, MPI_COMM_WORLD);
}

static void sender(int round)
{
  MPI_Send(buf, 2, MPI_INT, 1, 10, MPI_COMM_WORLD); /* recv, eager */
  send_next(round, 10);
  step();
  sync_pair(1); /* the irecv is posted */
  MPI_Send(buf, 2, MPI_INT, 1, 11, MPI_COMM_WORLD);
  send_next(round, 11);
  step();
  step();
  MPI_Send(buf, LONG_LEN, MPI_INT, 1, 12, MPI_COMM_WORLD); /* recv, rendezvous */
  send_next(round, 12);
  step();
  MPI_Send(buf, 3, MPI_INT, 1, 13, MPI_COMM_WORLD); /* irecv + test */
  send_next(round, 13);
  step();
  MPI_Send(buf, 1, MPI_INT, 1, 14, MPI_COMM_WORLD); /* waitall: fits */
  MPI_Send(buf, 2, MPI_INT, 1, 15, MPI_COMM_WORLD); /* waitall: truncated */
  send_next(round, 15);
  step();
  MPI_Send(buf, 4, MPI_INT, 1, 16, MPI_COMM_WORLD); /* waitany */
  send_next(round, 16);
  step();
  MPI_Send(buf, LONG_LEN, MPI_INT, 1, 17, MPI_COMM_WORLD); /* mprobe + mrecv */
  send_next(round, 17);
  step();
  int small = 0;
  MPI_Sendrecv(buf, 2, MPI_INT, 1, 18, &small, 1, MPI_INT, 1, 18, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  send_next(round, 18);
  step();
  MPI_Send(buf, 2, MPI_INT, 1, 19, MPI_COMM_WORLD); /* persistent: truncated */
  MPI_Send(buf, 1, MPI_INT, 1, 19, MPI_COMM_WORLD); /* persistent: fits */
  step();
}

static void receiver(int round)
{
  MPI_Status st, sts[2];
  MPI_Request rq, rqs[2];
  int err, small[4] = {0};

  err = MPI_Recv(small, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, &st);
  check_truncated("recv, eager", err, &st, 10);
  check_next("recv, eager", round, 10);
  step();

  MPI_Irecv(small, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &rq);
  sync_pair(0);
  step(); /* a checkpoint here finds the receive pending, its message sent */
  err = MPI_Wait(&rq, &st);
  check_truncated("irecv + wait", err, &st, 11);
  mt_check(rq == MPI_REQUEST_NULL, "irecv + wait: request freed");
  check_next("irecv + wait", round, 11);
  step();

  err = MPI_Recv(buf, LONG_LEN - 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &st);
  check_truncated("recv, rendezvous", err, &st, 12);
  check_next("recv, rendezvous", round, 12);
  step();

  MPI_Irecv(small, 2, MPI_INT, 0, 13, MPI_COMM_WORLD, &rq);
  int flag = 0;
  do
    err = MPI_Test(&rq, &flag, &st);
  while (err == MPI_SUCCESS && !flag);
  check_truncated("irecv + test", err, &st, 13);
  check_next("irecv + test", round, 13);
  step();

  MPI_Irecv(&small[0], 1, MPI_INT, 0, 14, MPI_COMM_WORLD, &rqs[0]);
  MPI_Irecv(&small[1], 1, MPI_INT, 0, 15, MPI_COMM_WORLD, &rqs[1]);
  err = MPI_Waitall(2, rqs, sts);
  mt_check(err == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS,
           "waitall: MPI_ERR_IN_STATUS, the fitting receive succeeded");
  check_truncated("waitall", sts[1].MPI_ERROR, &sts[1], 15);
  check_next("waitall", round, 15);
  step();

  int index = -1;
  rqs[0] = MPI_REQUEST_NULL;
  MPI_Irecv(small, 3, MPI_INT, 0, 16, MPI_COMM_WORLD, &rqs[1]);
  err = MPI_Waitany(2, rqs, &index, &st);
  check_truncated("waitany", err, &st, 16);
  mt_check_int("waitany: index", index, 1);
  check_next("waitany", round, 16);
  step();

  MPI_Message msg;
  MPI_Mprobe(0, 17, MPI_COMM_WORLD, &msg, &st);
  err = MPI_Mrecv(buf, 10, MPI_INT, &msg, &st);
  check_truncated("mprobe + mrecv", err, &st, 17);
  check_next("mprobe + mrecv", round, 17);
  step();

  err = MPI_Sendrecv(buf, 1, MPI_INT, 0, 18, small, 1, MPI_INT, 0, 18, MPI_COMM_WORLD, &st);
  check_truncated("sendrecv", err, &st, 18);
  check_next("sendrecv", round, 18);
  step();

  MPI_Recv_init(small, 1, MPI_INT, 0, 19, MPI_COMM_WORLD, &rq);
  MPI_Start(&rq);
  err = MPI_Wait(&rq, &st);
  check_truncated("persistent", err, &st, 19);
  MPI_Start(&rq);
  err = MPI_Wait(&rq, &st);
  mt_check(err == MPI_SUCCESS && st.MPI_TAG == 19, "persistent: started again, next message");
  MPI_Request_free(&rq);
  step();
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_truncate");
  mt_require_size(2);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  buf = mt_alloc(sizeof(int) * LONG_LEN);
  for (int round = 1; round <= 2; round++) {
    if (mt_.rank == 0)
      sender(round);
    else
      receiver(round);
  }
  free(buf);
  return mt_end();
}
