/*
 * abort_after_loop.c - a program that ends in MPI_Abort after some work, as OpenCoarrays'
 * STOP in one image does (MPI_Abort(MPI_COMM_WORLD, 0) from that image): allreduces on
 * MPI_COMM_WORLD and a duplicate, checked, then rank 1 aborts with status 4 while rank 0
 * waits in a barrier that never completes.  The allreduces give a checkpoint places to fall
 * (run_at_calls.sh, counting rank 1's calls, which it can learn only if the count is written
 * when MPI_Abort is called: the launcher kills the ranks before their exit handlers run).
 * Expected: nothing on stdout (a wrong sum prints a line and aborts with status 1), and the
 * abort's status, 4, from mpiexec (registered with it).
 * Ranks: 2.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int i = 0; i < 12; i++) {
    int v = rank + i, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, i % 2 ? dup : MPI_COMM_WORLD);
    if (sum != size * i + size * (size - 1) / 2) {
      printf("rank %d: allreduce %d gave %d\n", rank, i, sum);
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 1 % size)
    MPI_Abort(MPI_COMM_WORLD, 4);
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d: past the barrier, not aborted\n", rank);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
