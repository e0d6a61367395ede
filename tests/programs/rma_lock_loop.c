/*
 * rma_lock_loop.c - many short passive-target epochs from one origin while the target waits
 * in MPI_Win_free (as MPICH's rma/test4): rank 0 locks rank 1's window, puts or gets one int
 * and unlocks, ROUNDS times each; rank 1 only creates and frees the window.  A checkpoint
 * asked for inside the loop converges once rank 0 reaches MPI_Win_free, and the locks on its
 * way must not each cost a round of every rank (the stub counts them on MPI_COMM_SELF).
 *
 * Output: what rank 0 read back and what rank 1's window holds at the end.  Ranks: 2.
 */
#include "mpitest.h"

#define ROUNDS 60

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma_lock_loop");
  mt_require_size(2);
  int buf[2 * ROUNDS], got[ROUNDS];
  MPI_Win win;
  if (mt_.rank == 0) {
    MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int i = 0; i < ROUNDS; i++) {
      int v = 1000 + i;
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Put(&v, 1, MPI_INT, 1, i, 1, MPI_INT, win);
      MPI_Win_unlock(1, win);
    }
    for (int i = 0; i < ROUNDS; i++) {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Get(&got[i], 1, MPI_INT, 1, ROUNDS + i, 1, MPI_INT, win);
      MPI_Win_unlock(1, win);
    }
    MPI_Win_free(&win);
    long sum = 0;
    for (int i = 0; i < ROUNDS; i++)
      sum += got[i];
    mt_check_int("sum of what was read", sum, (long)ROUNDS * (ROUNDS - 1) / 2 + 7L * ROUNDS);
    mt_append("read sum %ld\n", sum);
  } else {
    for (int i = 0; i < 2 * ROUNDS; i++)
      buf[i] = i < ROUNDS ? -1 : 7 + (i - ROUNDS);
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_free(&win);
    long sum = 0;
    for (int i = 0; i < ROUNDS; i++)
      sum += buf[i];
    mt_check_int("sum of what was put", sum, (long)ROUNDS * 1000 + (long)ROUNDS * (ROUNDS - 1) / 2);
  }
  return mt_end();
}
