/*
 * bsend_detach_wait.c - MPI_Buffer_detach waiting for a large buffered send that its receiver
 * takes only later (as MPICH's pt2pt/bsendfrag): rank 0 attaches a buffer, MPI_Bsends 256 KiB
 * (MPICH sends it by rendezvous) and detaches, which waits until rank 1 has received it; rank
 * 1 first makes many local MPI calls.  A checkpoint asked for around the detach must either
 * wait for it or catch rank 0 before it: a rank inside it cannot park.
 *
 * Output: what rank 1 received.  Ranks: 2.
 */
#include "mpitest.h"

#define INTS (64 * 1024)
#define ROUNDS 4

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("bsend_detach_wait");
  mt_require_size(2);
  int *msg = mt_alloc(sizeof(int) * INTS);
  long sum = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (mt_.rank == 0) {
      int size = 0;
      MPI_Pack_size(INTS, MPI_INT, MPI_COMM_WORLD, &size);
      size += MPI_BSEND_OVERHEAD;
      char *buffer = mt_alloc((size_t)size);
      MPI_Buffer_attach(buffer, size);
      for (int i = 0; i < INTS; i++)
        msg[i] = round * 7 + i;
      MPI_Bsend(msg, INTS, MPI_INT, 1, round, MPI_COMM_WORLD);
      void *back;
      int back_size;
      MPI_Buffer_detach(&back, &back_size);
      mt_check(back == buffer && back_size == size, "round %d: detach returns the buffer", round);
      free(buffer);
    } else {
      for (int k = 1; k <= 60; k++) {
        MPI_Datatype t;
        int size;
        MPI_Type_contiguous(k, MPI_INT, &t);
        MPI_Type_size(t, &size);
        MPI_Type_free(&t);
      }
      MPI_Recv(msg, INTS, MPI_INT, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < INTS; i++)
        sum += msg[i] - i;
    }
  }
  if (mt_.rank == 1) {
    mt_check_int("received", sum, 7L * INTS * (ROUNDS * (ROUNDS - 1) / 2));
    mt_append("sum %ld\n", sum);
  }
  free(msg);
  return mt_end();
}
