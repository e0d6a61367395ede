/*
 * p2p_persistent_derived.c - persistent requests made with derived datatypes the application
 * frees at once (MPI keeps them alive inside the requests), as MPICH's
 * pt2pt/multi_psend_derived.  A --kill checkpoint ends the job with the requests still
 * allocated: mana frees them before MPI_Finalize, which otherwise reported the datatypes
 * ("yaksa: N leaked handle pool objects").
 *
 * Rank 0 sends every other int of a buffer with MPI_Send_init, rank 1 receives them with
 * MPI_Recv_init into a strided buffer; each round starts both, waits, and checks.  Ranks: 2.
 */
#include "mpitest.h"

#define N 64
#define ROUNDS 8

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_persistent_derived");
  mt_require_size(2);
  int buf[2 * N], bad = 0;
  MPI_Datatype every_other;
  MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  MPI_Request req;
  if (mt_.rank == 0)
    MPI_Send_init(buf, 1, every_other, 1, 7, MPI_COMM_WORLD, &req);
  else
    MPI_Recv_init(buf, 1, every_other, 0, 7, MPI_COMM_WORLD, &req);
  MPI_Type_free(&every_other); /* the request keeps it */
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < 2 * N; i++)
      buf[i] = mt_.rank == 0 ? round * 1000 + i : -1;
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (mt_.rank == 1)
      for (int i = 0; i < 2 * N; i++)
        bad += buf[i] != (i % 2 ? -1 : round * 1000 + i);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Request_free(&req);
  if (mt_.rank == 1)
    mt_check_int("ints received wrong", bad, 0);
  if (mt_.rank == 0)
    mt_append("rounds %d\n", ROUNDS);
  return mt_end();
}
