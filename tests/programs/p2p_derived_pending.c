/*
 * p2p_derived_pending.c - receives with a non-contiguous datatype posted while their sender
 * has not sent yet.  A --kill checkpoint then ends the job with them posted: cancelling them
 * made MPICH 4.0.2 report a leaked datatype at MPI_Finalize, so mana completes them instead
 * (wrappers/exit_receives.c).
 *
 * Rounds: rank 1 posts MPI_Irecv of one vector (every other int, from rank 0, tag = round) and
 * of one with MPI_ANY_SOURCE/MPI_ANY_TAG, barrier, rank 0 sends both, rank 1 waits and checks.
 * Ranks: 2.
 */
#include "mpitest.h"

#define N 256
#define ROUNDS 6

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_derived_pending");
  mt_require_size(2);
  MPI_Datatype every_other;
  MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int a[N] = {0}, b[N] = {0};
    if (mt_.rank == 1) {
      MPI_Request r[2];
      MPI_Irecv(a, 1, every_other, 0, round, MPI_COMM_WORLD, &r[0]);
      MPI_Irecv(b, 1, every_other, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
      for (int i = 0; i < N; i += 2)
        bad += a[i] != round * 1000 + i || b[i] != -(round * 1000 + i) || a[i + 1] || b[i + 1];
    } else {
      for (int i = 0; i < N; i++)
        a[i] = round * 1000 + i, b[i] = -a[i];
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Send(a, 1, every_other, 1, round, MPI_COMM_WORLD);
      MPI_Send(b, 1, every_other, 1, 100 + round, MPI_COMM_WORLD);
    }
  }
  MPI_Type_free(&every_other);
  if (mt_.rank == 1)
    mt_check_int("ints received wrong", bad, 0);
  return mt_end();
}
