/* launch_hydra: MPICH's Hydra (mpiexec, mpirun) command line, as its argument matcher reads
 * it: any number of leading dashes ("-n", "--n"), "-opt=value" splits at '=', options are
 * matched exactly, no "-n4", the first word not starting with '-' is the program, and a bare
 * ":" starts the next MPMD segment. */
#include "launch_launcher.h"

#include <string.h>

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
    launch_warn(st->plan,
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
    if (*i + k >= st->argc || launcher_is_separator(st->argv[*i + k]))
      return launch_fail(st->plan, "%s option '%s' needs %s", st->launcher, arg,
                         opt->arity == TAKES_TWO ? "two values" : "a value");
  }
  if (!value && wanted > 0)
    value = st->argv[*i + 1];
  *i += 1 + wanted;
  return launcher_note_option(st, opt, value);
}

/* One Hydra MPMD segment starting at argv[*i]; leaves *i on the ":" or at the end. */
int hydra_segment(struct parse_state *st, int *i, int segment)
{
  st->wdir = NULL;
  while (*i < st->argc && !launcher_is_separator(st->argv[*i])) {
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
    return launcher_restart_segment_end(st, *i);
  if (*i >= st->argc || launcher_is_separator(st->argv[*i])) {
    if (segment == 1)
      return launch_fail(st->plan, "no program found in the %s command line", st->launcher);
    return launch_fail(st->plan, "no program found in segment %d of the %s command line", segment,
                       st->launcher);
  }
  launcher_record_app(st, *i);
  *i = launcher_skip_to_separator(st, *i + 1);
  return 0;
}
