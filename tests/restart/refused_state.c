/* A job that holds a partitioned request (MPI_Precv_init, never started) while it runs: mana
 * cannot make one again, so a checkpoint requested in mid-run must be refused with that
 * reason and the job must go on.
 *   usage: refused_state STEPS STEP_MS
 * Each step: an Allreduce of a value derived from the step and the rank (the persistent
 * request only has to exist).  Rank 0 prints one line per 10 steps. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 40;
  int step_ms = argc > 2 ? atoi(argv[2]) : 50;
  int value = rank, *slot = &value;
  int partition = 0;
  MPI_Request held;
  MPI_Precv_init(&partition, 1, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
                 &held);
  long total = 0;
  for (int step = 0; step < steps; step++) {
    *slot = step * (rank + 1) + *slot % 7;
    int got = *slot, sum = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    if (rank == 0 && step % 10 == 9)
      printf("step %d: sum %d, total %ld\n", step + 1, sum, total);
    struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  MPI_Request_free(&held);
  if (rank == 0)
    printf("done: total %ld\n", total);
  MPI_Finalize();
  return 0;
}
