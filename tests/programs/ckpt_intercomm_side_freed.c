/*
 * ckpt_intercomm_side_freed.c - an intercommunicator that one whole side has freed while the
 * other side still holds it, and nothing else differs between the ranks.
 *
 * MPI_Comm_free does not wait for the other members, so a checkpoint can find every member of
 * one side of an intercommunicator done with it and the other side still using it (MPICH's
 * pt2pt/icprobe: rank 0 alone against the rest, the rest free it first).  A restart must make
 * it with every member, the ones that freed it too, or the holders' MPI_Intercomm_create
 * waits forever for a leader that never comes.
 *
 * Each round makes an intercommunicator between one rank alone and the rest: rank 0 in even
 * rounds, the last rank in odd ones (so each side is once the one that frees).  The lone rank
 * frees it at once; then every rank reduces STEPS times on MPI_COMM_WORLD (the checkpoints
 * fall there), and the holders query its local and remote sizes, reduce on their own side
 * and free it.
 * Ranks: 2 or more.  Arguments: [ROUNDS] [STEPS].
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_intercomm_side_freed");
  int rounds = (int)mt_arg("ckpt_intercomm_side_freed", argc, argv, 1, 4);
  int steps = (int)mt_arg("ckpt_intercomm_side_freed", argc, argv, 2, 60);
  int last = mt_.size - 1, me = mt_.rank;
  if (mt_.size < 2)
    mt_die("needs at least 2 ranks");
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    int lone = round % 2 ? last : 0, alone = me == lone;
    MPI_Comm side, inter;
    MPI_Comm_split(MPI_COMM_WORLD, alone, me, &side);
    MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, alone ? (lone == 0 ? 1 : 0) : lone, 100 + round,
                         &inter);
    if (alone)
      MPI_Comm_free(&inter);
    for (int i = 0; i < steps; i++) {
      int in = me + i + round, sum = 0;
      MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      total += sum;
    }
    if (!alone) {
      int remote = 0, local = 0, sum = 0, in = me + 1;
      MPI_Comm_remote_size(inter, &remote);
      MPI_Comm_size(inter, &local);
      MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, side);
      total += 1000 * remote + 100 * local + sum;
      MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&side);
    mt_check_int("the intercommunicator is freed", inter == MPI_COMM_NULL, 1);
  }
  mt_append("rank %d: total %ld\n", me, total);
  return mt_end();
}
