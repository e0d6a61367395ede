/*
 * coll_refused.c - collectives MPI refuses before starting them (argument errors, with
 * MPI_ERRORS_RETURN), then collectives that work, as MPICH's errors/coll tests make them:
 *   - MPI_Allreduce with aliased buffers on every rank (MPI_ERR_BUFFER everywhere);
 *   - MPI_Reduce and MPI_Ireduce whose root aliases its buffers: only the root fails, the
 *     other rank's contribution is on its way, and the root makes the reduce again, which
 *     takes it (errors/coll/noalias, nb_noalias);
 *   - MPI_Bcast with a root outside the communicator (MPI_ERR_ROOT everywhere);
 *   - MPI_Comm_dup with a null result pointer (MPI_ERR_ARG everywhere).
 * A collective between the steps gives a checkpoint a place to fall (run_at_calls.sh): the
 * refused calls must not count on the collective clock, or the ranks' counts differ by one
 * after the root's second reduce and no checkpoint can be taken any more (the ranks never
 * agree on a safe point), or one is taken with the other rank's reduce in flight.
 * Ranks: 2.
 */
#include "mpitest.h"

static int err_class(int err)
{
  int c = -1;
  MPI_Error_class(err, &c);
  return c;
}

static int step(MPI_Comm comm, int v)
{
  int sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
  return sum;
}

static void round_of(int round, MPI_Comm dup)
{
  const int me = mt_.rank;
  int buf[2] = {me + round, 0}, err;
  char what[80];

  err = MPI_Allreduce(buf, buf, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  snprintf(what, sizeof(what), "round %d: allreduce, aliased, class", round);
  mt_check_int(what, err_class(err), MPI_ERR_BUFFER);
  snprintf(what, sizeof(what), "round %d: step after the allreduce", round);
  mt_check_int(what, step(dup, round), 2 * round);

  /* Only the root's buffers alias: the root fails, then reduces again with its own. */
  int in = 10 * round + me, out = -1;
  err = MPI_Reduce(&in, me == 0 ? (void *)&in : NULL, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (err != MPI_SUCCESS)
    err = MPI_Reduce(&in, &out, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD) == MPI_SUCCESS
              ? err_class(err)
              : -1;
  snprintf(what, sizeof(what), "round %d: reduce, root aliased, class", round);
  mt_check_int(what, err, me == 0 ? MPI_ERR_BUFFER : MPI_SUCCESS);
  if (me == 0) {
    snprintf(what, sizeof(what), "round %d: reduce made again", round);
    mt_check_int(what, out, 20 * round + 1);
  }
  snprintf(what, sizeof(what), "round %d: step after the reduce", round);
  mt_check_int(what, step(dup, me), 1);

  MPI_Request rq = MPI_REQUEST_NULL;
  in = 100 * round + me;
  out = -1;
  err = MPI_Ireduce(&in, me == 0 ? (void *)&in : NULL, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rq);
  if (err == MPI_SUCCESS)
    err = MPI_Wait(&rq, MPI_STATUS_IGNORE);
  else if (MPI_Ireduce(&in, &out, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rq) == MPI_SUCCESS &&
           MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS)
    err = err_class(err);
  else
    err = -1;
  snprintf(what, sizeof(what), "round %d: ireduce, root aliased, class", round);
  mt_check_int(what, err, me == 0 ? MPI_ERR_BUFFER : MPI_SUCCESS);
  if (me == 0) {
    snprintf(what, sizeof(what), "round %d: ireduce made again", round);
    mt_check_int(what, out, 200 * round + 1);
  }
  snprintf(what, sizeof(what), "round %d: step after the ireduce", round);
  mt_check_int(what, step(MPI_COMM_WORLD, 1), 2);

  err = MPI_Bcast(buf, 1, MPI_INT, mt_.size, MPI_COMM_WORLD);
  snprintf(what, sizeof(what), "round %d: bcast, root out of range, class", round);
  mt_check_int(what, err_class(err), MPI_ERR_ROOT);
  snprintf(what, sizeof(what), "round %d: step after the bcast", round);
  mt_check_int(what, step(dup, 2), 4);

  err = MPI_Comm_dup(dup, NULL);
  snprintf(what, sizeof(what), "round %d: comm_dup, null result, class", round);
  mt_check_int(what, err_class(err), MPI_ERR_ARG);
  MPI_Comm again;
  err = MPI_Comm_dup(dup, &again);
  snprintf(what, sizeof(what), "round %d: comm_dup made again, then a step on it", round);
  mt_check_int(what, err == MPI_SUCCESS ? step(again, 3) : -1, 6);
  MPI_Comm_free(&again);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("coll_refused");
  mt_require_size(2);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int round = 1; round <= 2; round++)
    round_of(round, dup);
  MPI_Comm_free(&dup);
  return mt_end();
}
