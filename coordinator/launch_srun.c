/* launch_srun: Slurm's srun command line, as getopt_long with '+' reads it (stop at the first
 * non-option): short options cluster and take an attached value ("-n4", "-ln4"), long
 * options take "--opt=value" or "--opt value", long names may be abbreviated to a unique
 * prefix, an optional value must be attached ("-I5", "--exclusive=user"), "--" ends options
 * and a bare ":" starts the next het-job component. */
#include "launch_launcher.h"

#include <string.h>

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
    *rc = launch_fail(st->plan, "%s option '--%.*s' is ambiguous", st->launcher, (int)len, name);
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
    launch_warn(st->plan,
                "%s option '--%.*s' is not known to mana_launch; assuming it takes "
                "no value unless written as --%.*s=VALUE",
                st->launcher, (int)len, name, (int)len, name);
    (*i)++;
    return 0;
  }
  (*i)++;
  if (opt->arity == TAKES_ONE && !eq) {
    if (*i >= st->argc || launcher_is_separator(st->argv[*i]))
      return launch_fail(st->plan, "%s option '--%s' needs a value", st->launcher, opt->name);
    value = st->argv[(*i)++];
  }
  return launcher_note_option(st, opt, value);
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
      launch_warn(st->plan,
                  "%s option '-%c' is not known to mana_launch; assuming it "
                  "takes no value",
                  st->launcher, arg[j]);
      continue;
    }
    if (opt->arity == TAKES_NONE) {
      int rc = launcher_note_option(st, opt, NULL);

      if (rc)
        return rc;
      continue;
    }
    /* A value-taking option ends the cluster: the rest is its value. */
    if (*rest || opt->arity == TAKES_OPTIONAL)
      return launcher_note_option(st, opt, *rest ? rest : NULL);
    if (*i >= st->argc || launcher_is_separator(st->argv[*i]))
      return launch_fail(st->plan, "%s option '-%c' needs a value", st->launcher, arg[j]);
    return launcher_note_option(st, opt, st->argv[(*i)++]);
  }
  return 0;
}

/* One srun het-job component starting at argv[*i]. A component may omit the program
 * (srun then uses the next component's); one is needed somewhere. */
int srun_segment(struct parse_state *st, int *i)
{
  st->wdir = NULL;
  while (*i < st->argc && !launcher_is_separator(st->argv[*i])) {
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
    return launcher_restart_segment_end(st, *i);
  if (*i >= st->argc || launcher_is_separator(st->argv[*i]))
    return 0;
  launcher_record_app(st, *i);
  *i = launcher_skip_to_separator(st, *i + 1);
  return 0;
}
