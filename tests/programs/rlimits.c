/*
 * rlimits.c - a program that raises its own resource limits: the stack's soft limit to 64 MiB
 * (for large automatic arrays), and the open files' soft limit to its hard one, where it then
 * keeps descriptors above the old soft limit (1100 and up: a file per peer, per variable).
 *
 * Every round each rank checks both soft limits and that its high descriptors still name
 * /dev/null, then reduces on MPI_COMM_WORLD (the checkpoints fall there).  The descriptors
 * are only made when the open files' hard limit is above 1200 and the soft limit was below
 * 1100 at the start (a test runs it under "ulimit -Sn 1024"); the output says which.
 * Ranks: any.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mpitest.h"

enum { HIGH_FD = 1100, N_HIGH = 8, STACK_BYTES = 64 << 20 };

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rlimits");
  int rounds = (int)mt_arg("rlimits", argc, argv, 1, 40);

  struct rlimit stack, files;
  if (getrlimit(RLIMIT_STACK, &stack) != 0 || getrlimit(RLIMIT_NOFILE, &files) != 0)
    mt_die("getrlimit failed");
  rlim_t want_stack = stack.rlim_max < STACK_BYTES ? stack.rlim_max : STACK_BYTES;
  stack.rlim_cur = want_stack;
  if (setrlimit(RLIMIT_STACK, &stack) != 0)
    mt_die("cannot raise the stack's soft limit");
  int high = files.rlim_cur < HIGH_FD && files.rlim_max > HIGH_FD + 100;
  rlim_t want_files = high ? files.rlim_max : files.rlim_cur;
  if (high) {
    files.rlim_cur = want_files;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0)
      mt_die("cannot raise the open files' soft limit");
    int null = open("/dev/null", O_RDWR);
    for (int i = 0; i < N_HIGH; i++)
      if (null < 0 || dup2(null, HIGH_FD + i) != HIGH_FD + i)
        mt_die("cannot keep /dev/null above the old soft limit");
    close(null);
  }
  mt_check_int("descriptors kept above the old soft limit of open files", high ? N_HIGH : 0,
               high ? N_HIGH : 0);

  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    struct rlimit s = {0}, f = {0};
    int bad = getrlimit(RLIMIT_STACK, &s) != 0 || getrlimit(RLIMIT_NOFILE, &f) != 0 ||
              s.rlim_cur != want_stack || f.rlim_cur != want_files;
    for (int i = 0; high && i < N_HIGH; i++) {
      char link[64], path[64] = "";
      snprintf(link, sizeof(link), "/proc/self/fd/%d", HIGH_FD + i);
      ssize_t n = readlink(link, path, sizeof(path) - 1);
      bad |= n <= 0 || strncmp(path, "/dev/null", 9) != 0 || write(HIGH_FD + i, "x", 1) != 1;
    }
    if (bad)
      mt_check(0,
               "round %d: soft limits %llu and %llu (stack, open files; expected %llu and "
               "%llu), or a high descriptor lost",
               r, (unsigned long long)s.rlim_cur, (unsigned long long)f.rlim_cur,
               (unsigned long long)want_stack, (unsigned long long)want_files);
    bad_rounds += bad;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds with the raised limits and descriptors", rounds - bad_rounds, rounds);
  for (int i = 0; high && i < N_HIGH; i++)
    close(HIGH_FD + i);
  return mt_end();
}
