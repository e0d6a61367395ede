/*
 * sessions.c - MPI 4 sessions, first without MPI_Init (MPI_COMM_WORLD does not exist yet):
 *   - Session_init with a thread-level hint and MPI_ERRORS_RETURN, Session_get_info, the
 *     process sets (Session_get_num_psets, get_nth_pset, get_pset_info);
 *   - Group_from_session_pset for mpi://WORLD and mpi://SELF, Comm_create_from_group;
 *   - on the world communicator: Allreduce, Sendrecv, Isend/Irecv/Waitall, Probe + Recv,
 *     a truncated receive returning MPI_ERR_TRUNCATE through MPI_ERRORS_RETURN, Comm_dup;
 *   - on the self communicator: Irecv, Send and Wait to itself;
 * then MPI_Init with the session still open: a communicator made from the session's group
 * with MPI_ERRORS_RETURN returns errors of blocking calls, MPI_COMM_WORLD works; the session is
 * finalized before MPI_Finalize.  Results are reported over MPI_COMM_WORLD at the end.
 * Ranks: 2.
 */
#include "mpitest.h"

/* A receive of 2 ints where the peer sends 4: the error class, the comm still works after. */
static void truncated_recv(MPI_Comm c, int me, const char *what)
{
  int big[4] = {1, 2, 3, 4}, small[2] = {0, 0}, cls = -1;
  char line[96];
  if (me == 0) {
    MPI_Send(big, 4, MPI_INT, 1, 7, c);
  } else {
    int rc = MPI_Recv(small, 2, MPI_INT, 0, 7, c, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    snprintf(line, sizeof line, "%s: truncated receive returns MPI_ERR_TRUNCATE", what);
    mt_check(cls == MPI_ERR_TRUNCATE, "%s (class %d)", line, cls);
  }
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
  snprintf(line, sizeof line, "%s: allreduce after the error", what);
  mt_check_int(line, sum, 2);
}

static void world_pset(MPI_Session s)
{
  MPI_Group g;
  MPI_Comm c, d;
  int me, size, gsize;
  MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
  MPI_Group_size(g, &gsize);
  MPI_Comm_create_from_group(g, "mana.tests.sessions.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
  MPI_Group_free(&g);
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &size);
  mt_check(gsize == 2 && size == 2, "world pset group and communicator: sizes %d %d", gsize, size);
  mt_log("rank %d of the world pset communicator", me);

  int sum = 0, peer = 1 - me, got = -1;
  MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c);
  mt_check_int("allreduce of the ranks", sum, 1);
  MPI_Sendrecv(&me, 1, MPI_INT, peer, 1, &got, 1, MPI_INT, peer, 1, c, MPI_STATUS_IGNORE);
  mt_check_int("sendrecv from the peer", got, peer);

  int in[8], out[8];
  MPI_Request reqs[16];
  for (int i = 0; i < 8; i++) {
    out[i] = 10 * me + i;
    MPI_Irecv(&in[i], 1, MPI_INT, peer, 100 + i, c, &reqs[i]);
  }
  for (int i = 0; i < 8; i++)
    MPI_Isend(&out[i], 1, MPI_INT, peer, 107 - i, c, &reqs[8 + i]);
  MPI_Waitall(16, reqs, MPI_STATUSES_IGNORE);
  int exp[8];
  for (int i = 0; i < 8; i++)
    exp[i] = 10 * peer + 7 - i;
  mt_check_ints("8 irecvs completed by waitall", in, exp, 8);

  if (me == 0) {
    int v[3] = {5, 6, 7};
    MPI_Send(v, 3, MPI_INT, 1, 50, c);
  } else {
    MPI_Status st;
    int count = 0, v[3] = {0, 0, 0};
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    MPI_Recv(v, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, c, MPI_STATUS_IGNORE);
    mt_check(count == 3 && st.MPI_SOURCE == 0 && st.MPI_TAG == 50 && v[2] == 7,
             "probe then receive: %d ints from %d, tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
  }

  truncated_recv(c, me, "session communicator");

  MPI_Comm_dup(c, &d);
  MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_MAX, d);
  mt_check_int("allreduce on a dup", sum, 1);
  MPI_Comm_free(&d);
  MPI_Comm_free(&c);
}

static void self_pset(MPI_Session s)
{
  MPI_Group g;
  MPI_Comm c;
  int size, rank, sent = 42, got = 0;
  MPI_Request req;
  MPI_Group_from_session_pset(s, "mpi://SELF", &g);
  MPI_Comm_create_from_group(g, "mana.tests.sessions.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
  MPI_Group_free(&g);
  MPI_Comm_size(c, &size);
  MPI_Comm_rank(c, &rank);
  MPI_Irecv(&got, 1, MPI_INT, 0, 3, c, &req);
  MPI_Send(&sent, 1, MPI_INT, 0, 3, c);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  mt_check(size == 1 && rank == 0 && got == 42, "self pset communicator: message to itself %d",
           got);
  MPI_Comm_free(&c);
}

static void psets(MPI_Session s)
{
  int n = 0, found = mt_standard_psets(s, &n);
  mt_check(n >= 2 && found == 2, "process sets include mpi://WORLD and mpi://SELF");
  MPI_Info info;
  char value[64];
  int flag = 0, len = sizeof value;
  MPI_Session_get_pset_info(s, "mpi://WORLD", &info);
  MPI_Info_get_string(info, "mpi_size", &len, value, &flag);
  mt_check(flag && strcmp(value, "2") == 0, "mpi://WORLD has mpi_size %s", flag ? value : "?");
  MPI_Info_free(&info);
}

int main(int argc, char **argv)
{
  MPI_Session s;
  MPI_Info hints, used;
  char level[64];
  int flag = 0, len = sizeof level;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "thread_level", "MPI_THREAD_SINGLE");
  int rc = MPI_Session_init(hints, MPI_ERRORS_RETURN, &s);
  MPI_Info_free(&hints);
  mt_check(rc == MPI_SUCCESS, "session initialized without MPI_Init");
  MPI_Session_get_info(s, &used);
  MPI_Info_get_string(used, "thread_level", &len, level, &flag);
  mt_check(flag, "the session reports a thread level");
  MPI_Info_free(&used);

  psets(s);
  world_pset(s);
  self_pset(s);

  MPI_Init(&argc, &argv);
  mt_begin("sessions");
  mt_require_size(2);
  mt_log("MPI_Init with the session open:");
  MPI_Group g;
  MPI_Comm c;
  MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
  MPI_Comm_create_from_group(g, "mana.tests.sessions.after-init", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                             &c);
  MPI_Group_free(&g);
  truncated_recv(c, mt_.rank, "communicator from the session after MPI_Init");
  MPI_Comm_free(&c);
  int sum = 0;
  MPI_Allreduce(&mt_.rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  mt_check_int("allreduce on MPI_COMM_WORLD", sum, 1);
  rc = MPI_Session_finalize(&s);
  mt_check(rc == MPI_SUCCESS && s == MPI_SESSION_NULL, "session finalized");
  return mt_end();
}
