/* launch_args: parse mana_launch's command line into a launch plan (see launch_args.h).
 *
 * The hard part is finding the application inside a launcher's command line. That needs to
 * know, for every launcher option, how many of the following words it swallows. The tables
 * below were taken from the launchers installed on Debian 12 (MPICH 4.0.2 Hydra, Slurm
 * 22.05), by probing each option, and the parsing rules mirror how each launcher really
 * reads its arguments:
 *
 *  Hydra: any number of leading dashes ("-n", "--n"), "-opt=value" splits at '=', options
 *         are matched exactly, no "-n4", the first word not starting with '-' is the program,
 *         and a bare ":" starts the next MPMD segment.
 *  srun:  getopt_long with '+' (stop at the first non-option): short options cluster and
 *         take an attached value ("-n4", "-ln4"), long options take "--opt=value" or
 *         "--opt value", long names may be abbreviated to a unique prefix, and an *optional*
 *         value must be attached ("-I5", "--exclusive=user"): "--exclusive user" runs a
 *         program called "user". "--" ends options; a bare ":" starts the next het component.
 */
#include "launch_args.h"
#include "coord_layout.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int fail(struct launch_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct launch_plan *plan, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(plan->error, sizeof(plan->error), fmt, ap);
  va_end(ap);
  return LAUNCH_EXIT_USAGE;
}

static void warn(struct launch_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct launch_plan *plan, const char *fmt, ...)
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
static bool parse_bounded(const char *s, unsigned long max, unsigned long *out)
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
  if (!parse_bounded(colon + 1, 65535, &port) || port == 0) {
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
    return parse_bounded(value, UINT32_MAX, &seconds);
  case MANA_VALUE_HOSTPORT:
    return valid_hostport(value, why);
  case MANA_VALUE_HOST:
    *why = "expected a host name or address, or *";
    return strcmp(value, "*") == 0 || valid_hostname(value, strlen(value));
  case MANA_VALUE_COUNT:
    *why = "expected a number of ranks";
    return parse_bounded(value, 1ul << 24, &seconds) && seconds > 0;
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
    return fail(plan, "invalid value '%s' for --%s: %s", value, opt->long_name, why);

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
    set_env(plan, opt, value);
    break;
  case MANA_ACTION_RESTART:
    plan->restart_from = value;
    break;
  case MANA_ACTION_EXPECT_RANKS:
    parse_bounded(value, 1ul << 24, &plan->expect_ranks);
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
    return fail(plan, "unknown option '--%.*s' (see mana_launch --help)", (int)len, name);
  if (opt->value_kind == MANA_VALUE_NONE) {
    if (eq)
      return fail(plan, "option '--%s' takes no value", opt->long_name);
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
    return fail(plan, "option '--%s' needs a value (see mana_launch --help)", opt->long_name);
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
      return fail(plan, "unknown option '-%c' (see mana_launch --help)", arg[j]);
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
      return fail(plan, "option '-%c' needs a value (see mana_launch --help)", arg[j]);
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

/* MPICH 4.0.2 Hydra (mpiexec.hydra), as accepted by its argument matcher. */
static const struct launcher_option hydra_options[] = {
    {"genv", 0, TAKES_TWO, ROLE_PLAIN},
    {"genvlist", 0, TAKES_ONE, ROLE_PLAIN},
    {"genvnone", 0, TAKES_NONE, ROLE_PLAIN},
    {"genvall", 0, TAKES_NONE, ROLE_PLAIN},
    {"f", 0, TAKES_ONE, ROLE_HOSTS},
    {"hostfile", 0, TAKES_ONE, ROLE_HOSTS},
    {"machinefile", 0, TAKES_ONE, ROLE_HOSTS},
    {"machine", 0, TAKES_ONE, ROLE_HOSTS},
    {"machines", 0, TAKES_ONE, ROLE_HOSTS},
    {"machinelist", 0, TAKES_ONE, ROLE_HOSTS},
    {"hosts", 0, TAKES_ONE, ROLE_HOSTS},
    {"host", 0, TAKES_ONE, ROLE_HOSTS},
    {"hostlist", 0, TAKES_ONE, ROLE_HOSTS},
    {"ppn", 0, TAKES_ONE, ROLE_PLAIN},
    {"profile", 0, TAKES_NONE, ROLE_PLAIN},
    {"output-from", 0, TAKES_ONE, ROLE_PLAIN},
    {"prepend-rank", 0, TAKES_NONE, ROLE_PLAIN},
    {"l", 0, TAKES_NONE, ROLE_PLAIN},
    {"prepend-pattern", 0, TAKES_ONE, ROLE_PLAIN},
    {"outfile-pattern", 0, TAKES_ONE, ROLE_PLAIN},
    {"errfile-pattern", 0, TAKES_ONE, ROLE_PLAIN},
    {"outfile", 0, TAKES_ONE, ROLE_PLAIN},
    {"errfile", 0, TAKES_ONE, ROLE_PLAIN},
    {"wdir", 0, TAKES_ONE, ROLE_WDIR},
    {"configfile", 0, TAKES_ONE, ROLE_CONFIGFILE},
    {"env", 0, TAKES_TWO, ROLE_PLAIN},
    {"envlist", 0, TAKES_ONE, ROLE_PLAIN},
    {"envnone", 0, TAKES_NONE, ROLE_PLAIN},
    {"envall", 0, TAKES_NONE, ROLE_PLAIN},
    {"n", 0, TAKES_ONE, ROLE_NPROCS},
    {"np", 0, TAKES_ONE, ROLE_NPROCS},
    {"launcher", 0, TAKES_ONE, ROLE_PLAIN},
    {"launcher-exec", 0, TAKES_ONE, ROLE_PLAIN},
    {"bootstrap", 0, TAKES_ONE, ROLE_PLAIN},
    {"bootstrap-exec", 0, TAKES_ONE, ROLE_PLAIN},
    {"enable-x", 0, TAKES_NONE, ROLE_PLAIN},
    {"disable-x", 0, TAKES_NONE, ROLE_PLAIN},
    {"rmk", 0, TAKES_ONE, ROLE_PLAIN},
    {"topolib", 0, TAKES_ONE, ROLE_PLAIN},
    {"bind-to", 0, TAKES_ONE, ROLE_PLAIN},
    {"binding", 0, TAKES_ONE, ROLE_PLAIN},
    {"map-by", 0, TAKES_ONE, ROLE_PLAIN},
    {"membind", 0, TAKES_ONE, ROLE_PLAIN},
    {"demux", 0, TAKES_ONE, ROLE_PLAIN},
    {"verbose", 0, TAKES_NONE, ROLE_PLAIN},
    {"v", 0, TAKES_NONE, ROLE_PLAIN},
    {"debug", 0, TAKES_NONE, ROLE_PLAIN},
    {"info", 0, TAKES_NONE, ROLE_PLAIN},
    {"version", 0, TAKES_NONE, ROLE_PLAIN},
    {"print-all-exitcodes", 0, TAKES_NONE, ROLE_PLAIN},
    {"iface", 0, TAKES_ONE, ROLE_PLAIN},
    {"nameserver", 0, TAKES_ONE, ROLE_PLAIN},
    {"disable-auto-cleanup", 0, TAKES_NONE, ROLE_PLAIN},
    {"dac", 0, TAKES_NONE, ROLE_PLAIN},
    {"enable-auto-cleanup", 0, TAKES_NONE, ROLE_PLAIN},
    {"disable-hostname-propagation", 0, TAKES_NONE, ROLE_PLAIN},
    {"enable-hostname-propagation", 0, TAKES_NONE, ROLE_PLAIN},
    {"order-nodes", 0, TAKES_ONE, ROLE_PLAIN},
    {"localhost", 0, TAKES_ONE, ROLE_PLAIN},
    {"usize", 0, TAKES_ONE, ROLE_PLAIN},
    {"pmi-port", 0, TAKES_NONE, ROLE_PLAIN},
    {"skip-launch-node", 0, TAKES_NONE, ROLE_PLAIN},
    {"gpus-per-proc", 0, TAKES_ONE, ROLE_PLAIN},
    {"h", 0, TAKES_NONE, ROLE_PLAIN},
    {"help", 0, TAKES_NONE, ROLE_PLAIN},
};

/* Slurm 22.05 srun, as handed to getopt_long (short option string
 * "+A:b:D:M:C:S:c:d:Xm:e:x:B:G:hHI::i:J:K::lL:T:Zk::F:w:N:n:o:Osp:Eq:Qr:t:uvVW:"). */
static const struct launcher_option srun_options[] = {
    {"accel-bind", 0, TAKES_ONE, ROLE_PLAIN},
    {"account", 'A', TAKES_ONE, ROLE_PLAIN},
    {"acctg-freq", 0, TAKES_ONE, ROLE_PLAIN},
    {"bcast", 0, TAKES_OPTIONAL, ROLE_BCAST},
    {"bcast-exclude", 0, TAKES_ONE, ROLE_PLAIN},
    {"begin", 'b', TAKES_ONE, ROLE_PLAIN},
    {"bb", 0, TAKES_ONE, ROLE_PLAIN},
    {"bbf", 0, TAKES_ONE, ROLE_PLAIN},
    {"cluster-constraint", 0, TAKES_ONE, ROLE_PLAIN},
    {"chdir", 'D', TAKES_ONE, ROLE_WDIR},
    {"cluster", 0, TAKES_ONE, ROLE_PLAIN},
    {"clusters", 'M', TAKES_ONE, ROLE_PLAIN},
    {"comment", 0, TAKES_ONE, ROLE_PLAIN},
    {"compress", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"container", 0, TAKES_ONE, ROLE_PLAIN},
    {"context", 0, TAKES_ONE, ROLE_PLAIN},
    {"contiguous", 0, TAKES_NONE, ROLE_PLAIN},
    {"constraint", 'C', TAKES_ONE, ROLE_PLAIN},
    {"core-spec", 'S', TAKES_ONE, ROLE_PLAIN},
    {"cores-per-socket", 0, TAKES_ONE, ROLE_PLAIN},
    {"cpu-bind", 0, TAKES_ONE, ROLE_PLAIN},
    {"cpu_bind", 0, TAKES_ONE, ROLE_PLAIN},
    {"cpu-freq", 0, TAKES_ONE, ROLE_PLAIN},
    {"cpus-per-gpu", 0, TAKES_ONE, ROLE_PLAIN},
    {"cpus-per-task", 'c', TAKES_ONE, ROLE_PLAIN},
    {"deadline", 0, TAKES_ONE, ROLE_PLAIN},
    {"debugger-test", 0, TAKES_NONE, ROLE_PLAIN},
    {"delay-boot", 0, TAKES_ONE, ROLE_PLAIN},
    {"dependency", 'd', TAKES_ONE, ROLE_PLAIN},
    {"disable-status", 'X', TAKES_NONE, ROLE_PLAIN},
    {"distribution", 'm', TAKES_ONE, ROLE_PLAIN},
    {"epilog", 0, TAKES_ONE, ROLE_PLAIN},
    {"error", 'e', TAKES_ONE, ROLE_PLAIN},
    {"exact", 0, TAKES_NONE, ROLE_PLAIN},
    {"exclude", 'x', TAKES_ONE, ROLE_PLAIN},
    {"exclusive", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"export", 0, TAKES_ONE, ROLE_PLAIN},
    {"extra-node-info", 'B', TAKES_ONE, ROLE_PLAIN},
    {"gid", 0, TAKES_ONE, ROLE_PLAIN},
    {"gpu-bind", 0, TAKES_ONE, ROLE_PLAIN},
    {"gpu-freq", 0, TAKES_ONE, ROLE_PLAIN},
    {"gpus", 'G', TAKES_ONE, ROLE_PLAIN},
    {"gpus-per-node", 0, TAKES_ONE, ROLE_PLAIN},
    {"gpus-per-socket", 0, TAKES_ONE, ROLE_PLAIN},
    {"gpus-per-task", 0, TAKES_ONE, ROLE_PLAIN},
    {"gres", 0, TAKES_ONE, ROLE_PLAIN},
    {"gres-flags", 0, TAKES_ONE, ROLE_PLAIN},
    {"help", 'h', TAKES_NONE, ROLE_PLAIN},
    {"het-group", 0, TAKES_ONE, ROLE_PLAIN},
    {"hint", 0, TAKES_ONE, ROLE_PLAIN},
    {"hold", 'H', TAKES_NONE, ROLE_PLAIN},
    {"immediate", 'I', TAKES_OPTIONAL, ROLE_PLAIN},
    {"input", 'i', TAKES_ONE, ROLE_PLAIN},
    {"interactive", 0, TAKES_NONE, ROLE_PLAIN},
    {"jobid", 0, TAKES_ONE, ROLE_PLAIN},
    {"job-name", 'J', TAKES_ONE, ROLE_PLAIN},
    {"kill-on-bad-exit", 'K', TAKES_OPTIONAL, ROLE_PLAIN},
    {"label", 'l', TAKES_NONE, ROLE_PLAIN},
    {"licenses", 'L', TAKES_ONE, ROLE_PLAIN},
    {"mail-type", 0, TAKES_ONE, ROLE_PLAIN},
    {"mail-user", 0, TAKES_ONE, ROLE_PLAIN},
    {"threads", 'T', TAKES_ONE, ROLE_PLAIN},
    {"mcs-label", 0, TAKES_ONE, ROLE_PLAIN},
    {"mem", 0, TAKES_ONE, ROLE_PLAIN},
    {"mem-bind", 0, TAKES_ONE, ROLE_PLAIN},
    {"mem-per-cpu", 0, TAKES_ONE, ROLE_PLAIN},
    {"mem-per-gpu", 0, TAKES_ONE, ROLE_PLAIN},
    {"mincpus", 0, TAKES_ONE, ROLE_PLAIN},
    {"mpi", 0, TAKES_ONE, ROLE_PLAIN},
    {"msg-timeout", 0, TAKES_ONE, ROLE_PLAIN},
    {"multi-prog", 0, TAKES_NONE, ROLE_MULTIPROG},
    {"network", 0, TAKES_ONE, ROLE_PLAIN},
    {"nice", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"no-allocate", 'Z', TAKES_NONE, ROLE_PLAIN},
    {"no-kill", 'k', TAKES_OPTIONAL, ROLE_PLAIN},
    {"nodefile", 'F', TAKES_ONE, ROLE_PLAIN},
    {"nodelist", 'w', TAKES_ONE, ROLE_HOSTS},
    {"nodes", 'N', TAKES_ONE, ROLE_HOSTS},
    {"ntasks", 'n', TAKES_ONE, ROLE_NPROCS},
    {"ntasks-per-core", 0, TAKES_ONE, ROLE_PLAIN},
    {"ntasks-per-gpu", 0, TAKES_ONE, ROLE_PLAIN},
    {"ntasks-per-node", 0, TAKES_ONE, ROLE_PLAIN},
    {"ntasks-per-socket", 0, TAKES_ONE, ROLE_PLAIN},
    {"ntasks-per-tres", 0, TAKES_ONE, ROLE_PLAIN},
    {"open-mode", 0, TAKES_ONE, ROLE_PLAIN},
    {"output", 'o', TAKES_ONE, ROLE_PLAIN},
    {"overcommit", 'O', TAKES_NONE, ROLE_PLAIN},
    {"overlap", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"oversubscribe", 's', TAKES_NONE, ROLE_PLAIN},
    {"pack-group", 0, TAKES_ONE, ROLE_PLAIN},
    {"partition", 'p', TAKES_ONE, ROLE_PLAIN},
    {"power", 0, TAKES_ONE, ROLE_PLAIN},
    {"prefer", 0, TAKES_ONE, ROLE_PLAIN},
    {"preserve-env", 'E', TAKES_NONE, ROLE_PLAIN},
    {"priority", 0, TAKES_ONE, ROLE_PLAIN},
    {"profile", 0, TAKES_ONE, ROLE_PLAIN},
    {"prolog", 0, TAKES_ONE, ROLE_PLAIN},
    {"propagate", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"pty", 0, TAKES_NONE, ROLE_PLAIN},
    {"qos", 'q', TAKES_ONE, ROLE_PLAIN},
    {"quiet", 'Q', TAKES_NONE, ROLE_PLAIN},
    {"quit-on-interrupt", 0, TAKES_NONE, ROLE_PLAIN},
    {"reboot", 0, TAKES_NONE, ROLE_PLAIN},
    {"relative", 'r', TAKES_ONE, ROLE_PLAIN},
    {"reservation", 0, TAKES_ONE, ROLE_PLAIN},
    {"resv-ports", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"send-libs", 0, TAKES_OPTIONAL, ROLE_PLAIN},
    {"signal", 0, TAKES_ONE, ROLE_PLAIN},
    {"slurmd-debug", 0, TAKES_ONE, ROLE_PLAIN},
    {"sockets-per-node", 0, TAKES_ONE, ROLE_PLAIN},
    {"spread-job", 0, TAKES_NONE, ROLE_PLAIN},
    {"switches", 0, TAKES_ONE, ROLE_PLAIN},
    {"task-epilog", 0, TAKES_ONE, ROLE_PLAIN},
    {"task-prolog", 0, TAKES_ONE, ROLE_PLAIN},
    {"tasks-per-node", 0, TAKES_ONE, ROLE_PLAIN},
    {"test-only", 0, TAKES_NONE, ROLE_PLAIN},
    {"thread-spec", 0, TAKES_ONE, ROLE_PLAIN},
    {"threads-per-core", 0, TAKES_ONE, ROLE_PLAIN},
    {"time", 't', TAKES_ONE, ROLE_PLAIN},
    {"time-min", 0, TAKES_ONE, ROLE_PLAIN},
    {"tmp", 0, TAKES_ONE, ROLE_PLAIN},
    {"uid", 0, TAKES_ONE, ROLE_PLAIN},
    {"unbuffered", 'u', TAKES_NONE, ROLE_PLAIN},
    {"use-min-nodes", 0, TAKES_NONE, ROLE_PLAIN},
    {"verbose", 'v', TAKES_NONE, ROLE_PLAIN},
    {"version", 'V', TAKES_NONE, ROLE_PLAIN},
    {"usage", 0, TAKES_NONE, ROLE_PLAIN},
    {"wait", 'W', TAKES_ONE, ROLE_PLAIN},
    {"wckey", 0, TAKES_ONE, ROLE_PLAIN},
    {"whole", 0, TAKES_NONE, ROLE_PLAIN},
    {"x11", 0, TAKES_OPTIONAL, ROLE_PLAIN},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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
      snprintf(err, errlen,
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

static bool is_separator(const char *arg)
{
  return strcmp(arg, ":") == 0;
}

static int refuse(struct parse_state *st, enum role role)
{
  switch (role) {
  case ROLE_CONFIGFILE:
    return fail(st->plan,
                "%s -configfile cannot be wrapped because the programs are in the "
                "file; use '%s -n N mana_launch ./app' instead, or put "
                "'mana_launch' before each program in the file",
                st->launcher, st->launcher);
  case ROLE_MULTIPROG:
    return fail(st->plan,
                "%s --multi-prog cannot be wrapped because the programs are in the "
                "file; put 'mana_launch' before each program in the file instead "
                "(e.g. '0-3 mana_launch ./app'), and run '%s --multi-prog FILE'",
                st->launcher, st->launcher);
  case ROLE_BCAST:
    return fail(st->plan,
                "%s --bcast would copy mana_lh to the nodes instead of the "
                "program; copy the program with sbcast first and drop --bcast",
                st->launcher);
  default:
    return 0;
  }
}

/* Records what an option means beyond its arity. */
static int note_option(struct parse_state *st, const struct launcher_option *opt, const char *value)
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
    if (!value || !parse_bounded(value, 1ul << 24, &st->segment_ranks))
      st->segment_ranks = 0;
    return 0;
  }
  return refuse(st, opt->role);
}

static const struct launcher_option *hydra_lookup(const char *name, size_t len)
{
  for (size_t i = 0; i < COUNT(hydra_options); i++) {
    const char *candidate = hydra_options[i].name;

    if (strlen(candidate) == len && memcmp(candidate, name, len) == 0)
      return &hydra_options[i];
  }
  return NULL;
}

/* One Hydra option at argv[*i]; advances *i past it and its values. */
static int hydra_option(struct parse_state *st, int *i)
{
  const char *arg = st->argv[*i];
  const char *name = arg;
  const char *eq;
  const struct launcher_option *opt;
  const char *value = NULL;
  int wanted;
  size_t len;

  while (*name == '-')
    name++;
  eq = strchr(name, '=');
  len = eq ? (size_t)(eq - name) : strlen(name);
  opt = hydra_lookup(name, len);
  if (!opt)
    warn(st->plan,
         "%s option '%s' is not known to mana_launch; assuming it takes "
         "no value",
         st->launcher, arg);

  /* Hydra turns "-opt=value" into "-opt" "value": the attached part is the first value. */
  wanted = opt ? (opt->arity == TAKES_TWO ? 2 : opt->arity == TAKES_ONE ? 1 : 0) : 0;
  if (eq && wanted > 0) {
    value = eq + 1;
    wanted--;
  }
  for (int k = 1; k <= wanted; k++) {
    if (*i + k >= st->argc || is_separator(st->argv[*i + k]))
      return fail(st->plan, "%s option '%s' needs %s", st->launcher, arg,
                  opt->arity == TAKES_TWO ? "two values" : "a value");
  }
  if (!value && wanted > 0)
    value = st->argv[*i + 1];
  *i += 1 + wanted;
  return note_option(st, opt, value);
}

/* srun long option at argv[*i] ("--name", "--name=value", "--name value"). */
static const struct launcher_option *srun_lookup_long(struct parse_state *st, const char *name,
                                                      size_t len, int *rc)
{
  const struct launcher_option *found = NULL;
  size_t matches = 0;

  *rc = 0;
  for (size_t i = 0; i < COUNT(srun_options); i++) {
    const char *candidate = srun_options[i].name;

    if (strncmp(candidate, name, len) != 0)
      continue;
    if (strlen(candidate) == len)
      return &srun_options[i]; /* exact match wins over prefixes */
    found = &srun_options[i];
    matches++;
  }
  if (matches > 1)
    *rc = fail(st->plan, "%s option '--%.*s' is ambiguous", st->launcher, (int)len, name);
  return matches == 1 ? found : NULL;
}

static int srun_long_option(struct parse_state *st, int *i)
{
  const char *arg = st->argv[*i];
  const char *name = arg + 2;
  const char *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const struct launcher_option *opt;
  const char *value = eq ? eq + 1 : NULL;
  int rc;

  opt = srun_lookup_long(st, name, len, &rc);
  if (rc)
    return rc;
  if (!opt) {
    /* Site SPANK plugins add options we cannot know. */
    warn(st->plan,
         "%s option '--%.*s' is not known to mana_launch; assuming it takes "
         "no value unless written as --%.*s=VALUE",
         st->launcher, (int)len, name, (int)len, name);
    (*i)++;
    return 0;
  }
  (*i)++;
  if (opt->arity == TAKES_ONE && !eq) {
    if (*i >= st->argc || is_separator(st->argv[*i]))
      return fail(st->plan, "%s option '--%s' needs a value", st->launcher, opt->name);
    value = st->argv[(*i)++];
  }
  return note_option(st, opt, value);
}

static const struct launcher_option *srun_lookup_short(char c)
{
  for (size_t i = 0; i < COUNT(srun_options); i++)
    if (srun_options[i].short_name == c)
      return &srun_options[i];
  return NULL;
}

/* srun short options at argv[*i]: a cluster like "-lK1n4" or "-n" "4". */
static int srun_short_options(struct parse_state *st, int *i)
{
  const char *arg = st->argv[*i];

  (*i)++;
  for (size_t j = 1; arg[j]; j++) {
    const struct launcher_option *opt = srun_lookup_short(arg[j]);
    const char *rest = arg + j + 1;

    if (!opt) {
      warn(st->plan,
           "%s option '-%c' is not known to mana_launch; assuming it "
           "takes no value",
           st->launcher, arg[j]);
      continue;
    }
    if (opt->arity == TAKES_NONE) {
      int rc = note_option(st, opt, NULL);

      if (rc)
        return rc;
      continue;
    }
    /* A value-taking option ends the cluster: the rest is its value. */
    if (*rest || opt->arity == TAKES_OPTIONAL)
      return note_option(st, opt, *rest ? rest : NULL);
    if (*i >= st->argc || is_separator(st->argv[*i]))
      return fail(st->plan, "%s option '-%c' needs a value", st->launcher, arg[j]);
    return note_option(st, opt, st->argv[(*i)++]);
  }
  return 0;
}

static void record_app(struct parse_state *st, int index)
{
  st->app_at[st->app_count] = index;
  st->app_wdir[st->app_count] = st->wdir;
  st->app_count++;
}

/* A restart's segment holds launcher options only: mana_lh --restart goes where it ends
 * (recorded like a program, at the index of the ":" or of the end). */
static int restart_segment_end(struct parse_state *st, int i)
{
  if (i < st->argc && !is_separator(st->argv[i]))
    return fail(st->plan,
                "'%s': a restart runs the checkpointed program; give only "
                "the launcher and its options",
                st->argv[i]);
  record_app(st, i);
  return 0;
}

/* Skips the program's own arguments: everything up to the next ":" belongs to it. */
static int skip_to_separator(struct parse_state *st, int i)
{
  while (i < st->argc && !is_separator(st->argv[i]))
    i++;
  return i;
}

/* One Hydra MPMD segment starting at argv[*i]; leaves *i on the ":" or at the end. */
static int hydra_segment(struct parse_state *st, int *i, int segment)
{
  st->wdir = NULL;
  while (*i < st->argc && !is_separator(st->argv[*i])) {
    const char *arg = st->argv[*i];
    int rc;

    if (strcmp(arg, "--") == 0) {
      /* Hydra itself rejects "--"; accept it as "programs start here" and
			 * leave it out of the command. */
      st->drop[*i] = true;
      (*i)++;
      break;
    }
    if (arg[0] != '-')
      break;
    rc = hydra_option(st, i);
    if (rc)
      return rc;
  }
  if (st->wdir)
    st->global_wdir = st->wdir;
  if (st->plan->restart_from)
    return restart_segment_end(st, *i);
  if (*i >= st->argc || is_separator(st->argv[*i])) {
    if (segment == 1)
      return fail(st->plan, "no program found in the %s command line", st->launcher);
    return fail(st->plan, "no program found in segment %d of the %s command line", segment,
                st->launcher);
  }
  record_app(st, *i);
  *i = skip_to_separator(st, *i + 1);
  return 0;
}

/* One srun het-job component starting at argv[*i]. A component may omit the program
 * (srun then uses the next component's); one is needed somewhere. */
static int srun_segment(struct parse_state *st, int *i)
{
  st->wdir = NULL;
  while (*i < st->argc && !is_separator(st->argv[*i])) {
    const char *arg = st->argv[*i];
    int rc;

    if (strcmp(arg, "--") == 0) {
      (*i)++; /* srun accepts "--" itself: keep it */
      break;
    }
    if (arg[0] != '-' || arg[1] == '\0')
      break;
    if (arg[1] == '-')
      rc = srun_long_option(st, i);
    else
      rc = srun_short_options(st, i);
    if (rc)
      return rc;
  }
  if (st->plan->restart_from)
    return restart_segment_end(st, *i);
  if (*i >= st->argc || is_separator(st->argv[*i]))
    return 0;
  record_app(st, *i);
  *i = skip_to_separator(st, *i + 1);
  return 0;
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
    return fail(st->plan, "no program found in the %s command line", st->launcher);

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
    return fail(plan, "out of memory");

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
    return fail(plan, "out of memory");
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
  fail(plan,
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
    return fail(plan,
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
    record_app(st, first);
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
    return fail(plan, "out of memory");
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
    return fail(plan, "missing program to run (see mana_launch --help)");

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
    rc = fail(plan, "out of memory");
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
