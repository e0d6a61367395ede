/*
 * attr_tag_ub.c - the attributes MPI predefines on MPI_COMM_WORLD are answered with a pointer
 * to an int; a program may keep the pointer and read it later (MPICH's pt2pt/large_tag reads
 * it right after the call, where a checkpoint may fall).  After a restart the pointer must
 * still point at the value.
 *
 * Every rank asks for MPI_TAG_UB and MPI_WTIME_IS_GLOBAL once, then over several rounds
 * exchanges messages with tags counting down from the upper bound, reading it through the
 * pointer each round.  Output: the tags used and what was received.  Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("attr_tag_ub");
  mt_require_size(2);
  int *tag_ub = NULL, *global = NULL, flag = 0, flag2 = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag2);
  mt_check(flag && *tag_ub >= 32767, "MPI_TAG_UB is set and at least 32767");
  const int ub = *tag_ub, is_global = flag2 ? *global : -1;
  int peer = 1 - mt_.rank, bad = 0;
  for (int round = 0; round < 8; round++) {
    int tag = *tag_ub - round, out = round * 10 + mt_.rank, in = -1;
    bad += *tag_ub != ub || (flag2 && *global != is_global);
    MPI_Sendrecv(&out, 1, MPI_INT, peer, tag, &in, 1, MPI_INT, peer, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    bad += in != round * 10 + peer;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mt_check_int("attribute values or messages wrong", bad, 0);
  if (mt_.rank == 0)
    mt_append("tag_ub >= 32767: %d\n", ub >= 32767);
  return mt_end();
}
