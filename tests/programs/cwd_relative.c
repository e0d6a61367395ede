/*
 * cwd_relative.c - an application that opens its files by relative paths, as HPCC does:
 * every iteration each rank appends a line to cwd_relative.R in its working directory (opened
 * and closed each time, so no descriptor of it is open at a checkpoint), and at the end reads
 * the file back; rank 0 prints what each rank found.  A restart launched from another
 * directory must put the ranks back in theirs, or the iterations after it land elsewhere.
 * Ranks: any.  Arguments: ITERATIONS [HOLD_FILE K]: before iteration K rank 0 prints
 * "holding" and every rank waits, still calling MPI, until HOLD_FILE exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("cwd_relative");
  if (argc != 2 && argc != 4)
    mt_die("usage: cwd_relative ITERATIONS [HOLD_FILE K]");
  int iters = atoi(argv[1]), hold_at = argc == 4 ? atoi(argv[3]) : -1;
  char name[64];
  snprintf(name, sizeof(name), "cwd_relative.%d", mt_.rank);
  FILE *f = fopen(name, "w");
  if (!f)
    mt_die("cannot create the file");
  fclose(f);
  for (int it = 0; it < iters; it++) {
    if (it == hold_at) {
      if (mt_.rank == 0) {
        printf("holding before iteration %d\n", it);
        fflush(stdout);
      }
      for (int there = 0; !there;) {
        there = mt_.rank == 0 && access(argv[2], F_OK) == 0;
        MPI_Bcast(&there, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!there)
          usleep(10000);
      }
    }
    if (!(f = fopen(name, "a")))
      mt_die("cannot open the file again");
    fprintf(f, "iteration %d\n", it);
    fclose(f);
    int one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
  int lines = 0, last = -1;
  char line[128];
  if (!(f = fopen(name, "r")))
    mt_die("cannot read the file back");
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "iteration %d", &last) == 1)
      lines++;
  fclose(f);
  int mine[2] = {lines, last}, *all = malloc(2 * (size_t)mt_.size * sizeof(int));
  MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
  for (int r = 0; mt_.rank == 0 && r < mt_.size; r++)
    printf("rank %d: %d lines in its file, the last for iteration %d\n", r, all[2 * r],
           all[2 * r + 1]);
  free(all);
  MPI_Finalize();
  return 0;
}
