/* launch_locality: where mana_launch's coordinator listens (see launch_locality.h). */
#include "launch_locality.h"

#include <stdlib.h>
#include <string.h>

static bool env_set(const char *name)
{
  const char *v = getenv(name);

  return v && *v;
}

/* Inside a Slurm allocation: true when it spans more than one node (or does not say). */
static bool slurm_multi_node(void)
{
  const char *nodes = getenv("SLURM_JOB_NUM_NODES");

  if (!nodes || !*nodes)
    nodes = getenv("SLURM_NNODES");
  return !nodes || strcmp(nodes, "1") != 0;
}

/* Host lists Hydra picks up by itself (its resource-manager and host-file detection). */
static bool hydra_sees_other_hosts(void)
{
  static const char *const lists[] = {
      "HYDRA_HOST_FILE", "PBS_NODEFILE", "LSB_DJOB_HOSTFILE",
      "LSB_HOSTS",       "PE_HOSTFILE",  "COBALT_NODEFILE",
  };

  for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
    if (env_set(lists[i]))
      return true;
  return env_set("SLURM_JOB_ID") && slurm_multi_node();
}

/* Per-rank form: whether the launcher says every rank of the job is on this node (Hydra:
 * as many ranks here as in the job; srun: a one-node step). */
static bool per_rank_all_local(void)
{
  const char *here = getenv("MPI_LOCALNRANKS"), *all = getenv("PMI_SIZE");
  const char *step_nodes = getenv("SLURM_STEP_NUM_NODES");

  if (here && all && *here && strcmp(here, all) == 0)
    return true;
  return step_nodes && strcmp(step_nodes, "1") == 0;
}

bool launch_ranks_all_local(const struct launch_plan *plan)
{
  if (plan->form == LAUNCH_FORM_PER_RANK)
    return per_rank_all_local();
  if (plan->form != LAUNCH_FORM_WRAP_LAUNCHER || plan->names_hosts)
    return false;
  switch (plan->style) {
  case LAUNCHER_STYLE_HYDRA:
    return !hydra_sees_other_hosts();
  case LAUNCHER_STYLE_SRUN:
    /* outside an allocation srun makes its own, of any size */
    return env_set("SLURM_JOB_ID") && !slurm_multi_node();
  default:
    return false;
  }
}

const char *launch_coordinator_host(const struct launch_plan *plan, const char *asked)
{
  if (!asked)
    asked = getenv(LAUNCH_ENV_COORD_HOST);
  if (asked && *asked)
    return strcmp(asked, "*") == 0 ? NULL : asked;
  return launch_ranks_all_local(plan) ? "127.0.0.1" : NULL;
}
