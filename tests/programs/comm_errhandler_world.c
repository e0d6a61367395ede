/*
 * comm_errhandler_world.c - communicators whose error handler was never set.  MPICH raises
 * their errors on MPI_COMM_WORLD's handler of the moment and passes MPI_COMM_WORLD to a user
 * handler, while MPI_Comm_get_errhandler answers MPI_ERRORS_ARE_FATAL for them; a handler set
 * on a communicator, or copied by MPI_Comm_dup from one that had it set, stays its own.
 * A window whose handler was never set follows MPI_COMM_WORLD's handler in the same way.
 * MPICH's errors/comm/comm_split_type_nullarg relies on this (with a collective MPI refuses,
 * which a checkpoint may be refused around: not made here).  A restart before the
 * communicators are made used to leave MPI_ERRORS_ARE_FATAL set on them (copied from the
 * rebuilt MPI_COMM_WORLD), and the first error aborted the job.  Allreduces on
 * MPI_COMM_WORLD between the phases give a checkpoint places to fall (run_at_calls.sh).
 * Expected: every error class, handler call and answer as natively, identical under mana.
 * Ranks: 1 or more.
 */
#include "mpitest.h"

static int handler_calls;
static MPI_Comm handler_comm = MPI_COMM_NULL;
static MPI_Win window; /* its handler never set either */

static void counting(MPI_Comm *comm, int *code, ...)
{
  (void)code;
  handler_calls++;
  handler_comm = *comm;
}

static int error_class(int rc)
{
  int cls = -1;
  MPI_Error_class(rc, &cls);
  return cls;
}

/* A send to a rank the communicator does not have: MPI_ERR_RANK, raised when it starts. */
static int bad_send(MPI_Comm comm)
{
  int size, x = 1;
  MPI_Comm_size(comm, &size);
  return error_class(MPI_Send(&x, 1, MPI_INT, size, 0, comm));
}

/* A message longer than the receive buffer: MPI_ERR_TRUNCATE, raised when it completes, in a
 * blocking receive or in MPI_Wait. */
static int truncated(MPI_Comm comm, int blocking)
{
  int rank, two[2] = {1, 2}, one = 0, rc;
  MPI_Request send, recv;
  MPI_Comm_rank(comm, &rank);
  MPI_Isend(two, 2, MPI_INT, rank, 9, comm, &send);
  if (blocking) {
    rc = MPI_Recv(&one, 1, MPI_INT, rank, 9, comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Irecv(&one, 1, MPI_INT, rank, 9, comm, &recv);
    rc = MPI_Wait(&recv, MPI_STATUS_IGNORE);
  }
  MPI_Wait(&send, MPI_STATUS_IGNORE);
  return error_class(rc);
}

/* A put to a rank the window does not have, in a fence epoch: MPI_ERR_RANK. */
static int bad_put(MPI_Comm comm)
{
  int size, x = 1;
  MPI_Comm_size(comm, &size);
  return error_class(MPI_Put(&x, 1, MPI_INT, size, 0, 1, MPI_INT, window));
}

static int truncated_recv(MPI_Comm comm)
{
  return truncated(comm, 1);
}

static int truncated_wait(MPI_Comm comm)
{
  return truncated(comm, 0);
}

static void check_fatal_answer(const char *name, MPI_Comm comm, MPI_Errhandler exp)
{
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  char what[96];
  MPI_Comm_get_errhandler(comm, &eh);
  snprintf(what, sizeof(what), "MPI_Comm_get_errhandler(%s) is the expected handler", name);
  mt_check_int(what, eh == exp, 1);
  if (eh != MPI_ERRHANDLER_NULL)
    MPI_Errhandler_free(&eh);
}

/* An error provoked on comm, which the user handler on MPI_COMM_WORLD must see (world) or not. */
struct error_case {
  const char *name;
  MPI_Comm comm;
  int (*provoke)(MPI_Comm comm);
  int world;
};

static void check_user_handler(const struct error_case *cases, size_t n)
{
  char what[96];
  for (size_t i = 0; i < n; i++) {
    const struct error_case *k = &cases[i];
    int calls_before = handler_calls;
    int cls = k->provoke(k->comm);
    snprintf(what, sizeof(what), "%s: error class", k->name);
    mt_check_int(what, cls,
                 k->provoke == bad_send || k->provoke == bad_put ? MPI_ERR_RANK : MPI_ERR_TRUNCATE);
    snprintf(what, sizeof(what), "%s: calls of MPI_COMM_WORLD's handler", k->name);
    mt_check_int(what, handler_calls - calls_before, k->world);
    if (k->world) {
      snprintf(what, sizeof(what), "%s: the handler was given MPI_COMM_WORLD", k->name);
      mt_check_int(what, handler_comm == MPI_COMM_WORLD, 1);
    }
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_errhandler_world");
  mt_allreduce_steps(3);

  /* Made while MPI_COMM_WORLD's handler is MPI's default: none of them has one set but E. */
  MPI_Comm a, b, c, e, d, f;
  MPI_Group world_group;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_split(MPI_COMM_WORLD, mt_.rank % 2, mt_.rank, &b);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 7, &c);
  MPI_Group_free(&world_group);
  MPI_Comm_dup(MPI_COMM_WORLD, &e);
  MPI_Comm_set_errhandler(e, MPI_ERRORS_RETURN);
  static int window_memory[4];
  MPI_Win_create(window_memory, sizeof(window_memory), sizeof(int), MPI_INFO_NULL, a, &window);
  MPI_Win_fence(0, window);
  mt_allreduce_steps(3);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  mt_check_int("dup: MPI_ERRORS_RETURN followed", bad_send(a), MPI_ERR_RANK);
  mt_check_int("split: MPI_ERRORS_RETURN followed", bad_send(b), MPI_ERR_RANK);
  mt_check_int("create_group: MPI_ERRORS_RETURN followed", bad_send(c), MPI_ERR_RANK);
  mt_check_int("MPI_COMM_SELF: MPI_ERRORS_RETURN followed", bad_send(MPI_COMM_SELF), MPI_ERR_RANK);
  check_fatal_answer("dup", a, MPI_ERRORS_ARE_FATAL);
  check_fatal_answer("create_group", c, MPI_ERRORS_ARE_FATAL);
  check_fatal_answer("MPI_COMM_SELF", MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
  check_fatal_answer("dup, set", e, MPI_ERRORS_RETURN);
  mt_check_int("window: MPI_ERRORS_RETURN followed", bad_put(MPI_COMM_WORLD), MPI_ERR_RANK);
  MPI_Errhandler window_eh = MPI_ERRHANDLER_NULL;
  MPI_Win_get_errhandler(window, &window_eh);
  mt_check_int("MPI_Win_get_errhandler(window) is MPI_ERRORS_ARE_FATAL",
               window_eh == MPI_ERRORS_ARE_FATAL, 1);
  mt_allreduce_steps(3);

  /* d copies a's absence of a handler; f copies MPI_COMM_WORLD's handler, set now. */
  MPI_Comm_dup(a, &d);
  MPI_Comm_dup(MPI_COMM_WORLD, &f);
  MPI_Errhandler user;
  MPI_Comm_create_errhandler(counting, &user);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, user);
  mt_allreduce_steps(3);

  const struct error_case following[] = {
      {"dup", a, bad_send, 1},
      {"split", b, bad_send, 1},
      {"create_group", c, bad_send, 1},
      {"dup of dup", d, bad_send, 1},
      {"MPI_COMM_SELF", MPI_COMM_SELF, bad_send, 1},
      {"dup, set", e, bad_send, 0},
      {"dup of MPI_COMM_WORLD with its handler set", f, bad_send, 0},
      {"dup, truncated MPI_Recv", a, truncated_recv, 1},
      {"dup of dup, truncated MPI_Wait", d, truncated_wait, 1},
      {"dup, set, truncated MPI_Recv", e, truncated_recv, 0},
      {"window", MPI_COMM_WORLD, bad_put, 1},
  };
  check_user_handler(following, sizeof(following) / sizeof(following[0]));
  check_fatal_answer("dup of dup", d, MPI_ERRORS_ARE_FATAL);
  check_fatal_answer("dup of MPI_COMM_WORLD with its handler set", f, MPI_ERRORS_RETURN);
  mt_allreduce_steps(3);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&user);
  const struct error_case returning[] = {
      {"dup of dup, MPI_COMM_WORLD returning again", d, bad_send, 0},
      {"split, MPI_COMM_WORLD returning again", b, bad_send, 0},
      {"window, MPI_COMM_WORLD returning again", MPI_COMM_WORLD, bad_put, 0},
  };
  check_user_handler(returning, sizeof(returning) / sizeof(returning[0]));
  mt_allreduce_steps(3);

  MPI_Win_fence(0, window);
  MPI_Win_free(&window);
  MPI_Comm *all[] = {&a, &b, &c, &d, &e, &f};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    MPI_Comm_free(all[i]);
  return mt_end();
}
