/*
 * rma_fence_ended.c - a passive-target epoch after a fence that opened an epoch ends the
 * fence epoch on that rank, as MPICH has it (MPI calls the lock erroneous; MPICH's
 * errors/rma tests rely on it): after MPI_Win_lock/MPI_Win_unlock (or
 * MPI_Win_lock_all/MPI_Win_unlock_all) an MPI_Get without a new fence fails with
 * MPI_ERR_RMA_SYNC, while the rank that took no lock is still in the fence epoch.  A
 * collective on MPI_COMM_WORLD between the steps gives a checkpoint a place to fall
 * (run_at_calls.sh): the drain's fence and a restart's opened the fence epoch again, and the
 * erroneous MPI_Get succeeded (MPICH's errors/rma/win_sync_lock_fence).
 * Ranks: 2.
 */
#include "mpitest.h"

static void step(void)
{
  int v = 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

static int err_class(int err)
{
  int c = -1;
  if (err != MPI_SUCCESS)
    MPI_Error_class(err, &c);
  return err == MPI_SUCCESS ? MPI_SUCCESS : c;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma_fence_ended");
  mt_require_size(2);
  const int me = mt_.rank;
  int buf[2] = {10 + me, 20 + me}, got = -1;
  MPI_Win win;
  MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

  for (int round = 1; round <= 2; round++) {
    char what[96];
    MPI_Win_fence(0, win);
    step();
    /* Rank 0 takes a passive epoch, rank 1 stays in the fence epoch. */
    if (me == 0) {
      if (round == 1)
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      else
        MPI_Win_lock_all(0, win);
      MPI_Get(&got, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
      if (round == 1)
        MPI_Win_unlock(1, win);
      else
        MPI_Win_unlock_all(win);
    }
    step();
    got = -1;
    int err = MPI_Get(&got, 1, MPI_INT, 1 - me, 1, 1, MPI_INT, win);
    snprintf(what, sizeof(what), "round %d: get after it, class", round);
    mt_check_int(what, err_class(err), me == 0 ? MPI_ERR_RMA_SYNC : MPI_SUCCESS);
    step();
    /* A new fence epoch, used by both ranks: RMA is allowed again everywhere (values are not
     * checked: a lock inside a fence epoch is erroneous in MPI, and what MPICH's gets read
     * then is not specified). */
    MPI_Win_fence(0, win);
    err = MPI_Get(&got, 1, MPI_INT, 1 - me, 0, 1, MPI_INT, win);
    snprintf(what, sizeof(what), "round %d: get in a new fence epoch, class", round);
    mt_check_int(what, err_class(err), MPI_SUCCESS);
    MPI_Win_fence(0, win);
    step();
  }
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  MPI_Win_free(&win);
  return mt_end();
}
