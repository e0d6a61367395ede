/*
 * finalize_early.c - one rank has nothing to do and finalizes at once while the other still
 * makes MPI calls that need no peer (as MPICH's coll/op_commutative does).  A checkpoint that
 * rank 0 asks for at one of those calls must not be refused because rank 1 finalized first
 * (the test trigger holds a rank's MPI_Finalize until the checkpoint has begun).
 *
 * Rank 0 creates, queries and frees user operations and datatypes, and reports what MPI said.
 * Ranks: 2.
 */
#include "mpitest.h"

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("finalize_early");
  mt_require_size(2);
  if (mt_.rank == 0) {
    long sum = 0;
    for (int round = 0; round < 8; round++) {
      MPI_Op op;
      MPI_Datatype vec;
      int commute = -1, size = 0;
      MPI_Op_create(add_ints, round % 2, &op);
      MPI_Op_commutative(op, &commute);
      MPI_Type_vector(round + 1, 2, 3, MPI_INT, &vec);
      MPI_Type_size(vec, &size);
      MPI_Type_free(&vec);
      MPI_Op_free(&op);
      mt_check_int("commutative", commute, round % 2);
      sum += size;
    }
    mt_check_int("sum of vector sizes", sum, 4L * 2 * 36);
    mt_append("sizes %ld\n", sum);
  }
  return mt_end();
}
