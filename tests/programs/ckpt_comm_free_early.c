/*
 * ckpt_comm_free_early.c - communicators freed by one member long before the others.
 * MPI_Comm_free does not wait for the other members (MPICH frees locally), and MPICH's own
 * comm/cmfree frees a duplicate of MPI_COMM_WORLD on one rank, then makes a thousand
 * communicators on every rank before the others free it.  A checkpoint must come promptly
 * between such frees, and a restart must make every communicator that any member still holds,
 * also with the members that had freed it.
 *
 * Each round every rank duplicates MPI_COMM_WORLD (dup), makes a periodic ring topology on it
 * (ring) and a reordered split (rev).  The last rank posts a receive on dup and frees dup and
 * ring at once; then every rank makes SPLITS communicators, reduces on each, and the last
 * rank frees each one at once while the others keep them to the end of the round.  Rank 0
 * then sends on dup (the last rank's receive completes: from then on it holds no record of
 * dup), all reduce on rev and on the others' ring, and the others free everything.
 * Ranks: 2 or more.  Arguments: [ROUNDS] [SPLITS].
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_comm_free_early");
  int rounds = (int)mt_arg("ckpt_comm_free_early", argc, argv, 1, 3);
  int splits = (int)mt_arg("ckpt_comm_free_early", argc, argv, 2, 40);
  int last = mt_.size - 1, me = mt_.rank;
  if (mt_.size < 2)
    mt_die("needs at least 2 ranks");
  MPI_Comm *tmp = mt_alloc((size_t)splits * sizeof(MPI_Comm));
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    MPI_Comm dup, ring, rev;
    int dims[1] = {mt_.size}, periods[1] = {1}, got = -1;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Cart_create(dup, 1, dims, periods, 0, &ring);
    MPI_Comm_split(MPI_COMM_WORLD, 0, mt_.size - me, &rev);
    if (me == last) {
      MPI_Irecv(&got, 1, MPI_INT, 0, round, dup, &req);
      MPI_Comm_free(&dup);
      MPI_Comm_free(&ring);
    }
    for (int i = 0; i < splits; i++) {
      int in = me + i + round, sum = 0;
      MPI_Comm_split(MPI_COMM_WORLD, i % 2, me, &tmp[i]);
      MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, tmp[i]);
      total += sum;
      if (me == last)
        MPI_Comm_free(&tmp[i]);
    }
    if (me == 0) {
      int v = 1000 + round;
      MPI_Send(&v, 1, MPI_INT, last, round, dup);
    }
    if (me == last) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      mt_check_int("value received on the freed duplicate", got, 1000 + round);
    }
    int in = me * (round + 1), sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, rev);
    total += sum;
    if (me != last) {
      /* The others' ring: the last rank left it, so only they reduce on it. */
      int left = -1, right = -1;
      MPI_Cart_shift(ring, 0, 1, &left, &right);
      total += left + 2 * right;
      for (int i = 0; i < splits; i++)
        MPI_Comm_free(&tmp[i]);
      MPI_Comm_free(&ring);
      MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&rev);
    mt_check_int("every handle freed is null",
                 (dup != MPI_COMM_NULL) + (ring != MPI_COMM_NULL) + (rev != MPI_COMM_NULL), 0);
  }
  mt_append("rank %d: total %ld\n", me, total);
  free(tmp);
  return mt_end();
}
