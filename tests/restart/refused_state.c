/* A job that goes on computing after MPI_Finalize (post-processing, writing its results): a
 * checkpoint asked for then cannot be taken, since MPI cannot be initialized again in the
 * restarted process, so it must be refused with that reason and the job must go on.
 *   usage: refused_state STEPS STEP_MS
 * STEPS Allreduces of a value derived from the step and the rank, then MPI_Finalize; rank 0
 * prints "finalized" (run_refusal.sh waits for it before it asks), then STEPS steps of
 * STEP_MS without MPI, a line per 10. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int steps = argc > 1 ? atoi(argv[1]) : 40;
  int step_ms = argc > 2 ? atoi(argv[2]) : 50;
  long total = 0;
  for (int step = 0; step < steps; step++) {
    int got = step * (rank + 1) + rank % 7, sum = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
  }
  MPI_Finalize();
  if (rank == 0) {
    printf("finalized: total %ld\n", total);
    fflush(stdout);
  }
  for (int step = 0; step < steps; step++) {
    total = total * 31 + step;
    if (rank == 0 && step % 10 == 9) {
      printf("post-processing step %d: %ld\n", step + 1, total % 1000003);
      fflush(stdout);
    }
    struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}
