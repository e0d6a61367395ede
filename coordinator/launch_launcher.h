/* launch_launcher: what launch_args.c shares with the parsers of each launcher's own command
 * line (launch_hydra.c, launch_srun.c).  Internal to mana_launch_core. */
#ifndef MANA_LAUNCH_LAUNCHER_H
#define MANA_LAUNCH_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "launch_args.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum arity {
  TAKES_NONE,
  TAKES_ONE,
  TAKES_TWO,     /* Hydra -env/-genv NAME VALUE */
  TAKES_OPTIONAL /* srun: only an attached value counts */
};

/* Options that need more than skipping their value. */
enum role {
  ROLE_PLAIN,
  ROLE_WDIR,       /* working directory of the ranks: relative programs are found there */
  ROLE_CONFIGFILE, /* Hydra -configfile: the programs are in a file we do not rewrite */
  ROLE_MULTIPROG,  /* srun --multi-prog: same, for srun */
  ROLE_BCAST,      /* srun --bcast: would copy mana_lh to the nodes, not the program */
  ROLE_NPROCS,     /* number of processes of this segment (-n, --ntasks) */
  ROLE_HOSTS       /* names hosts or nodes: ranks may run elsewhere */
};

struct launcher_option {
  const char *name; /* without dashes */
  char short_name;  /* srun only */
  enum arity arity;
  enum role role;
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Parsing state for a launcher command line, and what the rewrite must know about it. */
struct parse_state {
  struct launch_plan *plan;
  int argc;
  char *const *argv;
  const char *launcher; /* basename, for messages */
  bool *drop;           /* drop[i]: leave argv[i] out of the command (Hydra "--") */
  int *app_at;          /* argv indices of the programs found */
  const char **app_wdir;
  size_t app_count;
  const char *wdir;            /* last working-directory option seen in this segment */
  const char *global_wdir;     /* Hydra: -wdir applies to all segments */
  unsigned long segment_ranks; /* -n of this segment, 0 if not given */
  unsigned long ranks;         /* sum over the segments so far */
  bool ranks_unknown;          /* some segment did not say */
};

/* plan->error = the message; returns LAUNCH_EXIT_USAGE. */
int launch_fail(struct launch_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends a line to plan->warnings (the first ones are kept when it is full). */
void launch_warn(struct launch_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A decimal number of at most max, digits only. */
bool launch_parse_bounded(const char *s, unsigned long max, unsigned long *out);

/* ":" (the next MPMD segment or het-job component). */
bool launcher_is_separator(const char *arg);
/* Records what an option means beyond its arity; non-zero (launch_fail) for an option mana
 * cannot wrap. */
int launcher_note_option(struct parse_state *st, const struct launcher_option *opt,
                         const char *value);
/* A program found at argv[index]. */
void launcher_record_app(struct parse_state *st, int index);
int launcher_restart_segment_end(struct parse_state *st, int i);
int launcher_skip_to_separator(struct parse_state *st, int i);

/* One Hydra MPMD segment (launch_hydra.c) or srun het-job component (launch_srun.c) starting
 * at argv[*i]; leaves *i on the ":" or at the end. */
int hydra_segment(struct parse_state *st, int *i, int segment);
int srun_segment(struct parse_state *st, int *i);

#endif
