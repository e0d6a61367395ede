/*
 * app_pipes.c - pipes a program makes and holds both ends of (a wake-up pipe, a queue to
 * itself): every round writes a line into the pipe and reads the line of the round before, so
 * a line is always waiting in it, also at a checkpoint.  The read end is non-blocking and the
 * write end has a duplicate; the pipe was made bigger with F_SETPIPE_SZ.  A restarted rank
 * found the descriptors closed, or reused by MPI's own (lower-half/state_pipes.c).  Every round
 * checks the line read, the flags and the size, and reduces on MPI_COMM_WORLD.
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "mpitest.h"

enum { PIPE_BYTES = 131072 };

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("app_pipes");
  mt_require_size(2);
  int rounds = (int)mt_arg("app_pipes", argc, argv, 1, 30);
  int ends[2];
  if (pipe2(ends, O_NONBLOCK) != 0 || fcntl(ends[1], F_SETFL, 0) != 0 ||
      fcntl(ends[0], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES)
    mt_die("cannot make the pipe");
  int second_writer = dup(ends[1]);
  char line[64], got[64];
  long bad_rounds = 0;
  snprintf(line, sizeof(line), "round %3d rank %d\n", -1, mt_.rank);
  if (write(second_writer, line, strlen(line)) != (ssize_t)strlen(line))
    mt_die("write failed");
  for (int r = 0; r < rounds; r++) {
    snprintf(line, sizeof(line), "round %3d rank %d\n", r, mt_.rank);
    int bad = write(r % 2 ? second_writer : ends[1], line, strlen(line)) != (ssize_t)strlen(line);
    char want[64];
    snprintf(want, sizeof(want), "round %3d rank %d\n", r - 1, mt_.rank);
    ssize_t n = read(ends[0], got, strlen(want));
    bad += n != (ssize_t)strlen(want) || memcmp(got, want, strlen(want)) != 0;
    bad += !(fcntl(ends[0], F_GETFL) & O_NONBLOCK) || (fcntl(ends[1], F_GETFL) & O_NONBLOCK);
    bad += fcntl(ends[0], F_GETPIPE_SZ) != PIPE_BYTES;
    if (bad)
      mt_check(0, "round %d: %d of the pipe's checks failed", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  ssize_t left = read(ends[0], got, sizeof(got));
  mt_check(left == 17, "the last line is still in the pipe (%zd bytes)", left);
  mt_check_int("rounds whose pipe was as written", rounds - bad_rounds, rounds);
  close(ends[0]);
  close(ends[1]);
  close(second_writer);
  return mt_end();
}
