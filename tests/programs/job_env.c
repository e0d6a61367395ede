/*
 * job_env.c - the application, and every program it starts, sees the job's own environment.
 * mana's lower half starts the application with its stub directory first on LD_LIBRARY_PATH
 * and an rseq tunable on GLIBC_TUNABLES, for the application's ld.so and libc only; left in
 * the environment they reached the application's children, and one linked with MPICH loaded
 * the stub outside mana and died.
 *
 * Each round rank 0 prints LD_LIBRARY_PATH and GLIBC_TUNABLES as it sees them (the output
 * must equal the native run's), checks that no variable of mana's own bookkeeping is left,
 * and starts job_env_child (a program linked with MPICH, found beside this one) with popen
 * and with system: its output and exit status must be what MPI says here.  Every round ends
 * with an MPI_Allreduce on every rank (the checkpoints fall there).
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#include <libgen.h>
#include <stdio.h>
#include <unistd.h>

#include "mpitest.h"

extern char **environ;

static void log_variable(const char *name)
{
  const char *value = getenv(name);
  mt_log("%s %s%s", name, value ? "= " : "unset", value ? value : "");
}

static int mana_bookkeeping_left(void)
{
  int n = 0;
  for (char **e = environ; *e; e++)
    n += strncmp(*e, "MANA_UPPER_", 11) == 0;
  return n;
}

static void run_child(const char *child, int round)
{
  int version = 0, subversion = 0;
  MPI_Get_version(&version, &subversion);
  char expected[128], got[128] = "", cmd[4300];
  snprintf(expected, sizeof(expected), "job_env_child: MPI %d.%d, initialized 0\n", version,
           subversion);
  FILE *p = popen(child, "r");
  if (!p)
    mt_die("popen failed");
  if (!fgets(got, sizeof(got), p))
    got[0] = '\0';
  int status = pclose(p);
  mt_check(strcmp(got, expected) == 0 && status == 0,
           "round %d: the child started by popen printed the version and exited 0 (status %#x)",
           round, (unsigned)status);
  snprintf(cmd, sizeof(cmd), "%s > /dev/null", child);
  status = system(cmd);
  mt_check(status == 0, "round %d: the child started by system exited 0 (status %#x)", round,
           (unsigned)status);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("job_env");
  mt_require_size(2);
  int rounds = (int)mt_arg("job_env", argc, argv, 1, 6);
  char self[4096], child[4200];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(child, sizeof(child), "%s/job_env_child", dirname(self));
  if (access(child, X_OK) != 0)
    mt_die("job_env_child is not beside this program");
  for (int round = 0; round < rounds; round++) {
    if (mt_.rank == 0) {
      if (round == 0 || round == rounds - 1) {
        log_variable("LD_LIBRARY_PATH");
        log_variable("GLIBC_TUNABLES");
      }
      mt_check(mana_bookkeeping_left() == 0, "round %d: no MANA_UPPER_ variable", round);
      run_child(child, round);
    }
    mt_allreduce_steps(1);
  }
  return mt_end();
}
