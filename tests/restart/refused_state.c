/* A job that holds an MPI_T performance variable session while it runs: mana cannot make one
 * again, so a checkpoint requested in mid-run must be refused with that reason and the job
 * must go on.
 *   usage: refused_state STEPS STEP_MS
 * Each step: an Allreduce of a value derived from the step and the rank (the session only
 * has to exist).  Rank 0 prints one line per 10 steps. */
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
  int value = rank, *slot = &value;
  int provided;
  MPI_T_pvar_session held;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
      MPI_T_pvar_session_create(&held) != MPI_SUCCESS) {
    fprintf(stderr, "refused_state: cannot make an MPI_T performance variable session\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
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
  MPI_T_pvar_session_free(&held);
  MPI_T_finalize();
  if (rank == 0)
    printf("done: total %ld\n", total);
  MPI_Finalize();
  return 0;
}
