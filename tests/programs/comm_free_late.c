/*
 * comm_free_late.c - a message that reaches its destination only after the destination freed
 * the communicator, so that no receive can ever take it.  Each odd rank frees its duplicate of
 * MPI_COMM_WORLD first; a barrier on MPI_COMM_WORLD orders that free before the even ranks
 * send their odd partner an int and a 4 KiB message on the duplicate, then free it.  (As with
 * OpenCoarrays' end-of-program notices, the messages are small enough to be sent eagerly.)
 * Allreduces on MPI_COMM_WORLD then give a checkpoint places to fall (run_at_calls.sh): the
 * senders counted the messages, and the drain waited for them in vain and failed.
 * Expected: the sums, identical under mana.
 * Ranks: 2 or more.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_free_late");
  int rank = mt_.rank, size = mt_.size;

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int odd = rank % 2, partner = odd ? rank - 1 : rank + 1;
  if (odd)
    mt_check_int("freeing the duplicate before the messages come", MPI_Comm_free(&dup),
                 MPI_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!odd) {
    if (partner < size) {
      static int big[1024];
      int one = rank;
      MPI_Send(&one, 1, MPI_INT, partner, 7, dup);
      MPI_Send(big, 1024, MPI_INT, partner, 8, dup);
    }
    mt_check_int("freeing the duplicate after sending", MPI_Comm_free(&dup), MPI_SUCCESS);
  }

  mt_allreduce_steps(10);
  return mt_end();
}
