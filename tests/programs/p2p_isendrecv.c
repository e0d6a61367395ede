/*
 * p2p_isendrecv.c - MPI_Isendrecv and MPI_Isendrecv_replace between two ranks, completed after
 * a barrier, so that a checkpoint at the barrier finds them pending and the drain completes
 * them.  MPICH 4.0.2 reports source 0 in their statuses whatever the sender: the drain must
 * count each receive by the source it named (it waited for a message already received).
 *
 * Rounds: both ranks start an MPI_Isendrecv (round % 2 == 0) or an MPI_Isendrecv_replace
 * with the other rank, MPI_Barrier, MPI_Wait, and check the data received.
 * Ranks: 2.  The statuses' sources are not printed (MPICH's are wrong natively).
 */
#include "mpitest.h"

#define N 64
#define ROUNDS 10

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_isendrecv");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int sbuf[N], rbuf[N];
    for (int i = 0; i < N; i++)
      sbuf[i] = me * 100000 + round * 1000 + i;
    MPI_Request req;
    if (round % 2 == 0) {
      MPI_Isendrecv(sbuf, N, MPI_INT, peer, round, rbuf, N, MPI_INT, peer, round, MPI_COMM_WORLD,
                    &req);
    } else {
      for (int i = 0; i < N; i++)
        rbuf[i] = sbuf[i];
      MPI_Isendrecv_replace(rbuf, N, MPI_INT, peer, round, peer, round, MPI_COMM_WORLD, &req);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
      bad += rbuf[i] != peer * 100000 + round * 1000 + i;
  }
  mt_check_int("ints received wrong", bad, 0);
  return mt_end();
}
