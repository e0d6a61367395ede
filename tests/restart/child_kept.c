/* A job whose rank 0 keeps a child process for the whole run: it pipes its progress lines
 * through a `cat` started with popen, as a program that sends its log through a compressor
 * does.  The child is not in a rank's image, so a checkpoint asked for while it runs must be
 * refused with that reason once mana has waited for it (MANA_CHILDREN_WAIT_MS), and the job
 * must go on to its native output (run_refusal.sh).
 *   usage: child_kept STEPS STEP_MS
 * Rank 0 prints "child started" once the child runs, then STEPS steps of an Allreduce and
 * STEP_MS of sleep, a line per 10 steps; at the end the child must exit 0. */
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
  FILE *child = NULL;
  if (rank == 0) {
    child = popen("cat > /dev/null", "w");
    if (!child) {
      perror("popen");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("child started\n");
    fflush(stdout);
  }
  long total = 0;
  for (int step = 0; step < steps; step++) {
    int got = step * (rank + 1) + rank % 7, sum = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    if (child)
      fprintf(child, "step %d total %ld\n", step, total);
    if (rank == 0 && step % 10 == 9)
      printf("step %d total %ld\n", step + 1, total);
    struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (child) {
    int status = pclose(child);
    printf("child exited with status %d\n", status);
  }
  MPI_Finalize();
  return 0;
}
