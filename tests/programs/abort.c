/*
 * abort.c - MPI_Abort: rank 1 prints one line, flushes, and calls
 * MPI_Abort(MPI_COMM_WORLD, 3) while rank 0 waits in a receive that is never matched.
 * Expected: stdout is exactly that line, and mpiexec exits with status 3 (hydra passes the
 * abort code through). Registered with --expect-exit 3.
 * The line travels rank -> hydra proxy -> mpiexec through pipes, and the abort tears the
 * proxies down: aborting right after the fflush loses the line in about 1 run in 10
 * natively. Rank 1 therefore waits 300 ms between printing and aborting.
 * Ranks: 2.
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 1 % size) {
    printf("rank %d of %d: calling MPI_Abort(MPI_COMM_WORLD, 3)\n", rank, size);
    fflush(stdout);
    usleep(300000);
    MPI_Abort(MPI_COMM_WORLD, 3);
  } else {
    int never;
    MPI_Recv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: unexpected message\n", rank);
  }
  MPI_Finalize();
  return 0;
}
