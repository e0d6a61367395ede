/*
 * errhandler_inherited.c - communicators whose error handler was never set follow
 * MPI_COMM_WORLD's handler of the moment, as in MPICH: a duplicate and a split made before
 * the program sets MPI_ERRORS_RETURN on MPI_COMM_WORLD return their errors afterwards,
 * although MPI_Comm_get_errhandler reports MPI_ERRORS_ARE_FATAL for them (MPICH's
 * errors/comm/comm_split_nullarg relies on it).  A duplicate made afterwards copies
 * MPI_ERRORS_RETURN; one with MPI_ERRORS_ARE_FATAL set explicitly keeps it.  Collectives
 * between the steps give a checkpoint a place to fall (run_at_calls.sh): a restart made
 * every handler explicit, and the first erroneous call aborted the job.
 * Ranks: 2.
 */
#include "mpitest.h"

static void step(MPI_Comm comm)
{
  int v = 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
}

/* An erroneous send (a rank outside the communicator): its error class, or -1 if it
 * succeeded. */
static int bad_send(MPI_Comm comm)
{
  int size = 0, v = 0;
  MPI_Comm_size(comm, &size);
  int err = MPI_Send(&v, 1, MPI_INT, size + 1, 0, comm);
  int cls = -1;
  if (err != MPI_SUCCESS)
    MPI_Error_class(err, &cls);
  return cls;
}

static int reports_fatal(MPI_Comm comm)
{
  MPI_Errhandler eh;
  MPI_Comm_get_errhandler(comm, &eh);
  int fatal = eh == MPI_ERRORS_ARE_FATAL;
  MPI_Errhandler_free(&eh);
  return fatal;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("errhandler_inherited");
  mt_require_size(2);
  MPI_Comm early_dup, early_split, fatal_dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &early_dup);
  step(early_dup);
  MPI_Comm_split(early_dup, 0, mt_.rank, &early_split);
  step(early_split);
  MPI_Comm_dup(MPI_COMM_WORLD, &fatal_dup);
  MPI_Comm_set_errhandler(fatal_dup, MPI_ERRORS_ARE_FATAL);
  step(fatal_dup);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  step(MPI_COMM_WORLD);
  MPI_Comm late_dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &late_dup);
  step(late_dup);

  for (int round = 1; round <= 2; round++) {
    char what[96];
    snprintf(what, sizeof(what), "round %d: early duplicate returns its error, class", round);
    mt_check_int(what, bad_send(early_dup), MPI_ERR_RANK);
    step(early_dup);
    snprintf(what, sizeof(what), "round %d: early duplicate reports MPI_ERRORS_ARE_FATAL", round);
    mt_check_int(what, reports_fatal(early_dup), 1);
    step(early_dup);
    snprintf(what, sizeof(what), "round %d: split of it returns its error, class", round);
    mt_check_int(what, bad_send(early_split), MPI_ERR_RANK);
    step(early_split);
    snprintf(what, sizeof(what), "round %d: late duplicate returns its error, class", round);
    mt_check_int(what, bad_send(late_dup), MPI_ERR_RANK);
    step(late_dup);
    snprintf(what, sizeof(what), "round %d: late duplicate reports MPI_ERRORS_ARE_FATAL", round);
    mt_check_int(what, reports_fatal(late_dup), 0);
    step(late_dup);
    snprintf(what, sizeof(what), "round %d: explicitly fatal duplicate reports it", round);
    mt_check_int(what, reports_fatal(fatal_dup), 1);
    step(fatal_dup);
  }
  MPI_Comm_free(&late_dup);
  MPI_Comm_free(&fatal_dup);
  MPI_Comm_free(&early_split);
  MPI_Comm_free(&early_dup);
  return mt_end();
}
