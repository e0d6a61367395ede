/* A rank's whole upper half survives checkpoint, kill and restart: heap (small and large
 * blocks), stack, a second thread that is joined after the restart, a file written before and
 * after (its offset must be right), stdio buffers, and MPI_COMM_WORLD collectives in a fresh
 * MPI.  Prints one line per step from rank 0; the concatenated output of a run killed at a
 * checkpoint and of its restarts must equal an uninterrupted run.
 *   usage: restart_basic STEPS STEP_MS LOGFILE_PREFIX [nocomm]
 * With "nocomm" the steps make no MPI calls (only the final reduction does): ranks can then be
 * checkpointed independently at any moment, without a coordinated safe point. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t worker_state = 1;
static volatile int stop_worker;

static void *worker(void *arg)
{
  (void)arg;
  while (!stop_worker) {
    worker_state = worker_state * 6364136223846793005ULL + 1442695040888963407ULL;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return (void *)(uintptr_t)(worker_state != 0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 40;
  int step_ms = argc > 2 ? atoi(argv[2]) : 50;
  int nocomm = argc > 4 && strcmp(argv[4], "nocomm") == 0;
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d", argc > 3 ? argv[3] : "/tmp/restart_basic", rank);
  FILE *log = fopen(path, "w");

  size_t n = (size_t)16 << 20;
  double *big = malloc(n * sizeof(double)); /* 128 MiB, touched sparsely */
  for (size_t i = 0; i < n; i += 512)
    big[i] = (double)i * 0.25;
  char *small[64];
  for (int i = 0; i < 64; i++) {
    small[i] = malloc(100 + i);
    memset(small[i], 'a' + i % 26, 100 + i);
  }
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);

  uint64_t acc = (uint64_t)rank + 1;
  for (int step = 0; step < steps; step++) {
    for (size_t i = 0; i < n; i += 4096 * 8)
      acc = acc * 31 + (uint64_t)big[(i + (size_t)step * 512) % n] +
            (uint64_t)small[step % 64][step % 100];
    uint64_t total = acc;
    if (!nocomm)
      MPI_Allreduce(&acc, &total, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    fprintf(log, "step %d acc %016llx\n", step, (unsigned long long)acc);
    if (rank == 0)
      printf("step %d of %d: %016llx\n", step, size, (unsigned long long)total);
    fflush(stdout);
    struct timespec ts = {step_ms / 1000, (long)(step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  stop_worker = 1;
  void *ok;
  pthread_join(t, &ok);
  fclose(log);
  log = fopen(path, "r");
  int lines = 0, c;
  while ((c = fgetc(log)) != EOF)
    lines += c == '\n';
  fclose(log);
  int all_lines = 0;
  MPI_Reduce(&lines, &all_lines, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("worker joined: %s, log lines %d (expected %d)\n", ok ? "yes" : "no", all_lines,
           steps * size);
  MPI_Finalize();
  return 0;
}
