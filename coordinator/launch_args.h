/* launch_args: turn mana_launch's command line into a launch plan.
 *
 * Pure parsing: no I/O, no environment access, no allocation other than the plan's own
 * argument vector. Everything the parser needs from the outside world (the path of mana_lh,
 * the MANA_LAUNCHERS value) is passed in, so every case can be unit-tested.
 *
 * Two forms are recognised, decided by the basename of the first argument after mana's own
 * options:
 *   wrap-launcher:  mana_launch [OPTS] mpiexec|srun|... [LAUNCHER-ARGS] APP [ARGS]
 *                   -> LAUNCHER [LAUNCHER-ARGS] /abs/mana_lh APP [ARGS]   (per MPMD segment)
 *   per-rank:       mana_launch [OPTS] APP [ARGS]      (started by the launcher, once per rank)
 *                   -> /abs/mana_lh APP [ARGS]
 * With --restart-from GENDIR (how mana_restart uses it) there is no APP: the launcher's own
 * arguments are followed by "/abs/mana_lh --restart GENDIR" (per MPMD segment), or, without
 * a launcher, the command is "/abs/mana_lh --restart GENDIR".
 */
#ifndef MANA_LAUNCH_ARGS_H
#define MANA_LAUNCH_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/* Exit status for command-line mistakes (same as most GNU tools). */
#define LAUNCH_EXIT_USAGE 2
/* A valid command that does not fit the checkpoint to restart (its rank count): the same
 * status as every other reason a restart cannot go ahead. */
#define LAUNCH_EXIT_MISMATCH 1

enum launch_form {
  LAUNCH_FORM_PER_RANK,     /* exec mana_lh directly */
  LAUNCH_FORM_WRAP_LAUNCHER /* exec the launcher with mana_lh inserted */
};

/* How a launcher's own command line is parsed. */
enum launcher_style {
  LAUNCHER_STYLE_NONE,  /* per-rank form: no launcher */
  LAUNCHER_STYLE_HYDRA, /* MPICH mpiexec/mpirun */
  LAUNCHER_STYLE_SRUN   /* Slurm srun (getopt_long rules) */
};

/* What the value of a mana option is, which decides how it is checked. */
enum mana_value_kind {
  MANA_VALUE_NONE,          /* a flag */
  MANA_VALUE_PATH,          /* non-empty path; made absolute before export */
  MANA_VALUE_SECONDS,       /* non-negative decimal integer */
  MANA_VALUE_HOSTPORT,      /* HOST:PORT or [IPv6]:PORT, port 1..65535 */
  MANA_VALUE_COUNT,         /* a number of ranks, 1..2^24 */
  MANA_VALUE_HOST,          /* a host name or address, or "*" (every address) */
  MANA_VALUE_SIGNAL,        /* a signal mana may take for checkpoints (ckpt_signal.h) */
  MANA_VALUE_SIGNAL_ACTION, /* kill or checkpoint */
  MANA_VALUE_WHOLE,         /* a whole number, 0..LAUNCH_NUMBER_MAX */
  MANA_VALUE_POSITIVE       /* a whole number, 1..LAUNCH_NUMBER_MAX */
};

/* The largest --keep and --full-every (mana_coordinator's own limit). */
#define LAUNCH_NUMBER_MAX 1000000

/* What mana_launch does with an option once it is parsed. */
enum mana_action {
  MANA_ACTION_HELP,
  MANA_ACTION_VERSION,
  MANA_ACTION_VERBOSE,
  MANA_ACTION_EXPORT,      /* set env_name=value for the ranks */
  MANA_ACTION_RESTART,     /* plan.restart_from */
  MANA_ACTION_EXPECT_RANKS /* plan.expect_ranks */
};

/* One mana_launch option. The table of these drives parsing and the --help text, so adding
 * an option is one entry in launch_args.c. */
struct mana_option {
  const char *long_name; /* without the leading "--" */
  char short_name;       /* 0 when there is none */
  enum mana_value_kind value_kind;
  enum mana_action action;
  const char *env_name;   /* for MANA_ACTION_EXPORT */
  const char *value_name; /* placeholder in --help, e.g. "DIR" */
  const char *help;       /* one line for --help */
};

/* The options table, for the --help printer. */
const struct mana_option *launch_options(size_t *count);

/* One environment variable the ranks receive. */
struct launch_env {
  const struct mana_option *option; /* which option set it */
  const char *value;                /* points into the caller's argv */
};

/* One application found in the command line (one per MPMD segment). */
struct launch_app {
  int argv_index;   /* index of APP in plan.argv (mana_lh sits just before it) */
  const char *wdir; /* working directory the launcher gives it, or NULL */
};

#define LAUNCH_MAX_ENV 24
#define LAUNCH_MSG_LEN 512

struct launch_plan {
  enum launch_form form;
  enum launcher_style style;
  bool help, version, verbose;

  struct launch_env env[LAUNCH_MAX_ENV];
  size_t env_count;

  /* The command to exec: argv[0] is the launcher as typed (form 1, for execvp) or the
   * absolute mana_lh path (form 2, for execv). NULL-terminated, owned by the plan; the
   * strings point into the caller's argv except the inserted mana_lh path. */
  char **argv;
  int argc;

  struct launch_app *apps;
  size_t app_count;

  /* Wrap-launcher form: the number of ranks the launcher starts, summed over the MPMD
   * segments (Hydra -n/-np, srun -n/--ntasks); 0 when the command line does not say for
   * every segment. The coordinator then learns it from the first rank. */
  unsigned long ranks;

  /* Wrap-launcher form: the command line names hosts or nodes (Hydra -hosts, -f, ...;
   * srun -w, -N), so ranks may run on other hosts than this one. */
  bool names_hosts;

  /* --restart-from: the generation directory every rank restarts from (no APP), or NULL.
   * --expect-ranks: the number of ranks the launcher must start, 0 when not given; a
   * launcher command line that says otherwise is a usage error. */
  const char *restart_from;
  unsigned long expect_ranks;

  /* Set when parsing fails: one line, without the "mana_launch: " prefix. */
  char error[LAUNCH_MSG_LEN];
  /* Non-fatal notes (e.g. a launcher option mana_launch does not know), one per line,
   * without prefix; empty when there are none. */
  char warnings[LAUNCH_MSG_LEN];
};

/* Parse mana_launch's argv (argv[0] is mana_launch itself). lh_path is the absolute path
 * of mana_lh to insert; extra_launchers is the MANA_LAUNCHERS value or NULL.
 * Returns 0 on success (check plan->help / plan->version first), or LAUNCH_EXIT_USAGE or
 * LAUNCH_EXIT_MISMATCH with plan->error set. The plan must be released with launch_plan_free() in both cases. */
int launch_args_parse(int argc, char *const argv[], const char *lh_path,
                      const char *extra_launchers, struct launch_plan *plan);

void launch_plan_free(struct launch_plan *plan);

/* The launcher style for a program name (its basename is compared), honouring
 * extra_launchers ("name[=hydra|srun]:..."). *style is LAUNCHER_STYLE_NONE when the program
 * is not a launcher. Returns false, with a message in err, when extra_launchers is
 * malformed. */
bool launch_style_for(const char *program, const char *extra_launchers, enum launcher_style *style,
                      char *err, size_t errlen);

/* The value a mana option of the plan set (by its environment name), or NULL. */
const char *launch_plan_value(const struct launch_plan *plan, const char *env_name);

#endif
