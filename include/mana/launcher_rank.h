/* Which rank of how many this process is, as its launcher tells it before MPI starts: the one
 * reading of the environment that mana_launch (who starts the per-rank coordinator), mana_lh
 * (the rank count a restart checks) and mana_restart (its messages) share. */
#ifndef MANA_LAUNCHER_RANK_H
#define MANA_LAUNCHER_RANK_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline const char *mana_launcher_env(const char *const *environ_, const char *name)
{
  size_t len = strlen(name);

  for (const char *const *e = environ_; e && *e; e++)
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
      return *e + len + 1;
  return NULL;
}

static inline int mana_launcher_number(const char *const *environ_, const char *name,
                                       unsigned long *out)
{
  const char *v = mana_launcher_env(environ_, name);
  char *end;

  if (!v || *v < '0' || *v > '9')
    return -1;
  errno = 0;
  *out = strtoul(v, &end, 10);
  return errno || *end ? -1 : 0;
}

/* Slurm's numbering counts inside a job step only: a batch script also has SLURM_PROCID=0 and
 * the allocation's SLURM_NTASKS, and a program it runs without srun is alone (a singleton),
 * not rank 0 of the allocation. */
static inline int mana_launcher_in_slurm_step(const char *const *environ_)
{
  return mana_launcher_env(environ_, "SLURM_STEP_ID") != NULL ||
         mana_launcher_env(environ_, "SLURM_STEPID") != NULL;
}

/* 0 with *rank and *size from Hydra's PMI_RANK and PMI_SIZE, else, inside a Slurm step, from
 * SLURM_PROCID and SLURM_NTASKS; rank 0 of 1 when no launcher started the process (an MPI
 * singleton); -1 when a launcher started it without saying both. */
static inline int mana_launcher_rank(const char *const *environ_, unsigned long *rank,
                                     unsigned long *size)
{
  static const char *const launched[] = {"PMI_RANK", "PMI_SIZE", "PMI_FD", "PMI_PORT", "PMIX_RANK"};

  if (mana_launcher_number(environ_, "PMI_RANK", rank) == 0 &&
      mana_launcher_number(environ_, "PMI_SIZE", size) == 0 && *rank < *size)
    return 0;
  if (mana_launcher_in_slurm_step(environ_)) {
    if (mana_launcher_number(environ_, "SLURM_PROCID", rank) == 0 &&
        mana_launcher_number(environ_, "SLURM_NTASKS", size) == 0 && *rank < *size)
      return 0;
    return -1;
  }
  for (size_t i = 0; i < sizeof(launched) / sizeof(launched[0]); i++)
    if (mana_launcher_env(environ_, launched[i]))
      return -1;
  *rank = 0;
  *size = 1;
  return 0;
}

#endif
