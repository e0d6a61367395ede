/*
 * p2p_bottom_buffered.c - messages received into MPI_BOTTOM with a datatype of absolute
 * addresses (as MPICH's datatype/sendrecvt4), sent before their receive is posted.  A
 * checkpoint that falls in between buffers the message (the drain); the receive after the
 * restart delivers it from the buffer, which MPICH's MPI_Unpack refused for MPI_BOTTOM.
 *
 * Each round rank 0 sends 4 ints and a double through a struct type of absolute addresses,
 * then makes a few local MPI calls; rank 1 first makes many local MPI calls, then receives
 * the same way.  Ranks: 2.
 */
#include "mpitest.h"

#define ROUNDS 6

struct rec {
  int a[4];
  double d;
};

static MPI_Datatype absolute(struct rec *r)
{
  MPI_Aint disp[2];
  int blen[2] = {4, 1};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, t;
  MPI_Get_address(r->a, &disp[0]);
  MPI_Get_address(&r->d, &disp[1]);
  MPI_Type_create_struct(2, blen, disp, types, &t);
  MPI_Type_commit(&t);
  return t;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_bottom_buffered");
  mt_require_size(2);
  struct rec r;
  MPI_Datatype t = absolute(&r);
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (mt_.rank == 0) {
      for (int i = 0; i < 4; i++)
        r.a[i] = round * 10 + i;
      r.d = round + 0.5;
      MPI_Send(MPI_BOTTOM, 1, t, 1, round, MPI_COMM_WORLD);
      for (int k = 1; k <= 8; k++) {
        int size;
        MPI_Type_size(t, &size);
      }
    } else {
      for (int k = 1; k <= 20000; k++) { /* slower than rank 0: its message waits */
        int size;
        MPI_Type_size(t, &size);
      }
      r = (struct rec){{-1, -1, -1, -1}, -1.0};
      MPI_Recv(MPI_BOTTOM, 1, t, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < 4; i++)
        bad += r.a[i] != round * 10 + i;
      bad += r.d != round + 0.5;
    }
  }
  MPI_Type_free(&t);
  if (mt_.rank == 1)
    mt_check_int("values received wrong", bad, 0);
  if (mt_.rank == 0)
    mt_append("rounds %d\n", ROUNDS);
  return mt_end();
}
