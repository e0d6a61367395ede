/*
 * p2p_freed_recv.c - receives the application frees while they are pending.  MPI_Request_free
 * of an active receive lets it complete later, into the buffer, with no handle left (MPI 4.0,
 * 3.7.3).  A checkpoint after such a receive has taken its message must count that message:
 * the sender counted it, and the drain waits for every message counted (MPICH's
 * pt2pt/rqfreeb: the drain gave up after 30 s at three moments in eight).
 *
 * Each round rank 1 posts a receive, frees it and makes local calls around a barrier, then
 * receives a fence message rank 0 sends after the first one: by then, as in rqfreeb, the
 * freed receive has its message.  The last round's receive is freed and never waited for at
 * all: MPI_Finalize completes it.  Ranks: 2.
 */
#include "mpitest.h"

#define ROUNDS 4

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_freed_recv");
  mt_require_size(2);
  int got[ROUNDS], bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (mt_.rank == 1) {
      MPI_Request req;
      int fence = -1;
      got[round] = -1;
      MPI_Irecv(&got[round], 1, MPI_INT, 0, round, MPI_COMM_WORLD, &req);
      MPI_Request_free(&req);
      bad += req != MPI_REQUEST_NULL;
      mt_local_calls(3);
      MPI_Barrier(MPI_COMM_WORLD);
      mt_local_calls(3);
      if (round < ROUNDS - 1) {
        MPI_Recv(&fence, 1, MPI_INT, 0, 100 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad += fence != round;
      }
      mt_local_calls(3);
    } else {
      int v = 10 * round + 7;
      mt_local_calls(3);
      MPI_Barrier(MPI_COMM_WORLD);
      mt_local_calls(3);
      MPI_Send(&v, 1, MPI_INT, 1, round, MPI_COMM_WORLD);
      mt_local_calls(3);
      if (round < ROUNDS - 1)
        MPI_Send(&round, 1, MPI_INT, 1, 100 + round, MPI_COMM_WORLD);
      mt_local_calls(3);
    }
  }
  if (mt_.rank == 1) {
    for (int round = 0; round < ROUNDS - 1; round++)
      bad += got[round] != 10 * round + 7;
    mt_check_int("freed receives that did not deliver", bad, 0);
    mt_fmt_ints(got, ROUNDS - 1);
    mt_append("\n");
  }
  mt_append("rank %d: rounds %d\n", mt_.rank, ROUNDS);
  return mt_end();
}
