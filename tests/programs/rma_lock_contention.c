/*
 * rma_lock_contention.c - every rank takes an exclusive lock on rank 0's window over and over
 * (as MPICH's rma/lockcontention2 and contention_putget): at any moment one rank holds the lock
 * and the others wait inside MPI_Win_lock for its unlock.  A checkpoint asked for inside the
 * loops must reach a safe point: with three ranks or more there is always a waiter, so a holder
 * that parks before its unlock keeps one waiting forever (the stall rule's releases only
 * passed the lock on).
 *
 * Each rank puts ROUNDS values to its own slots of rank 0's window, one exclusive epoch each,
 * then reads every slot back under the lock; rank 0 checks them all.
 *
 * Output: the sum of rank 0's window and each rank's sum of what it read back.  Ranks: 2 or more.
 */
#include "mpitest.h"

#define ROUNDS 150

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma_lock_contention");
  int n = mt_.size, me = mt_.rank;
  if (n < 2)
    mt_die("needs at least 2 ranks");
  int slots = n * ROUNDS;
  int *mem = mt_alloc(sizeof(int) * (size_t)(me == 0 ? slots : 1));
  for (int i = 0; me == 0 && i < slots; i++)
    mem[i] = -1;
  MPI_Win win;
  MPI_Win_create(mem, me == 0 ? sizeof(int) * (MPI_Aint)slots : 0, sizeof(int), MPI_INFO_NULL,
                 MPI_COMM_WORLD, &win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < ROUNDS; i++) {
    int v = 1000 * me + i;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Put(&v, 1, MPI_INT, 0, me + i * n, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
  }
  long back = 0;
  for (int i = 0; i < ROUNDS; i++) {
    int got = -2;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&got, 1, MPI_INT, 0, me + i * n, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    back += got;
  }
  mt_check_int("sum of what this rank read back", back,
               (long)ROUNDS * 1000 * me + (long)ROUNDS * (ROUNDS - 1) / 2);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    long sum = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    for (int i = 0; i < slots; i++)
      sum += mem[i];
    MPI_Win_unlock(0, win);
    long exp = 0;
    for (int r = 0; r < n; r++)
      exp += (long)ROUNDS * 1000 * r + (long)ROUNDS * (ROUNDS - 1) / 2;
    mt_check_int("sum of rank 0's window", sum, exp);
    mt_append("window sum %ld\n", sum);
  }
  mt_append("rank %d read sum %ld\n", me, back);
  MPI_Win_free(&win);
  free(mem);
  return mt_end();
}
