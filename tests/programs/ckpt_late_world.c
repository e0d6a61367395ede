/*
 * ckpt_late_world.c - one rank is inside its first collective on MPI_COMM_WORLD while another
 * has not made any collective call yet, for checkpoints at every MPI call of the late rank
 * (tests/restart/run_at_calls.sh): rank 0 exchanges messages with itself on
 * MPI_COMM_SELF for a while before its first MPI_Barrier, the other ranks enter that barrier
 * at once.  The clock must hold the checkpoint until rank 0 has joined them (it knows
 * MPI_COMM_WORLD from MPI_Init on, not from its first collective there).
 *
 *   usage: ckpt_late_world [MESSAGES]    default 200
 * With CKPT_LATE_WORLD_READY=FILE in the environment the last rank creates FILE just before
 * its barrier: a harness that then asks for a checkpoint finds it inside the barrier while
 * rank 0 is still on its own (tests/restart/run_late_world.sh).
 * Ranks: 2 or more.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_late_world");
  const long messages = mt_arg("ckpt_late_world", argc, argv, 1, 200);
  long long sum = 0;
  if (mt_.rank == 0) {
    for (long i = 0; i < messages; i++) {
      long long out = i * i, in = -1;
      MPI_Sendrecv(&out, 1, MPI_LONG_LONG, 0, (int)(i % 7), &in, 1, MPI_LONG_LONG, 0, (int)(i % 7),
                   MPI_COMM_SELF, MPI_STATUS_IGNORE);
      sum += in;
    }
  }
  const char *ready = getenv("CKPT_LATE_WORLD_READY");
  if (ready && mt_.rank == mt_.size - 1 && mt_.size > 1) {
    FILE *f = fopen(ready, "w");
    if (f)
      fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long long total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_check_int("sum of the squares sent to itself by rank 0", total,
               (long long)(messages - 1) * messages * (2 * messages - 1) / 6);
  return mt_end();
}
