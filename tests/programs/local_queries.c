/*
 * local_queries.c - the calls mana answers without entering the lower half (MPI_Comm_rank,
 * MPI_Comm_size, MPI_Wtime, MPI_Wtick, MPI_Initialized, MPI_Finalized, MPI_Query_thread) give
 * MPI's answers: on MPI_COMM_WORLD and MPI_COMM_SELF, a duplicate, splits that renumber the
 * ranks, a communicator of a group, a periodic ring and an intercommunicator (its local
 * group), before and after a checkpoint and restart, and the clock never runs backwards.
 *
 * Each round every rank asks all of them ten times over, checks each answer against the
 * expected one and against the previous round's, and reduces on MPI_COMM_WORLD (the
 * checkpoints fall between rounds).  MPI_Finalized is asked after MPI_Finalize too.
 * Ranks: 2 or more.  Arguments: [ROUNDS].
 */
#include <stdio.h>

#include "mpitest.h"

enum { NCOMMS = 7 };

int main(int argc, char **argv)
{
  int flag = -1, provided = -1;
  MPI_Initialized(&flag);
  if (flag != 0)
    printf("MPI_Initialized before MPI_Init: %d\n", flag);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  mt_begin("local_queries");
  int rounds = (int)mt_arg("local_queries", argc, argv, 1, 30);
  int me = mt_.rank, n = mt_.size, half = n / 2;
  if (n < 2)
    mt_die("needs at least 2 ranks");
  MPI_Comm comms[NCOMMS];
  int want_rank[NCOMMS], want_size[NCOMMS];
  comms[0] = MPI_COMM_WORLD, want_rank[0] = me, want_size[0] = n;
  comms[1] = MPI_COMM_SELF, want_rank[1] = 0, want_size[1] = 1;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
  want_rank[2] = me, want_size[2] = n;
  MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &comms[3]); /* reversed */
  want_rank[3] = n - 1 - me, want_size[3] = n;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &comms[4]); /* by parity */
  want_rank[4] = me / 2, want_size[4] = (n + 1 - me % 2) / 2;
  int dims[1] = {n}, periods[1] = {1};
  MPI_Cart_create(comms[3], 1, dims, periods, 0, &comms[5]); /* the reversed numbering */
  want_rank[5] = n - 1 - me, want_size[5] = n;
  MPI_Comm side;
  MPI_Comm_split(MPI_COMM_WORLD, me < half, me, &side);
  MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, me < half ? half : 0, 7, &comms[6]);
  want_rank[6] = me < half ? me : me - half, want_size[6] = me < half ? half : n - half;
  MPI_Comm_free(&side);

  double last = MPI_Wtime(), tick = MPI_Wtick();
  int backwards = 0, wrong = 0;
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < NCOMMS; k++)
      for (int rep = 0; rep < 10; rep++) {
        int rank = -1, size = -1;
        MPI_Comm_rank(comms[k], &rank);
        MPI_Comm_size(comms[k], &size);
        wrong += rank != want_rank[k] || size != want_size[k];
        double t = MPI_Wtime();
        backwards += t < last;
        last = t;
      }
    MPI_Initialized(&flag);
    wrong += flag != 1;
    MPI_Finalized(&flag);
    wrong += flag != 0;
    MPI_Query_thread(&flag);
    wrong += flag != provided;
    wrong += MPI_Wtick() != tick;
    int in = me + round, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
  }
  mt_check_int("ranks, sizes, flags and ticks that differ from MPI's", wrong, 0);
  mt_check_int("times earlier than the one before", backwards, 0);
  mt_check(tick > 0 && tick <= 1e-3, "MPI_Wtick is a resolution");
  mt_append("rank %d: total %ld\n", me, total);
  for (int k = 2; k < NCOMMS; k++)
    MPI_Comm_free(&comms[k]);
  int status = mt_end();
  MPI_Finalized(&flag);
  if (flag != 1)
    printf("rank %d: MPI_Finalized after MPI_Finalize: %d\n", me, flag);
  return status;
}
