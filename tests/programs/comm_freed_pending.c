/*
 * comm_freed_pending.c - receives that outlive the communicator they were posted on.
 * MPI_Comm_free lets pending operations finish (MPI 4.0, 7.4.3); a checkpoint that falls
 * while rank 1 holds such a receive and rank 0 has or has not sent (or freed its side) must
 * count the message, and a restart must post the receive again or keep its completion.
 *
 * Each round both ranks duplicate MPI_COMM_WORLD.  Rank 1 posts a non-blocking receive and a
 * persistent receive on the duplicate, frees it, and makes local calls before and after a
 * barrier on MPI_COMM_WORLD; then it completes both (the persistent one started twice, the
 * second time with a message sent after rank 0 left the barrier).  Rank 0 waits at the
 * barrier, sends three messages on its duplicate with local calls in between, and frees it.
 * Ranks: 2.
 */
#include "mpitest.h"

#define ROUNDS 4

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_freed_pending");
  mt_require_size(2);
  int bad = 0, got[ROUNDS][3], reused = 0;
  MPI_Comm first = MPI_COMM_NULL;
  for (int round = 0; round < ROUNDS; round++) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    /* Once its requests are gone, a freed communicator's handle is MPI's to give again, as
     * MPICH does natively: a handle kept for ever would show here. */
    if (round == 0)
      first = c;
    else
      reused += c == first;
    if (mt_.rank == 1) {
      int once = -1, twice = -1;
      MPI_Request req, preq;
      MPI_Irecv(&once, 1, MPI_INT, 0, 10 + round, c, &req);
      MPI_Recv_init(&twice, 1, MPI_INT, 0, 20 + round, c, &preq);
      MPI_Start(&preq);
      MPI_Comm_free(&c);
      mt_local_calls(6);
      MPI_Barrier(MPI_COMM_WORLD);
      mt_local_calls(6);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      MPI_Wait(&preq, MPI_STATUS_IGNORE);
      got[round][0] = once;
      got[round][1] = twice;
      MPI_Start(&preq);
      mt_local_calls(4);
      MPI_Wait(&preq, MPI_STATUS_IGNORE);
      got[round][2] = twice;
      MPI_Request_free(&preq);
      bad += c != MPI_COMM_NULL;
    } else {
      int v[3] = {100 * round + 1, 100 * round + 2, 100 * round + 3};
      mt_local_calls(3);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Send(&v[0], 1, MPI_INT, 1, 10 + round, c);
      mt_local_calls(3);
      MPI_Send(&v[1], 1, MPI_INT, 1, 20 + round, c);
      mt_local_calls(3);
      MPI_Send(&v[2], 1, MPI_INT, 1, 20 + round, c);
      mt_local_calls(3);
      MPI_Comm_free(&c);
      mt_local_calls(3);
    }
  }
  if (mt_.rank == 1) {
    for (int round = 0; round < ROUNDS; round++)
      for (int i = 0; i < 3; i++)
        bad += got[round][i] != 100 * round + i + 1;
    mt_check_int("values received wrong", bad, 0);
    mt_fmt_ints(&got[0][0], 3 * ROUNDS);
    mt_append("\n");
  }
  mt_append("rank %d: the first duplicate's handle given again in %d of %d rounds\n", mt_.rank,
            reused, ROUNDS - 1);
  if (mt_.rank == 0)
    mt_append("rounds %d\n", ROUNDS);
  return mt_end();
}
