/* Unit tests for what mana_launch tells the coordinator it starts: the number of ranks
 * found in the launcher's command line (coordinator/launch_args.c, plan.ranks), and the
 * restart form mana_restart uses (--restart-from, --expect-ranks). */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "launch_args.h"
#include "launch_coord.h"
#include "launch_locality.h"
#include "mana/launcher_rank.h"

static struct launch_plan plan;

#define LH "/opt/mana/bin/mana_lh"

static int parse_list(const char *first, va_list ap)
{
  static char *argv[32];
  int argc = 0;

  argv[argc++] = "mana_launch";
  argv[argc++] = (char *)first;
  for (char *w = va_arg(ap, char *); w; w = va_arg(ap, char *))
    argv[argc++] = w;
  argv[argc] = NULL;
  launch_plan_free(&plan);
  return launch_args_parse(argc, argv, LH, NULL, &plan);
}

/* Parses a command line that must be valid, into plan. */
static void parse_valid(const char *first, va_list ap)
{
  cr_assert_eq(parse_list(first, ap), 0, "%s", plan.error);
}

static unsigned long ranks_of(const char *first, ...)
{
  va_list ap;

  va_start(ap, first);
  parse_valid(first, ap);
  va_end(ap);
  return plan.ranks;
}

/* Parses and returns the command, words joined by spaces, or "ERROR: message". */
static const char *command_of(const char *first, ...)
{
  static char joined[1024];
  va_list ap;
  int rc;

  va_start(ap, first);
  rc = parse_list(first, ap);
  va_end(ap);
  if (rc) {
    snprintf(joined, sizeof(joined), "ERROR: %s", plan.error);
    return joined;
  }
  joined[0] = '\0';
  for (int i = 0; i < plan.argc; i++) {
    if (i)
      strcat(joined, " ");
    strcat(joined, plan.argv[i]);
  }
  cr_assert_null(plan.argv[plan.argc]);
  return joined;
}

#define COMMAND(...) command_of(__VA_ARGS__, (char *)NULL)

#define RANKS(...) ranks_of(__VA_ARGS__, (char *)NULL)

static void cleanup(void)
{
  launch_plan_free(&plan);
}

TestSuite(coord_launch, .fini = cleanup);

Test(coord_launch, hydra)
{
  cr_assert_eq(RANKS("mpirun", "-n", "4", "./app"), 4);
  cr_assert_eq(RANKS("mpiexec", "-np", "3", "./app", "-n", "9"), 3, "the app's own -n");
  cr_assert_eq(RANKS("mpiexec", "--n=2", "./app"), 2);
  cr_assert_eq(RANKS("mpiexec", "-n", "2", "./a", ":", "-n", "3", "./b"), 5);
  cr_assert_eq(RANKS("mpiexec", "-n", "2", "./a", ":", "./b"), 0, "unknown segment");
  cr_assert_eq(RANKS("mpiexec", "./app"), 0);
  cr_assert_eq(RANKS("mpiexec", "-n", "x", "./app"), 0, "the launcher will complain");
  cr_assert_eq(RANKS("mpiexec", "-n", "1", "-n", "6", "./app"), 6, "the last one counts");
}

Test(coord_launch, srun)
{
  cr_assert_eq(RANKS("srun", "-n4", "./app"), 4);
  cr_assert_eq(RANKS("srun", "-ln", "8", "./app"), 8);
  cr_assert_eq(RANKS("srun", "--ntasks=16", "./app"), 16);
  cr_assert_eq(RANKS("srun", "--ntasks", "2", "./app"), 2);
  cr_assert_eq(RANKS("srun", "-N", "2", "./app"), 0, "nodes only: unknown");
  cr_assert_eq(RANKS("srun", "-n1", "./a", ":", "-n2", "./b"), 3);
}

Test(coord_launch, per_rank_form)
{
  cr_assert_eq(RANKS("./app", "-n", "4"), 0);
}

/* --- restart -------------------------------------------------------------------------- */

Test(coord_launch, restart_wraps_launchers)
{
  cr_assert_str_eq(COMMAND("--restart-from=/ck/gen-000002", "mpiexec", "-n", "2"),
                   "mpiexec -n 2 " LH " --restart /ck/gen-000002");
  cr_assert_eq(plan.form, LAUNCH_FORM_WRAP_LAUNCHER);
  cr_assert_eq(plan.app_count, 0);
  cr_assert_str_eq(COMMAND("--restart-from", "/ck/g", "mpiexec", "-n", "1", ":", "-n", "2"),
                   "mpiexec -n 1 " LH " --restart /ck/g : -n 2 " LH " --restart /ck/g");
  cr_assert_eq(plan.ranks, 3);
  cr_assert_str_eq(COMMAND("--restart-from=/ck/g", "srun", "-n4", "--mpi=pmi2"),
                   "srun -n4 --mpi=pmi2 " LH " --restart /ck/g");
  cr_assert_str_eq(COMMAND("--restart-from=/ck/g", "mpiexec", "-n", "2", "--"),
                   "mpiexec -n 2 " LH " --restart /ck/g");
}

Test(coord_launch, restart_alone_is_one_rank)
{
  cr_assert_str_eq(COMMAND("--restart-from=/ck/g"), LH " --restart /ck/g");
  cr_assert_eq(plan.form, LAUNCH_FORM_PER_RANK);
}

Test(coord_launch, restart_refuses_programs)
{
  const char *out = COMMAND("--restart-from=/ck/g", "mpiexec", "-n", "2", "./app");

  cr_assert(strstr(out, "ERROR: './app': a restart runs the checkpointed program"), "%s", out);
  out = COMMAND("--restart-from=/ck/g", "./app");
  cr_assert(strstr(out, "ERROR: './app': with --restart-from"), "%s", out);
}

Test(coord_launch, expected_ranks)
{
  const char *out = COMMAND("--restart-from=/g", "--expect-ranks=4", "mpiexec", "-n", "2");

  cr_assert_str_eq(out, "ERROR: the checkpoint has 4 ranks but the launcher would start 2: "
                        "start it with -n 4");
  cr_assert_str_eq(COMMAND("--restart-from=/g", "--expect-ranks=4", "mpiexec", "-n", "4"),
                   "mpiexec -n 4 " LH " --restart /g");
  cr_assert_eq(plan.expect_ranks, 4);
  cr_assert_str_eq(COMMAND("--restart-from=/g", "--expect-ranks=4", "srun", "-N", "2"),
                   "srun -N 2 " LH " --restart /g", "unknown counts are the launcher's");
  out = COMMAND("--expect-ranks=0", "mpiexec", "-n", "1", "./app");
  cr_assert(strstr(out, "expected a number of ranks"), "%s", out);
  out = COMMAND("--expect-ranks=3", "mpiexec", "-n", "1", "./app");
  cr_assert(strstr(out, "the checkpoint has 3 ranks"), "%s", out);
}

/* Where the coordinator mana_launch starts listens (coordinator/launch_locality.c). */
static const char *listen_host_of(const char *first, ...)
{
  va_list ap;

  va_start(ap, first);
  parse_valid(first, ap);
  va_end(ap);
  return launch_coordinator_host(&plan, launch_plan_value(&plan, LAUNCH_ENV_COORD_HOST));
}

#define LISTEN_HOST(...) listen_host_of(__VA_ARGS__, (char *)NULL)

static void clear_rm_env(void)
{
  static const char *const names[] = {
      "SLURM_JOB_ID",         "SLURM_JOB_NUM_NODES", "SLURM_NNODES",    "HYDRA_HOST_FILE",
      "PBS_NODEFILE",         "LSB_DJOB_HOSTFILE",   "LSB_HOSTS",       "PE_HOSTFILE",
      "COBALT_NODEFILE",      LAUNCH_ENV_COORD_HOST, "MPI_LOCALNRANKS", "PMI_SIZE",
      "SLURM_STEP_NUM_NODES",
  };

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    unsetenv(names[i]);
}

Test(coord_launch, loopback_when_every_rank_is_here, .init = clear_rm_env)
{
  cr_assert_str_eq(LISTEN_HOST("mpirun", "-n", "2", "./app"), "127.0.0.1");
  cr_assert_null(LISTEN_HOST("mpirun", "-hosts", "a,b", "-n", "2", "./app"));
  cr_assert_null(LISTEN_HOST("mpiexec", "-f", "hosts.txt", "-n", "2", "./app"));
  cr_assert_null(LISTEN_HOST("mpiexec", "-n", "1", "./a", ":", "-host", "b", "-n", "1", "./a"),
                 "a host in a later segment");
  setenv("HYDRA_HOST_FILE", "/etc/hosts.mpi", 1);
  cr_assert_null(LISTEN_HOST("mpirun", "-n", "2", "./app"), "Hydra reads HYDRA_HOST_FILE");
}

Test(coord_launch, loopback_follows_the_allocation, .init = clear_rm_env)
{
  cr_assert_null(LISTEN_HOST("srun", "-n", "2", "./app"), "srun outside an allocation");
  setenv("SLURM_JOB_ID", "42", 1);
  setenv("SLURM_JOB_NUM_NODES", "1", 1);
  cr_assert_str_eq(LISTEN_HOST("srun", "-n", "2", "./app"), "127.0.0.1");
  cr_assert_str_eq(LISTEN_HOST("mpirun", "-n", "2", "./app"), "127.0.0.1");
  cr_assert_null(LISTEN_HOST("srun", "-N", "2", "-n", "2", "./app"));
  cr_assert_null(LISTEN_HOST("srun", "--nodelist=n1", "-n", "2", "./app"));
  setenv("SLURM_JOB_NUM_NODES", "3", 1);
  cr_assert_null(LISTEN_HOST("srun", "-n", "2", "./app"));
  cr_assert_null(LISTEN_HOST("mpirun", "-n", "2", "./app"), "Hydra uses Slurm's nodes");
  unsetenv("SLURM_JOB_ID");
  setenv("PBS_NODEFILE", "/var/spool/pbs/aux/1", 1);
  cr_assert_null(LISTEN_HOST("mpirun", "-n", "2", "./app"));
}

Test(coord_launch, listen_host_as_asked, .init = clear_rm_env)
{
  cr_assert_str_eq(
      LISTEN_HOST("--coordinator-host", "10.0.0.5", "mpirun", "-hosts", "a,b", "-n", "2", "./app"),
      "10.0.0.5");
  cr_assert_null(LISTEN_HOST("--coordinator-host=*", "mpirun", "-n", "2", "./app"));
  setenv(LAUNCH_ENV_COORD_HOST, "node7-ib", 1);
  cr_assert_str_eq(LISTEN_HOST("mpirun", "-n", "2", "./app"), "node7-ib");
  cr_assert_str_eq(COMMAND("--coordinator-host", "a b", "mpirun", "-n", "2", "./app"),
                   "ERROR: invalid value 'a b' for --coordinator-host: expected a host name "
                   "or address, or *");
}

Test(coord_launch, loopback_in_the_per_rank_form, .init = clear_rm_env)
{
  cr_assert_null(LISTEN_HOST("./app"), "the launcher said nothing");
  setenv("PMI_SIZE", "4", 1);
  setenv("MPI_LOCALNRANKS", "2", 1);
  cr_assert_null(LISTEN_HOST("./app"), "two of Hydra's four ranks are elsewhere");
  setenv("MPI_LOCALNRANKS", "4", 1);
  cr_assert_str_eq(LISTEN_HOST("./app"), "127.0.0.1");
  clear_rm_env();
  setenv("SLURM_STEP_NUM_NODES", "1", 1);
  cr_assert_str_eq(LISTEN_HOST("./app"), "127.0.0.1");
  setenv("SLURM_STEP_NUM_NODES", "2", 1);
  cr_assert_null(LISTEN_HOST("./app"));
}

/* Which process of the per-rank form starts the coordinator (launch_coord.c). */
Test(coord_launch, rank_identity)
{
  unsigned long rank = 99, size = 99;
  const char *hydra[] = {"HOME=/root", "PMI_RANK=3", "PMI_SIZE=4", NULL};
  const char *srun[] = {"SLURM_PROCID=0", "SLURM_NTASKS=64", "SLURM_STEP_ID=0", NULL};
  const char *srun_old[] = {"SLURM_STEPID=3", "SLURM_PROCID=7", "SLURM_NTASKS=8", NULL};
  const char *both[] = {"SLURM_PROCID=5", "SLURM_NTASKS=8", "PMI_RANK=1", "PMI_SIZE=2", NULL};
  /* what sbatch gives its batch script: no step, the allocation's task count */
  const char *batch_script[] = {"SLURM_JOB_ID=1", "SLURM_PROCID=0", "SLURM_NTASKS=2",
                                "SLURM_LOCALID=0", NULL};
  const char *step_unnumbered[] = {"SLURM_STEP_ID=0", "SLURM_PROCID=0", NULL};
  const char *no_size[] = {"PMI_RANK=0", NULL};
  const char *out_of_range[] = {"PMI_RANK=4", "PMI_SIZE=4", NULL};
  const char *not_numbers[] = {"PMI_RANK=-1", "PMI_SIZE=2", "SLURM_PROCID=0x1", "SLURM_NTASKS=2",
                               NULL};
  const char *prefix[] = {"PMI_RANK_X=0", "PMI_RANKS=0", "PMI_SIZE=2", NULL};

  cr_assert_eq(mana_launcher_rank(hydra, &rank, &size), 0);
  cr_assert(rank == 3 && size == 4, "%lu of %lu", rank, size);
  cr_assert_eq(mana_launcher_rank(srun, &rank, &size), 0);
  cr_assert(rank == 0 && size == 64, "%lu of %lu", rank, size);
  cr_assert_eq(mana_launcher_rank(srun_old, &rank, &size), 0);
  cr_assert(rank == 7 && size == 8, "%lu of %lu", rank, size);
  cr_assert_eq(mana_launcher_rank(batch_script, &rank, &size), 0);
  cr_assert(rank == 0 && size == 1, "a batch script's program is a singleton: %lu of %lu", rank,
            size);
  cr_assert_eq(mana_launcher_rank(step_unnumbered, &rank, &size), -1);
  cr_assert_eq(mana_launcher_rank(both, &rank, &size), 0);
  cr_assert(rank == 1 && size == 2, "Hydra inside an allocation: Hydra's numbering");
  cr_assert_eq(mana_launcher_rank(no_size, &rank, &size), -1);
  const char *alone[] = {"HOME=/root", "PATH=/usr/bin", NULL};
  const char *pmi_fd_only[] = {"PMI_FD=6", NULL};
  cr_assert_eq(mana_launcher_rank(alone, &rank, &size), 0);
  cr_assert(rank == 0 && size == 1, "a singleton: %lu of %lu", rank, size);
  cr_assert_eq(mana_launcher_rank(pmi_fd_only, &rank, &size), -1, "a launcher that says less");
  cr_assert_eq(mana_launcher_rank(out_of_range, &rank, &size), -1);
  cr_assert_eq(mana_launcher_rank(not_numbers, &rank, &size), -1);
  cr_assert_eq(mana_launcher_rank(prefix, &rank, &size), -1);
  cr_assert_eq(mana_launcher_rank(NULL, &rank, &size), 0, "no environment: a singleton");
}
