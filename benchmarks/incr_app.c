/*
 * incr_app.c - the application of the incremental checkpoint benchmark
 * (run_incremental_bench.sh).
 *
 *   usage: incr_app MIB CONTROL_PREFIX
 *
 * Every rank holds MIB MiB of heap filled with non-zero pseudo-random data, then rank 0
 * prints "ready 0". From then on the ranks wait, calling MPI_Barrier every 5 ms, for the file
 * CONTROL_PREFIX.K (K = 1, 2, ...). It holds a percentage P: every rank rewrites one word in
 * P % of its pages (spread over the whole buffer), and rank 0 prints "ready K". A file that
 * holds "end" ends the program. The benchmark checkpoints at each "ready": the next
 * generation then differs from the previous one in exactly P % of the buffer's pages.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

/* -2 while CONTROL_PREFIX.k does not exist; -1 for "end"; else the percentage. */
static int read_control(const char *prefix, int k)
{
  char path[4096], text[32] = "";
  snprintf(path, sizeof(path), "%s.%d", prefix, k);
  FILE *f = fopen(path, "r");
  if (!f)
    return -2;
  if (!fgets(text, sizeof(text), f)) {
    fclose(f);
    return -2; /* being written */
  }
  fclose(f);
  if (strncmp(text, "end", 3) == 0)
    return -1;
  return atoi(text);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc != 3) {
    if (me == 0)
      fprintf(stderr, "usage: incr_app MIB CONTROL_PREFIX\n");
    MPI_Finalize();
    return 2;
  }
  size_t bytes = (size_t)strtoull(argv[1], NULL, 10) << 20;
  size_t pages = bytes / PAGE, words = bytes / sizeof(uint64_t);
  uint64_t *mem = aligned_alloc(PAGE, bytes ? bytes : PAGE);
  if (!mem)
    MPI_Abort(MPI_COMM_WORLD, 1);
  uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)me;
  for (size_t i = 0; i < words; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    mem[i] = x | 1;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    printf("ready 0\n");
    fflush(stdout);
  }
  struct timespec nap = {0, 5000000};
  for (int k = 1;; k++) {
    int pct = -2;
    while (pct == -2) {
      if (me == 0)
        pct = read_control(argv[2], k);
      MPI_Bcast(&pct, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (pct == -2) {
        MPI_Barrier(MPI_COMM_WORLD);
        nanosleep(&nap, NULL);
      }
    }
    if (pct < 0)
      break;
    /* pct % of the pages, evenly spread: page i * pages / n for i < n. */
    size_t n = pages * (size_t)pct / 100;
    for (size_t i = 0; i < n; i++)
      mem[(i * pages / n) * (PAGE / sizeof(uint64_t))] += 2 * (uint64_t)k + 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
      printf("ready %d\n", k);
      fflush(stdout);
    }
  }
  uint64_t sum = 0, all = 0;
  for (size_t i = 0; i < words; i += PAGE / sizeof(uint64_t))
    sum += mem[i];
  MPI_Reduce(&sum, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("incr_app: checksum %016llx\n", (unsigned long long)all);
  free(mem);
  MPI_Finalize();
  return 0;
}
