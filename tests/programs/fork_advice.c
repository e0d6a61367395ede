/*
 * fork_advice.c - memory a program asked a child not to get (madvise MADV_DONTFORK) or to get
 * zeroed (MADV_WIPEONFORK), as libraries ask of registered buffers and of a random
 * generator's state.
 *
 * Each rank maps two ranges of 64 pages and advises one MADV_DONTFORK and the other
 * MADV_WIPEONFORK.  Every round it writes a value for the round into every page of both, reduces
 * on MPI_COMM_WORLD (the checkpoints fall there), then checks every page of both and that
 * /proc/self/smaps still shows each range's advice (VmFlags "dc" and "wf").
 * Ranks: any.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "mpitest.h"

enum { PAGE = 4096, PAGES = 64, BYTES = PAGE * PAGES };

/* 1 when the VmFlags of the mapping that starts at `start` include `flag`. */
static int advised(const void *start, const char *flag)
{
  FILE *smaps = fopen("/proc/self/smaps", "r");
  char line[512], want[32];
  int inside = 0, found = 0;
  snprintf(want, sizeof(want), "%lx-", (unsigned long)start);
  while (smaps && fgets(line, sizeof(line), smaps)) {
    if (strncmp(line, want, strlen(want)) == 0)
      inside = 1;
    else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      char padded[520];
      snprintf(padded, sizeof(padded), "%s ", line);
      padded[strcspn(padded, "\n")] = ' ';
      char word[8];
      snprintf(word, sizeof(word), " %s ", flag);
      found = strstr(padded, word) != NULL;
      break;
    }
  }
  if (smaps)
    fclose(smaps);
  return found;
}

static unsigned char value(int round, int rank, int page, int which)
{
  return (unsigned char)(round * 13 + rank * 5 + page * 3 + which + 1);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("fork_advice");
  int rounds = (int)mt_arg("fork_advice", argc, argv, 1, 40);
  int me = mt_.rank;
  unsigned char *range[2];
  for (int w = 0; w < 2; w++) {
    range[w] = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (range[w] == MAP_FAILED || madvise(range[w], BYTES, w ? MADV_WIPEONFORK : MADV_DONTFORK))
      mt_die("cannot map and advise the ranges");
  }
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    for (int w = 0; w < 2; w++)
      for (int p = 0; p < PAGES; p++)
        memset(range[w] + p * PAGE, value(r, me, p, w), PAGE);
    mt_allreduce_steps(1);
    long wrong[2] = {0, 0};
    for (int w = 0; w < 2; w++)
      for (int p = 0; p < PAGES; p++)
        for (int i = 0; i < PAGE; i += 512)
          wrong[w] += range[w][p * PAGE + i] != value(r, me, p, w);
    int dc = advised(range[0], "dc"), wf = advised(range[1], "wf");
    if (wrong[0] || wrong[1] || !dc || !wf)
      mt_check(0,
               "round %d: %ld and %ld bytes wrong in the ranges advised MADV_DONTFORK and "
               "MADV_WIPEONFORK; advice shown: %d and %d",
               r, wrong[0], wrong[1], dc, wf);
    bad_rounds += wrong[0] || wrong[1] || !dc || !wf;
  }
  mt_check_int("rounds whose advised ranges held their values and advice", rounds - bad_rounds,
               rounds);
  munmap(range[0], BYTES);
  munmap(range[1], BYTES);
  return mt_end();
}
