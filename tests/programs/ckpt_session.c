/*
 * ckpt_session.c - an MPI 4 session open for the whole run, beside MPI_Init (as MPICH's
 * threads/init/mult_session and init/session_*: a library with its own session): every
 * iteration takes the groups of its process sets, makes a communicator from each, uses them,
 * asks the session about its process sets and info, and raises an error on it, which its
 * user error handler counts.  A checkpoint may come at any of these calls; after a restart the
 * session must answer and behave as before.
 *
 *   usage: ckpt_session [ITERS]   default 40
 *
 * Output depends only on the arguments.  Ranks: 2.
 */
#include "mpitest.h"

static int handler_calls, last_code;

static void on_session_error(MPI_Session *s, int *code, ...)
{
  (void)s;
  handler_calls++;
  last_code = *code;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_session");
  mt_require_size(2);
  const long iters = mt_arg("ckpt_session", argc, argv, 1, 40);

  MPI_Session s;
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "thread_level", "MPI_THREAD_SINGLE");
  MPI_Info_set(hints, "mana_test_hint", "kept");
  int rc = MPI_Session_init(hints, MPI_ERRORS_RETURN, &s);
  MPI_Info_free(&hints);
  mt_check(rc == MPI_SUCCESS, "session initialized beside MPI_Init");
  MPI_Errhandler eh;
  MPI_Session_create_errhandler(on_session_error, &eh);
  MPI_Session_set_errhandler(s, eh);
  MPI_Errhandler_free(&eh);

  long bad = 0, sum_all = 0;
  for (long it = 0; it < iters; it++) {
    MPI_Group g;
    MPI_Comm world, self;
    char tag[64];
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    snprintf(tag, sizeof tag, "mana.tests.ckpt_session.world.%ld", it);
    MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &world);
    MPI_Group_free(&g);
    MPI_Group_from_session_pset(s, "mpi://SELF", &g);
    snprintf(tag, sizeof tag, "mana.tests.ckpt_session.self.%ld", it);
    MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &self);
    MPI_Group_free(&g);

    int me = -1, size = 0, one = 1, n = 0;
    long mine = it * 10 + mt_.rank, sum = 0;
    MPI_Comm_rank(world, &me);
    MPI_Comm_size(self, &size);
    if (me != mt_.rank || size != 1)
      bad++;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, world);
    MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, self);
    if (sum != it * 20 + 1 || n != 1)
      bad++;
    sum_all += sum;
    MPI_Comm_free(&world);
    MPI_Comm_free(&self);

    int npsets = 0;
    if (mt_standard_psets(s, &npsets) != 2)
      bad++;
    MPI_Info used;
    char value[64];
    int flag = 0, len = sizeof value;
    MPI_Session_get_info(s, &used);
    MPI_Info_get_string(used, "thread_level", &len, value, &flag);
    if (!flag)
      bad++;
    MPI_Info_free(&used);
    MPI_Session_call_errhandler(s, MPI_ERR_OTHER);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mt_log("iterations %ld, sum %ld", iters, sum_all);
  mt_check_int("wrong ranks, sizes, sums, process sets or info", bad, 0);
  mt_check_int("session error handler calls", handler_calls, (long long)iters);
  mt_check_int("last error code seen by the handler", last_code, MPI_ERR_OTHER);
  rc = MPI_Session_finalize(&s);
  mt_check(rc == MPI_SUCCESS && s == MPI_SESSION_NULL, "session finalized");
  return mt_end();
}
