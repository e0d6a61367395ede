/*
 * ckpt_app.c - the application of the checkpoint benchmark (run_ckpt_bench.sh).
 *
 *   usage: ckpt_app MIB SECONDS PROGRESS_PREFIX
 *
 * Every rank holds MIB MiB of heap filled with non-zero pseudo-random data (so that the
 * image writer, which skips all-zero pages, has to save all of it), then loops for SECONDS
 * seconds (CLOCK_MONOTONIC, which keeps running across a checkpoint and a restart on the
 * same machine): each iteration rewrites 64 KiB of the memory, makes an MPI_Allreduce of
 * one double and an MPI_Sendrecv of 4 KiB around the ring, and appends "ITERATION
 * REALTIME_NS" to its own progress file PROGRESS_PREFIX.RANK (one write(2) per line, opened
 * with O_APPEND, reopened by mana at restart).  The benchmark reads the progress files to
 * find how long the application stood still around a checkpoint and when it moved again
 * after a restart.  Rank 0 prints one summary line at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double mono(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 4) {
    if (me == 0)
      fprintf(stderr, "usage: ckpt_app MIB SECONDS PROGRESS_PREFIX\n");
    MPI_Finalize();
    return 2;
  }
  size_t bytes = (size_t)strtoull(argv[1], NULL, 10) << 20;
  double seconds = strtod(argv[2], NULL);
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d", argv[3], me);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  size_t words = bytes / sizeof(uint64_t);
  uint64_t *mem = malloc(words ? words * sizeof(uint64_t) : 1);
  if (!mem)
    MPI_Abort(MPI_COMM_WORLD, 1);
  uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)me;
  for (size_t i = 0; i < words; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    mem[i] = x | 1; /* never an all-zero page */
  }

  enum { SLICE = 65536 / sizeof(uint64_t), MSG = 4096 };
  static char sbuf[MSG], rbuf[MSG];
  memset(sbuf, me + 1, sizeof(sbuf));
  const int right = (me + 1) % np, left = (me + np - 1) % np;
  double t0 = mono(), sum = 0;
  long it = 0;
  size_t at = 0;
  while (mono() - t0 < seconds) {
    for (size_t i = 0; i < SLICE && words; i++, at = (at + 1) % words)
      mem[at] = mem[at] * 6364136223846793005ULL + 1;
    double mine = (double)(mem[at % (words ? words : 1)] & 0xff), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(sbuf, MSG, MPI_CHAR, right, 0, rbuf, MSG, MPI_CHAR, left, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    sum += all;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[64];
    int n = snprintf(line, sizeof(line), "%ld %lld\n", it,
                     (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    if (write(fd, line, (size_t)n) != n)
      MPI_Abort(MPI_COMM_WORLD, 1);
    it++;
  }
  close(fd);
  long total = 0;
  MPI_Reduce(&it, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("ckpt_app: %d ranks, %zu MiB each, %ld iterations on rank 0 (%ld in all), checksum %g\n",
           np, bytes >> 20, it, total, sum);
  free(mem);
  MPI_Finalize();
  return 0;
}
