/*
 * comm_free_stranded.c - messages nobody receives, left on a communicator that is then freed,
 * as OpenCoarrays' images leave a notice to each other at the end of every program: each
 * rank sends every other rank one int and one 4 KiB message on a duplicate of MPI_COMM_WORLD,
 * nobody receives them, a barrier on the duplicate orders the sends before the frees, and the
 * duplicate is freed.  Then allreduces on MPI_COMM_WORLD give a checkpoint places to fall
 * (run_at_calls.sh): its drain waited for the messages the senders had counted, and failed
 * after 30 s.  The same is done again on a split, freed while a persistent receive on it
 * still exists, whose messages the drain must keep for that receive.
 * Expected: the sums and the persistent receive's message, identical under mana.
 * Ranks: 2 or more.
 */
#include "mpitest.h"

static void leave_notices(MPI_Comm c, int rank, int size)
{
  static int big[1024];
  for (int p = 0; p < size; p++) {
    if (p == rank)
      continue;
    int one = rank;
    MPI_Send(&one, 1, MPI_INT, p, 7, c);
    MPI_Send(big, 1024, MPI_INT, p, 8, c);
  }
}

int main(int argc, char **argv)
{
  int rank, size;
  MPI_Init(&argc, &argv);
  mt_begin("comm_free_stranded");
  rank = mt_.rank;
  size = mt_.size;

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  leave_notices(dup, rank, size);
  MPI_Barrier(dup);
  mt_check_int("freeing the duplicate with notices left on it", MPI_Comm_free(&dup), MPI_SUCCESS);

  /* A persistent receive on the split takes the message sent before the free, started after
   * it: that message must not be discarded. */
  MPI_Comm split;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
  int got = -1, peer = (rank + 1) % size, from = (rank + size - 1) % size;
  MPI_Request pr;
  MPI_Recv_init(&got, 1, MPI_INT, from, 9, split, &pr);
  int mine = 100 + rank;
  MPI_Send(&mine, 1, MPI_INT, peer, 9, split);
  MPI_Barrier(split);
  MPI_Comm_free(&split);

  mt_allreduce_steps(10);
  MPI_Start(&pr);
  MPI_Wait(&pr, MPI_STATUS_IGNORE);
  MPI_Request_free(&pr);
  mt_check_int("the persistent receive on the freed split", got, 100 + from);
  return mt_end();
}
