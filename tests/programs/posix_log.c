/*
 * posix_log.c - an application writing its own log file with plain POSIX calls while it
 * computes: every iteration each rank appends one record at its descriptor's offset (write,
 * not O_APPEND), and at the end reads the file back and prints its digest.  A restart must put
 * the descriptor back at the offset it had at the checkpoint: after a forked checkpoint and a
 * later one that ends the job, the later one must hold the later offset, or the restarted rank
 * overwrites its own records (forked writers read the offsets before they fork).
 * With "append" the log is opened with O_APPEND, as loggers do, and with "reopen" each record
 * is appended by opening the log with stdio's "a" and closing it again: a restart from a
 * checkpoint after which the run went on appending must not find those records in the file,
 * or the restarted rank appends them a second time (state_written_files.c cuts it back).
 * Ranks: any.  Arguments: ITERATIONS DIR [append|reopen] [HOLD_FILE:K ...]: the log is
 * DIR/rank-R.log; with holds, every rank waits before iteration K, still calling MPI, until
 * HOLD_FILE exists.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("posix_log");
  if (argc < 3)
    mt_die("usage: posix_log ITERATIONS DIR [HOLD_FILE:K]");
  long iters = atol(argv[1]), hold_at[4];
  char path[4096], hold[4][1024];
  int holds = 0, append = argc > 3 && strcmp(argv[3], "append") == 0,
      reopen = argc > 3 && strcmp(argv[3], "reopen") == 0;
  snprintf(path, sizeof(path), "%s/rank-%d.log", argv[2], mt_.rank);
  for (int a = 3 + append + reopen; a < argc && holds < 4; a++, holds++) {
    const char *colon = strrchr(argv[a], ':');
    if (!colon)
      mt_die("HOLD_FILE:K expected");
    snprintf(hold[holds], sizeof(hold[holds]), "%.*s", (int)(colon - argv[a]), argv[a]);
    hold_at[holds] = atol(colon + 1);
  }
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | (append ? O_APPEND : 0), 0644);
  if (fd < 0)
    mt_die("cannot open the log");
  uint64_t sum = 0;
  for (long i = 0; i < iters; i++) {
    for (int k = 0; k < holds; k++) {
      if (i != hold_at[k])
        continue;
      int here = 0, all = 0;
      while (!all) {
        here = access(hold[k], F_OK) == 0;
        MPI_Allreduce(&here, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (!all)
          nanosleep(&(struct timespec){0, 2000000}, NULL);
      }
    }
    uint64_t mine = mt_mix((uint64_t)(i * 131 + mt_.rank)), total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char rec[64];
    int n = snprintf(rec, sizeof(rec), "%08ld %016llx\n", i, (unsigned long long)total);
    if (reopen) {
      FILE *log = fopen(path, "a");
      if (!log || fputs(rec, log) < 0 || fclose(log) != 0)
        mt_die("cannot append to the log");
    } else if (write(fd, rec, (size_t)n) != n) {
      mt_die("write");
    }
    sum += total;
  }
  off_t end = reopen ? lseek(fd, 0, SEEK_END) : lseek(fd, 0, SEEK_CUR);
  mt_check_int("offset at the end", (long long)end, iters * 26);
  char buf[4096];
  uint64_t h = 1469598103934665603ULL;
  ssize_t got;
  lseek(fd, 0, SEEK_SET);
  while ((got = read(fd, buf, sizeof(buf))) > 0)
    for (ssize_t k = 0; k < got; k++)
      h = (h ^ (unsigned char)buf[k]) * 1099511628211ULL;
  close(fd);
  mt_append("rank %d: log digest %016llx, sum %016llx\n", mt_.rank, (unsigned long long)h,
            (unsigned long long)sum);
  return mt_end();
}
