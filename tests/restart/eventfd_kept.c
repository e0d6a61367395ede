/* A job whose rank 0 keeps an eventfd for the whole run, as a program that wakes a thread with
 * one does.  A restart cannot give it back, so a checkpoint asked for while it is open must be
 * refused with that reason, and the job must go on to its native output (run_refusal.sh).
 *   usage: eventfd_kept STEPS STEP_MS
 * Rank 0 prints "eventfd made", then STEPS steps of an Allreduce, a count posted to and read
 * from the eventfd, and STEP_MS of sleep, a line per 10 steps. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int steps = argc > 1 ? atoi(argv[1]) : 40;
  int step_ms = argc > 2 ? atoi(argv[2]) : 50;
  int efd = -1;
  if (rank == 0) {
    efd = eventfd(0, 0);
    if (efd < 0) {
      perror("eventfd");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("eventfd made\n");
    fflush(stdout);
  }
  long total = 0, posted = 0;
  for (int step = 0; step < steps; step++) {
    int got = step * (rank + 1) + rank % 7, sum = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    if (efd >= 0) {
      uint64_t one = 1, count = 0;
      if (write(efd, &one, sizeof(one)) == sizeof(one) &&
          read(efd, &count, sizeof(count)) == sizeof(count))
        posted += (long)count;
    }
    if (rank == 0 && step % 10 == 9)
      printf("step %d total %ld posted %ld\n", step + 1, total, posted);
    struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (efd >= 0)
    close(efd);
  MPI_Finalize();
  return 0;
}
