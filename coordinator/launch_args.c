/* launch_args: parse mana_launch's command line into a launch plan (see launch_args.h).
 *
 * The hard part is finding the application inside a launcher's command line. That needs to
 * know, for every launcher option, how many of the following words it swallows. The tables
 * (launch_hydra.c, launch_srun.c) were taken from the launchers installed on Debian 12 (MPICH
 * 4.0.2 Hydra, Slurm 22.05), by probing each option, and their parsers mirror how each
 * launcher really reads its arguments.  This file holds mana's own options, which launcher a
 * program is, the MPMD segments, and the rewritten command.
 */
#include "launch_args.h"
#include "coord_layout.h"
#include "launch_launcher.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt_signal.h"
#include "mana/fail.h"

/* ------------------------------------------------------------------------------------- */
/* mana_launch's own options                                                             */
/* ------------------------------------------------------------------------------------- */

static const struct mana_option mana_options[] = {
    {"help", 'h', MANA_VALUE_NONE, MANA_ACTION_HELP, NULL, NULL, "print this help and exit"},
    {"version", 0, MANA_VALUE_NONE, MANA_ACTION_VERSION, NULL, NULL, "print the version and exit"},
    {"verbose", 'v', MANA_VALUE_NONE, MANA_ACTION_VERBOSE, NULL, NULL,
     "print the command that is run to standard error"},
    {"ckptdir", 0, MANA_VALUE_PATH, MANA_ACTION_EXPORT, "MANA_CKPTDIR", "DIR",
     "directory for the checkpoints (default ./" STORE_DEFAULT_DIR ")"},
    {"interval", 0, MANA_VALUE_SECONDS, MANA_ACTION_EXPORT, "MANA_INTERVAL", "SECONDS",
     "checkpoint every SECONDS seconds (0: never)"},
    {"coordinator", 0, MANA_VALUE_HOSTPORT, MANA_ACTION_EXPORT, "MANA_COORDINATOR", "HOST:PORT",
     "use this coordinator instead of starting one"},
    {"coordinator-host", 0, MANA_VALUE_HOST, MANA_ACTION_EXPORT, "MANA_COORDINATOR_HOST", "ADDR",
     "address the coordinator started here listens on; * for all (default: "
     "127.0.0.1 when every rank runs on this host, else all)"},
    {"forked-writers", 0, MANA_VALUE_NONE, MANA_ACTION_EXPORT, "MANA_FORKED_WRITERS", NULL,
     "ranks resume once drained; a forked process writes each image"},
    {"incremental", 0, MANA_VALUE_NONE, MANA_ACTION_EXPORT, "MANA_INCREMENTAL", NULL,
     "write each checkpoint against the last committed one (only what changed)"},
    {"full-every", 0, MANA_VALUE_POSITIVE, MANA_ACTION_EXPORT, "MANA_FULL_EVERY", "K",
     "with --incremental, every K-th checkpoint is a full one (default 8)"},
    {"keep", 0, MANA_VALUE_WHOLE, MANA_ACTION_EXPORT, "MANA_KEEP", "N",
     "remove checkpoints the N newest do not need (default 0: keep all)"},
    {"ckpt-signal", 0, MANA_VALUE_SIGNAL, MANA_ACTION_EXPORT, CKPT_SIGNAL_ENV, "SIG",
     "checkpoint when the job gets SIG (e.g. USR1 from sbatch --signal)"},
    {"ckpt-signal-action", 0, MANA_VALUE_SIGNAL_ACTION, MANA_ACTION_EXPORT, CKPT_SIGNAL_ACTION_ENV,
     "ACTION", "kill (default): then end the job, exit status 85; checkpoint: go on"},
    {"restart-from", 0, MANA_VALUE_PATH, MANA_ACTION_RESTART, NULL, "GENDIR",
     "restart every rank from GENDIR, no PROGRAM (mana_restart)"},
    {"expect-ranks", 0, MANA_VALUE_COUNT, MANA_ACTION_EXPECT_RANKS, NULL, "N",
     "the launcher must start N ranks (mana_restart)"},
};

#define MANA_OPTION_COUNT (sizeof(mana_options) / sizeof(mana_options[0]))

_Static_assert(MANA_OPTION_COUNT <= LAUNCH_MAX_ENV, "raise LAUNCH_MAX_ENV");

const char *launch_plan_value(const struct launch_plan *plan, const char *env_name)
{
  for (size_t i = 0; i < plan->env_count; i++)
    if (strcmp(plan->env[i].option->env_name, env_name) == 0)
      return plan->env[i].value;
  return NULL;
}

const struct mana_option *launch_options(size_t *count)
{
  *count = MANA_OPTION_COUNT;
  return mana_options;
}

int launch_fail(struct launch_plan *plan, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  mana_vfail(plan->error, sizeof(plan->error), 0, 0, fmt, ap);
  va_end(ap);
  return LAUNCH_EXIT_USAGE;
}

void launch_warn(struct launch_plan *plan, const char *fmt, ...)
{
  size_t used = strlen(plan->warnings);
  va_list ap;

  /* Notes past the buffer are dropped: the first ones are the useful ones. */
  if (used + 2 >= sizeof(plan->warnings))
    return;
  va_start(ap, fmt);
  vsnprintf(plan->warnings + used, sizeof(plan->warnings) - used - 1, fmt, ap);
  va_end(ap);
  strcat(plan->warnings, "\n");
}

static bool all_digits(const char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

/* Decimal number no larger than max; rejects signs, spaces and overflow. */
bool launch_parse_bounded(const char *s, unsigned long max, unsigned long *out)
{
  unsigned long v = 0;

  if (!all_digits(s))
    return false;
  for (; *s; s++) {
    unsigned digit = (unsigned)(*s - '0');

    if (v > (max - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

static bool valid_hostname(const char *host, size_t len)
{
  if (len == 0)
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)host[i];

    if (!isalnum(c) && c != '-' && c != '.' && c != '_')
      return false;
  }
  return true;
}

static bool valid_bracketed_ip6(const char *host, size_t len)
{
  /* "[" addr "]" with at least one ':' inside */
  if (len < 4 || host[0] != '[' || host[len - 1] != ']')
    return false;
  if (!memchr(host + 1, ':', len - 2))
    return false;
  for (size_t i = 1; i + 1 < len; i++) {
    unsigned char c = (unsigned char)host[i];

    if (!isxdigit(c) && c != ':' && c != '.')
      return false;
  }
  return true;
}

static bool valid_hostport(const char *value, const char **why)
{
  const char *colon = strrchr(value, ':');
  unsigned long port;
  size_t hostlen;

  if (!colon) {
    *why = "expected HOST:PORT";
    return false;
  }
  if (!launch_parse_bounded(colon + 1, 65535, &port) || port == 0) {
    *why = "the port must be a number from 1 to 65535";
    return false;
  }
  hostlen = (size_t)(colon - value);
  if (value[0] == '[') {
    *why = "expected [IPv6-ADDRESS]:PORT";
    return valid_bracketed_ip6(value, hostlen);
  }
  if (memchr(value, ':', hostlen)) {
    *why = "write an IPv6 address in brackets, e.g. [::1]:7779";
    return false;
  }
  *why = "expected HOST:PORT with a host name or address";
  return valid_hostname(value, hostlen);
}

/* Checks a value of the given kind; on failure *why says what was expected. */
static bool valid_value(enum mana_value_kind kind, const char *value, const char **why)
{
  unsigned long seconds;

  switch (kind) {
  case MANA_VALUE_NONE:
    return true;
  case MANA_VALUE_PATH:
    *why = "expected a directory path";
    return value[0] != '\0';
  case MANA_VALUE_SECONDS:
    *why = "expected a whole number of seconds";
    return launch_parse_bounded(value, UINT32_MAX, &seconds);
  case MANA_VALUE_WHOLE:
    *why = "expected a whole number";
    return launch_parse_bounded(value, LAUNCH_NUMBER_MAX, &seconds);
  case MANA_VALUE_POSITIVE:
    *why = "expected a whole number of at least 1";
    return launch_parse_bounded(value, LAUNCH_NUMBER_MAX, &seconds) && seconds > 0;
  case MANA_VALUE_HOSTPORT:
    return valid_hostport(value, why);
  case MANA_VALUE_HOST:
    *why = "expected a host name or address, or *";
    return strcmp(value, "*") == 0 || valid_hostname(value, strlen(value));
  case MANA_VALUE_COUNT:
    *why = "expected a number of ranks";
    return launch_parse_bounded(value, 1ul << 24, &seconds) && seconds > 0;
  case MANA_VALUE_SIGNAL: {
    int signo;
    return ckpt_signal_parse(value, &signo, why) == 0;
  }
  case MANA_VALUE_SIGNAL_ACTION: {
    enum ckpt_signal_action action;
    *why = "expected kill or checkpoint";
    return ckpt_signal_action_parse(value, &action) == 0;
  }
  }
  *why = "unsupported option kind";
  return false;
}

static const struct mana_option *mana_option_by_long(const char *name, size_t len)
{
  for (size_t i = 0; i < MANA_OPTION_COUNT; i++) {
    const char *candidate = mana_options[i].long_name;

    if (strlen(candidate) == len && memcmp(candidate, name, len) == 0)
      return &mana_options[i];
  }
  return NULL;
}

static const struct mana_option *mana_option_by_short(char c)
{
  for (size_t i = 0; i < MANA_OPTION_COUNT; i++)
    if (mana_options[i].short_name && mana_options[i].short_name == c)
      return &mana_options[i];
  return NULL;
}

static void set_env(struct launch_plan *plan, const struct mana_option *opt, const char *value)
{
  /* A repeated option overrides the earlier one, as users expect from "cmd -x a -x b". */
  for (size_t i = 0; i < plan->env_count; i++) {
    if (plan->env[i].option == opt) {
      plan->env[i].value = value;
      return;
    }
  }
  plan->env[plan->env_count].option = opt;
  plan->env[plan->env_count].value = value;
  plan->env_count++;
}

static int apply_option(struct launch_plan *plan, const struct mana_option *opt, const char *value)
{
  const char *why = "";

  if (opt->value_kind != MANA_VALUE_NONE && !valid_value(opt->value_kind, value, &why))
    return launch_fail(plan, "invalid value '%s' for --%s: %s", value, opt->long_name, why);

  switch (opt->action) {
  case MANA_ACTION_HELP:
    plan->help = true;
    break;
  case MANA_ACTION_VERSION:
    plan->version = true;
    break;
  case MANA_ACTION_VERBOSE:
    plan->verbose = true;
    break;
  case MANA_ACTION_EXPORT:
    set_env(plan, opt, value ? value : "1"); /* a flag */
    break;
  case MANA_ACTION_RESTART:
    plan->restart_from = value;
    break;
  case MANA_ACTION_EXPECT_RANKS:
    launch_parse_bounded(value, 1ul << 24, &plan->expect_ranks);
    break;
  }
  return 0;
}

/* "--name", "--name=value" or "--name value". Advances *i past what it used. */
static int parse_long_option(struct launch_plan *plan, int argc, char *const argv[], int *i)
{
  const char *name = argv[*i] + 2;
  const char *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const struct mana_option *opt = mana_option_by_long(name, len);
  const char *value = NULL;

  if (!opt)
    return launch_fail(plan, "unknown option '--%.*s' (see mana_launch --help)", (int)len, name);
  if (opt->value_kind == MANA_VALUE_NONE) {
    if (eq)
      return launch_fail(plan, "option '--%s' takes no value", opt->long_name);
    (*i)++;
    return apply_option(plan, opt, NULL);
  }
  if (eq) {
    value = eq + 1;
    (*i)++;
  } else if (*i + 1 < argc) {
    value = argv[*i + 1];
    *i += 2;
  } else {
    return launch_fail(plan, "option '--%s' needs a value (see mana_launch --help)",
                       opt->long_name);
  }
  return apply_option(plan, opt, value);
}

/* "-v", "-vh" (flags cluster), "-xVALUE" or "-x VALUE". Advances *i past what it used. */
static int parse_short_options(struct launch_plan *plan, int argc, char *const argv[], int *i)
{
  const char *arg = argv[*i];

  for (size_t j = 1; arg[j]; j++) {
    const struct mana_option *opt = mana_option_by_short(arg[j]);
    int rc;

    if (!opt)
      return launch_fail(plan, "unknown option '-%c' (see mana_launch --help)", arg[j]);
    if (opt->value_kind == MANA_VALUE_NONE) {
      rc = apply_option(plan, opt, NULL);
      if (rc)
        return rc;
      continue;
    }
    if (arg[j + 1]) {
      (*i)++;
      return apply_option(plan, opt, arg + j + 1);
    }
    if (*i + 1 >= argc)
      return launch_fail(plan, "option '-%c' needs a value (see mana_launch --help)", arg[j]);
    *i += 2;
    return apply_option(plan, opt, argv[*i - 1]);
  }
  (*i)++;
  return 0;
}

/* Parses mana's options from argv[1]; on success *first is the first word after them.
 * Stops at the first non-option so nothing of the launcher's or the app's is touched. */
static int parse_mana_options(struct launch_plan *plan, int argc, char *const argv[], int *first)
{
  int i = 1;

  while (i < argc) {
    const char *arg = argv[i];
    int rc;

    if (strcmp(arg, "--") == 0) {
      i++;
      break;
    }
    if (arg[0] != '-' || arg[1] == '\0')
      break;
    if (arg[1] == '-')
      rc = parse_long_option(plan, argc, argv, &i);
    else
      rc = parse_short_options(plan, argc, argv, &i);
    if (rc)
      return rc;
  }
  *first = i;
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Launchers                                                                             */
/* ------------------------------------------------------------------------------------- */

/* Launcher program names recognised without MANA_LAUNCHERS. */
static const struct {
  const char *name;
  enum launcher_style style;
} known_launchers[] = {
    {"mpirun", LAUNCHER_STYLE_HYDRA},        {"mpiexec", LAUNCHER_STYLE_HYDRA},
    {"mpiexec.hydra", LAUNCHER_STYLE_HYDRA}, {"mpirun.mpich", LAUNCHER_STYLE_HYDRA},
    {"mpiexec.mpich", LAUNCHER_STYLE_HYDRA}, {"srun", LAUNCHER_STYLE_SRUN},
};

static const char *base_name(const char *path)
{
  const char *slash = strrchr(path, '/');

  return slash ? slash + 1 : path;
}

static bool style_from_name(const char *name, size_t len, enum launcher_style *style)
{
  if (len == 5 && memcmp(name, "hydra", 5) == 0) {
    *style = LAUNCHER_STYLE_HYDRA;
    return true;
  }
  if (len == 4 && memcmp(name, "srun", 4) == 0) {
    *style = LAUNCHER_STYLE_SRUN;
    return true;
  }
  return false;
}

/* Looks for base in MANA_LAUNCHERS ("name[=hydra|srun]" entries separated by ':').
 * A name without a style is parsed like Hydra, the MPI this project targets. */
static bool match_extra_launchers(const char *base, const char *extra, enum launcher_style *style,
                                  char *err, size_t errlen)
{
  const char *entry = extra;

  while (*entry) {
    size_t len = strcspn(entry, ":");
    const char *eq = memchr(entry, '=', len);
    size_t name_len = eq ? (size_t)(eq - entry) : len;
    enum launcher_style entry_style = LAUNCHER_STYLE_HYDRA;

    if (eq && !style_from_name(eq + 1, len - name_len - 1, &entry_style)) {
      mana_fail(err, errlen, 0,
                "MANA_LAUNCHERS entry '%.*s': the style after '=' must be "
                "'hydra' or 'srun'",
                (int)len, entry);
      return false;
    }
    if (name_len > 0 && strlen(base) == name_len && memcmp(base, entry, name_len) == 0) {
      *style = entry_style;
      return true;
    }
    entry += len;
    if (*entry == ':')
      entry++;
  }
  return true;
}

bool launch_style_for(const char *program, const char *extra_launchers, enum launcher_style *style,
                      char *err, size_t errlen)
{
  const char *base = base_name(program);

  *style = LAUNCHER_STYLE_NONE;
  for (size_t i = 0; i < COUNT(known_launchers); i++) {
    if (strcmp(base, known_launchers[i].name) == 0) {
      *style = known_launchers[i].style;
      return true;
    }
  }
  if (!extra_launchers)
    return true;
  return match_extra_launchers(base, extra_launchers, style, err, errlen);
}

bool launcher_is_separator(const char *arg)
{
  return strcmp(arg, ":") == 0;
}

static int refuse(struct parse_state *st, enum role role)
{
  switch (role) {
  case ROLE_CONFIGFILE:
    return launch_fail(st->plan,
                       "%s -configfile cannot be wrapped because the programs are in the "
                       "file; use '%s -n N mana_launch ./app' instead, or put "
                       "'mana_launch' before each program in the file",
                       st->launcher, st->launcher);
  case ROLE_MULTIPROG:
    return launch_fail(st->plan,
                       "%s --multi-prog cannot be wrapped because the programs are in the "
                       "file; put 'mana_launch' before each program in the file instead "
                       "(e.g. '0-3 mana_launch ./app'), and run '%s --multi-prog FILE'",
                       st->launcher, st->launcher);
  case ROLE_BCAST:
    return launch_fail(st->plan,
                       "%s --bcast would copy mana_lh to the nodes instead of the "
                       "program; copy the program with sbcast first and drop --bcast",
                       st->launcher);
  default:
    return 0;
  }
}

/* Records what an option means beyond its arity. */
int launcher_note_option(struct parse_state *st, const struct launcher_option *opt,
                         const char *value)
{
  if (!opt)
    return 0;
  if (opt->role == ROLE_WDIR) {
    st->wdir = value;
    return 0;
  }
  if (opt->role == ROLE_HOSTS) {
    st->plan->names_hosts = true;
    return 0;
  }
  if (opt->role == ROLE_NPROCS) {
    /* the launcher itself rejects a bad count; here it only means "unknown" */
    if (!value || !launch_parse_bounded(value, 1ul << 24, &st->segment_ranks))
      st->segment_ranks = 0;
    return 0;
  }
  return refuse(st, opt->role);
}

void launcher_record_app(struct parse_state *st, int index)
{
  st->app_at[st->app_count] = index;
  st->app_wdir[st->app_count] = st->wdir;
  st->app_count++;
}

/* A restart's segment holds launcher options only: mana_lh --restart goes where it ends
 * (recorded like a program, at the index of the ":" or of the end). */
int launcher_restart_segment_end(struct parse_state *st, int i)
{
  if (i < st->argc && !launcher_is_separator(st->argv[i]))
    return launch_fail(st->plan,
                       "'%s': a restart runs the checkpointed program; give only "
                       "the launcher and its options",
                       st->argv[i]);
  launcher_record_app(st, i);
  return 0;
}

/* Skips the program's own arguments: everything up to the next ":" belongs to it. */
int launcher_skip_to_separator(struct parse_state *st, int i)
{
  while (i < st->argc && !launcher_is_separator(st->argv[i]))
    i++;
  return i;
}

/* Adds the segment's rank count to the total (unknown if it gave none). */
static void count_segment(struct parse_state *st)
{
  if (st->segment_ranks == 0)
    st->ranks_unknown = true;
  st->ranks += st->segment_ranks;
  st->segment_ranks = 0;
}

static int parse_launcher_args(struct parse_state *st, int first_arg)
{
  int i = first_arg;
  int segment = 1;

  for (;;) {
    int rc = st->plan->style == LAUNCHER_STYLE_SRUN ? srun_segment(st, &i)
                                                    : hydra_segment(st, &i, segment);

    if (rc)
      return rc;
    count_segment(st);
    if (i >= st->argc)
      break;
    i++; /* past ":" */
    segment++;
  }
  if (st->app_count == 0 && !st->plan->restart_from)
    return launch_fail(st->plan, "no program found in the %s command line", st->launcher);

  st->plan->ranks = st->ranks_unknown ? 0 : st->ranks;

  /* Hydra's -wdir is global whichever segment it appears in. */
  if (st->plan->style == LAUNCHER_STYLE_HYDRA)
    for (size_t k = 0; k < st->app_count; k++)
      st->app_wdir[k] = st->global_wdir;
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Building the command                                                                  */
/* ------------------------------------------------------------------------------------- */

/* argv[from..argc) with lh_path before each program and dropped words left out. */
static int build_command(struct parse_state *st, int from, const char *lh_path)
{
  struct launch_plan *plan = st->plan;
  size_t cap = (size_t)(st->argc - from) + st->app_count + 1;
  size_t next_app = 0;
  int out = 0;

  plan->argv = calloc(cap, sizeof(*plan->argv));
  plan->apps = calloc(st->app_count, sizeof(*plan->apps));
  if (!plan->argv || !plan->apps)
    return launch_fail(plan, "out of memory");

  for (int i = from; i < st->argc; i++) {
    if (st->drop[i])
      continue;
    if (next_app < st->app_count && st->app_at[next_app] == i) {
      plan->argv[out++] = (char *)lh_path;
      plan->apps[next_app].argv_index = out;
      plan->apps[next_app].wdir = st->app_wdir[next_app];
      next_app++;
    }
    plan->argv[out++] = st->argv[i];
  }
  plan->argv[out] = NULL;
  plan->argc = out;
  plan->app_count = st->app_count;
  return 0;
}

/* A restart: the launcher's words with "lh_path --restart DIR" at the end of every
 * segment (the indices recorded in app_at); no program to check. */
static int build_restart_command(struct parse_state *st, int from, const char *lh_path)
{
  struct launch_plan *plan = st->plan;
  size_t cap = (size_t)(st->argc - from) + 3 * (st->app_count + 1) + 1;
  size_t next = 0;
  int out = 0;

  plan->argv = calloc(cap, sizeof(*plan->argv));
  if (!plan->argv)
    return launch_fail(plan, "out of memory");
  for (int i = from; i <= st->argc; i++) {
    if (next < st->app_count && st->app_at[next] == i) {
      plan->argv[out++] = (char *)lh_path;
      plan->argv[out++] = "--restart";
      plan->argv[out++] = (char *)plan->restart_from;
      next++;
    }
    if (i < st->argc && !st->drop[i])
      plan->argv[out++] = st->argv[i];
  }
  plan->argv[out] = NULL;
  plan->argc = out;
  return 0;
}

static int check_expected_ranks(struct launch_plan *plan)
{
  if (!plan->expect_ranks || !plan->ranks || plan->ranks == plan->expect_ranks)
    return 0;
  launch_fail(plan,
              "the checkpoint has %lu ranks but the launcher would start %lu: start it "
              "with -n %lu",
              plan->expect_ranks, plan->ranks, plan->expect_ranks);
  return LAUNCH_EXIT_MISMATCH;
}

static int parse_command(struct parse_state *st, int first, const char *lh_path)
{
  struct launch_plan *plan = st->plan;
  int rc;

  if (plan->restart_from && plan->form == LAUNCH_FORM_PER_RANK)
    return launch_fail(plan,
                       "'%s': with --restart-from, give a launcher or nothing, not a "
                       "program",
                       st->argv[first]);
  if (plan->restart_from) {
    rc = parse_launcher_args(st, first + 1);
    if (!rc)
      rc = check_expected_ranks(plan);
    return rc ? rc : build_restart_command(st, first, lh_path);
  }
  if (plan->form == LAUNCH_FORM_PER_RANK) {
    /* APP is the first word, so inserting mana_lh before it makes the absolute
     * mana_lh path argv[0]: "ps" then shows what really runs. */
    launcher_record_app(st, first);
    return build_command(st, first, lh_path);
  }
  rc = parse_launcher_args(st, first + 1);
  if (!rc)
    rc = check_expected_ranks(plan);
  if (rc)
    return rc;
  return build_command(st, first, lh_path);
}

/* "mana_launch --restart-from DIR" alone: this process is one rank of the restart. */
static int restart_this_rank(struct launch_plan *plan, const char *lh_path)
{
  plan->form = LAUNCH_FORM_PER_RANK;
  plan->argv = calloc(4, sizeof(*plan->argv));
  if (!plan->argv)
    return launch_fail(plan, "out of memory");
  plan->argv[0] = (char *)lh_path;
  plan->argv[1] = "--restart";
  plan->argv[2] = (char *)plan->restart_from;
  plan->argc = 3;
  return 0;
}

int launch_args_parse(int argc, char *const argv[], const char *lh_path,
                      const char *extra_launchers, struct launch_plan *plan)
{
  struct parse_state st = {.plan = plan, .argc = argc, .argv = argv};
  int first = argc;
  int rc;

  memset(plan, 0, sizeof(*plan));
  rc = parse_mana_options(plan, argc, argv, &first);
  if (rc)
    return rc;
  if (plan->help || plan->version)
    return 0;
  if (first >= argc && plan->restart_from)
    return restart_this_rank(plan, lh_path);
  if (first >= argc)
    return launch_fail(plan, "missing program to run (see mana_launch --help)");

  if (!launch_style_for(argv[first], extra_launchers, &plan->style, plan->error,
                        sizeof(plan->error)))
    return LAUNCH_EXIT_USAGE;
  plan->form =
      plan->style == LAUNCHER_STYLE_NONE ? LAUNCH_FORM_PER_RANK : LAUNCH_FORM_WRAP_LAUNCHER;
  st.launcher = base_name(argv[first]);

  /* Every word could at most be one program. */
  st.drop = calloc((size_t)argc, sizeof(*st.drop));
  st.app_at = calloc((size_t)argc, sizeof(*st.app_at));
  st.app_wdir = calloc((size_t)argc, sizeof(*st.app_wdir));
  if (!st.drop || !st.app_at || !st.app_wdir)
    rc = launch_fail(plan, "out of memory");
  else
    rc = parse_command(&st, first, lh_path);

  free(st.drop);
  free(st.app_at);
  free(st.app_wdir);
  return rc;
}

void launch_plan_free(struct launch_plan *plan)
{
  free(plan->argv);
  free(plan->apps);
  plan->argv = NULL;
  plan->apps = NULL;
  plan->argc = 0;
  plan->app_count = 0;
}
