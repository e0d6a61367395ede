/* Unit tests for coordinator/launch_args.c: real launcher command lines in, the rewritten
 * command and the mana settings out. */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "launch_args.h"

#define LH "/opt/mana/bin/mana_lh"

static struct launch_plan plan;
static char joined[4096];

/* Parses "mana_launch WORDS..." (NULL-terminated) with MANA_LAUNCHERS = extra. */
static int parse_with(const char *extra, ...)
{
  char *argv[64] = {"mana_launch"};
  int argc = 1;
  va_list ap;

  va_start(ap, extra);
  for (char *w = va_arg(ap, char *); w; w = va_arg(ap, char *))
    argv[argc++] = w;
  va_end(ap);
  argv[argc] = NULL;
  launch_plan_free(&plan);
  return launch_args_parse(argc, argv, LH, extra, &plan);
}

#define parse(...) parse_with(NULL, __VA_ARGS__, (char *)NULL)

/* The command to exec, words separated by single spaces. */
static const char *command(void)
{
  joined[0] = '\0';
  for (int i = 0; i < plan.argc; i++) {
    if (i)
      strcat(joined, " ");
    strcat(joined, plan.argv[i]);
  }
  cr_assert_null(plan.argv[plan.argc], "argv must be NULL-terminated");
  return joined;
}

static const char *app(size_t k)
{
  cr_assert_lt(k, plan.app_count);
  return plan.argv[plan.apps[k].argv_index];
}

static void expect_ok(int rc, const char *cmd)
{
  cr_assert_eq(rc, 0, "parse failed: %s", plan.error);
  cr_assert_str_eq(command(), cmd);
}

static void expect_error(int rc, const char *part)
{
  cr_assert_eq(rc, LAUNCH_EXIT_USAGE, "expected a usage error containing '%s'", part);
  cr_assert(strstr(plan.error, part), "error '%s' lacks '%s'", plan.error, part);
}

static void cleanup(void)
{
  launch_plan_free(&plan);
}

TestSuite(launch_args, .fini = cleanup);

/* --- Hydra (mpiexec / mpirun) ------------------------------------------------------- */

Test(launch_args, hydra_basic)
{
  expect_ok(parse("mpiexec", "-n", "2", "./app", "a", "b"), "mpiexec -n 2 " LH " ./app a b");
  cr_assert_eq(plan.form, LAUNCH_FORM_WRAP_LAUNCHER);
  cr_assert_eq(plan.style, LAUNCHER_STYLE_HYDRA);
  cr_assert_eq(plan.app_count, 1);
  cr_assert_str_eq(app(0), "./app");
  cr_assert_str_eq(plan.argv[plan.apps[0].argv_index - 1], LH);
  cr_assert_str_eq(plan.warnings, "");
}

Test(launch_args, hydra_launcher_names_and_paths)
{
  const char *names[] = {"mpirun", "mpiexec.hydra", "mpirun.mpich", "mpiexec.mpich",
                         "/usr/bin/mpiexec.hydra"};

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char expect[256];

    snprintf(expect, sizeof(expect), "%s -np 4 " LH " app", names[i]);
    expect_ok(parse(names[i], "-np", "4", "app"), expect);
    cr_assert_eq(plan.style, LAUNCHER_STYLE_HYDRA);
  }
}

Test(launch_args, hydra_dashes_and_equals)
{
  /* Hydra strips any number of dashes and splits "-opt=value". */
  expect_ok(parse("mpiexec", "--n", "2", "-ppn=1", "---hosts", "a,b", "./app"),
            "mpiexec --n 2 -ppn=1 ---hosts a,b " LH " ./app");
  expect_ok(parse("mpiexec", "-n=2", "./app"), "mpiexec -n=2 " LH " ./app");
}

Test(launch_args, hydra_env_takes_two_values)
{
  expect_ok(parse("mpiexec", "-env", "A", "B", "-n", "2", "./app"),
            "mpiexec -env A B -n 2 " LH " ./app");
  expect_ok(parse("mpiexec", "-genv", "OMP_NUM_THREADS", "4", "./app"),
            "mpiexec -genv OMP_NUM_THREADS 4 " LH " ./app");
  /* "-genv=A B": the attached part is the first of the two values. */
  expect_ok(parse("mpiexec", "-genv=A", "B", "./app"), "mpiexec -genv=A B " LH " ./app");
}

Test(launch_args, hydra_flags_take_nothing)
{
  expect_ok(parse("mpiexec", "-l", "-genvall", "-print-all-exitcodes", "-n", "2", "-bind-to",
                  "core", "-map-by", "socket", "./app"),
            "mpiexec -l -genvall -print-all-exitcodes -n 2 -bind-to core -map-by socket " LH
            " ./app");
  expect_ok(parse("mpirun", "-prepend-rank", "-verbose", "-f", "hosts.txt", "./app"),
            "mpirun -prepend-rank -verbose -f hosts.txt " LH " ./app");
}

Test(launch_args, hydra_app_options_belong_to_app)
{
  expect_ok(parse("mpiexec", "-n", "2", "./app", "-n", "5", "-env", "X", "--", "-wdir", "/x"),
            "mpiexec -n 2 " LH " ./app -n 5 -env X -- -wdir /x");
  cr_assert_eq(plan.app_count, 1);
  cr_assert_null(plan.apps[0].wdir);
}

Test(launch_args, hydra_mpmd_wraps_every_segment)
{
  expect_ok(parse("mpiexec", "-n", "1", "./a", "x", ":", "-n", "2", "./b", "y", ":", "-np", "3",
                  "-env", "K", "V", "c"),
            "mpiexec -n 1 " LH " ./a x : -n 2 " LH " ./b y : -np 3 -env K V " LH " c");
  cr_assert_eq(plan.app_count, 3);
  cr_assert_str_eq(app(0), "./a");
  cr_assert_str_eq(app(1), "./b");
  cr_assert_str_eq(app(2), "c");
}

Test(launch_args, hydra_double_dash_is_dropped)
{
  /* Hydra itself rejects "--"; mana_launch accepts it and leaves it out. */
  expect_ok(parse("mpiexec", "-n", "2", "--", "./app", "--", "x"),
            "mpiexec -n 2 " LH " ./app -- x");
  expect_ok(parse("mpiexec", "-n", "2", "--", "-dash-app"), "mpiexec -n 2 " LH " -dash-app");
}

Test(launch_args, hydra_wdir_is_global)
{
  expect_ok(parse("mpiexec", "-n", "1", "./a", ":", "-wdir", "/w", "-n", "1", "./b"),
            "mpiexec -n 1 " LH " ./a : -wdir /w -n 1 " LH " ./b");
  cr_assert_str_eq(plan.apps[0].wdir, "/w");
  cr_assert_str_eq(plan.apps[1].wdir, "/w");
  expect_ok(parse("mpiexec", "-wdir=/x", "./a"), "mpiexec -wdir=/x " LH " ./a");
  cr_assert_str_eq(plan.apps[0].wdir, "/x");
}

Test(launch_args, hydra_missing_program)
{
  expect_error(parse("mpiexec", "-n", "2"), "no program found in the mpiexec command line");
  expect_error(parse("mpiexec"), "no program found");
  expect_error(parse("mpiexec", "-n", "1", "./a", ":"), "segment 2");
  expect_error(parse("mpiexec", "-n", "1", "./a", ":", "-n", "2"), "segment 2");
}

Test(launch_args, hydra_missing_values)
{
  expect_error(parse("mpiexec", "./app", ":", "-n"), "mpiexec option '-n' needs a value");
  expect_error(parse("mpiexec", "-genv", "A"), "needs two values");
  expect_error(parse("mpiexec", "-n", ":", "./app"), "needs a value");
}

Test(launch_args, hydra_configfile_refused)
{
  expect_error(parse("mpiexec", "-configfile", "mpmd.conf"), "-configfile");
  cr_assert(strstr(plan.error, "mpiexec -n N mana_launch ./app"), "%s", plan.error);
  expect_error(parse("mpirun", "--configfile=mpmd.conf"), "-configfile");
}

Test(launch_args, hydra_unknown_option_warns)
{
  expect_ok(parse("mpiexec", "-n", "2", "-new-flag", "./app"),
            "mpiexec -n 2 -new-flag " LH " ./app");
  cr_assert(strstr(plan.warnings, "'-new-flag'"), "warnings: %s", plan.warnings);
}

/* --- srun ---------------------------------------------------------------------------- */

Test(launch_args, srun_short_values)
{
  expect_ok(parse("srun", "-n4", "./app"), "srun -n4 " LH " ./app");
  cr_assert_eq(plan.style, LAUNCHER_STYLE_SRUN);
  expect_ok(parse("srun", "-n", "4", "./app"), "srun -n 4 " LH " ./app");
  expect_ok(parse("srun", "-N", "2", "-c", "8", "-t", "1:00:00", "./app", "-n", "1"),
            "srun -N 2 -c 8 -t 1:00:00 " LH " ./app -n 1");
}

Test(launch_args, srun_short_clusters)
{
  /* "-ln4" is -l and -n 4; a value-taking option ends the cluster. */
  expect_ok(parse("srun", "-ln4", "./app"), "srun -ln4 " LH " ./app");
  expect_ok(parse("srun", "-lun", "4", "./app"), "srun -lun 4 " LH " ./app");
  expect_ok(parse("srun", "-Ol", "-p", "debug", "./app"), "srun -Ol -p debug " LH " ./app");
}

Test(launch_args, srun_long_values)
{
  expect_ok(parse("srun", "--mpi=pmi2", "-n", "2", "./app"), "srun --mpi=pmi2 -n 2 " LH " ./app");
  expect_ok(parse("srun", "--mpi", "pmi2", "--ntasks", "2", "./app"),
            "srun --mpi pmi2 --ntasks 2 " LH " ./app");
  expect_ok(parse("srun", "--ntasks=2", "--label", "--exact", "./app"),
            "srun --ntasks=2 --label --exact " LH " ./app");
}

Test(launch_args, srun_optional_values_must_be_attached)
{
  /* getopt_long: an optional value only counts when attached. */
  expect_ok(parse("srun", "--exclusive=user", "./app"), "srun --exclusive=user " LH " ./app");
  expect_ok(parse("srun", "--exclusive", "user", "./app"), "srun --exclusive " LH " user ./app");
  cr_assert_str_eq(app(0), "user");
  expect_ok(parse("srun", "-K", "./app"), "srun -K " LH " ./app");
  expect_ok(parse("srun", "-K1", "./app"), "srun -K1 " LH " ./app");
  expect_ok(parse("srun", "-I", "5", "./app"), "srun -I " LH " 5 ./app");
  expect_ok(parse("srun", "--overlap", "./app"), "srun --overlap " LH " ./app");
}

Test(launch_args, srun_long_prefixes)
{
  expect_ok(parse("srun", "--ntasks-per-n", "2", "./app"), "srun --ntasks-per-n 2 " LH " ./app");
  /* An exact name wins over the longer names it is a prefix of. */
  expect_ok(parse("srun", "--gpus", "2", "./app"), "srun --gpus 2 " LH " ./app");
  expect_error(parse("srun", "--cpu", "2", "./app"), "'--cpu' is ambiguous");
}

Test(launch_args, srun_double_dash_is_kept)
{
  expect_ok(parse("srun", "-n2", "--", "./app", "-x"), "srun -n2 -- " LH " ./app -x");
  expect_ok(parse("srun", "--", "-odd-name"), "srun -- " LH " -odd-name");
}

Test(launch_args, srun_het_components)
{
  expect_ok(parse("srun", "-n1", "./a", ":", "-n", "2", "--mpi=pmi2", "./b", "arg"),
            "srun -n1 " LH " ./a : -n 2 --mpi=pmi2 " LH " ./b arg");
  cr_assert_eq(plan.app_count, 2);
  /* A component may leave out its program. */
  expect_ok(parse("srun", "-n1", ":", "-n", "2", "./b"), "srun -n1 : -n 2 " LH " ./b");
  cr_assert_eq(plan.app_count, 1);
}

Test(launch_args, srun_chdir)
{
  expect_ok(parse("srun", "-D", "/w", "./app"), "srun -D /w " LH " ./app");
  cr_assert_str_eq(plan.apps[0].wdir, "/w");
  expect_ok(parse("srun", "-D/w2", "./app"), "srun -D/w2 " LH " ./app");
  cr_assert_str_eq(plan.apps[0].wdir, "/w2");
  expect_ok(parse("srun", "--chdir=/w3", "./a", ":", "./b"),
            "srun --chdir=/w3 " LH " ./a : " LH " ./b");
  cr_assert_str_eq(plan.apps[0].wdir, "/w3");
  cr_assert_null(plan.apps[1].wdir);
}

Test(launch_args, srun_refusals)
{
  expect_error(parse("srun", "-n4", "--multi-prog", "prog.conf"), "--multi-prog");
  expect_error(parse("srun", "--bcast=/tmp/app", "./app"), "--bcast");
}

Test(launch_args, srun_errors)
{
  expect_error(parse("srun", "-n", "2"), "no program found in the srun command line");
  expect_error(parse("srun", "-n"), "srun option '-n' needs a value");
  expect_error(parse("srun", "--ntasks"), "srun option '--ntasks' needs a value");
}

Test(launch_args, srun_unknown_options_warn)
{
  /* Site SPANK plugins add options: assumed to take no value unless attached. */
  expect_ok(parse("srun", "--site-opt", "./app"), "srun --site-opt " LH " ./app");
  cr_assert(strstr(plan.warnings, "--site-opt"), "warnings: %s", plan.warnings);
  expect_ok(parse("srun", "--site-opt=3", "./app"), "srun --site-opt=3 " LH " ./app");
}

/* --- the per-rank form ---------------------------------------------------------------- */

Test(launch_args, per_rank_form)
{
  expect_ok(parse("./app", "-n", "3", "--verbose"), LH " ./app -n 3 --verbose");
  cr_assert_eq(plan.form, LAUNCH_FORM_PER_RANK);
  cr_assert_eq(plan.style, LAUNCHER_STYLE_NONE);
  cr_assert_eq(plan.app_count, 1);
  cr_assert_eq(plan.apps[0].argv_index, 1);
  cr_assert_str_eq(plan.argv[0], LH);
  cr_assert_eq(plan.verbose, false, "options after the program belong to it");
}

Test(launch_args, per_rank_after_double_dash)
{
  expect_ok(parse("-v", "--", "--strange-name", "x"), LH " --strange-name x");
  cr_assert(plan.verbose);
  /* "--" only ends mana's options: the name after it still decides the form. */
  expect_ok(parse("--", "mpiexec", "-n", "1", "./a"), "mpiexec -n 1 " LH " ./a");
}

Test(launch_args, missing_program)
{
  expect_error(parse_with(NULL, (char *)NULL), "missing program");
  expect_error(parse("--ckptdir", "/c"), "missing program");
}

/* --- mana's own options --------------------------------------------------------------- */

static const char *env_value(const char *name)
{
  for (size_t i = 0; i < plan.env_count; i++)
    if (strcmp(plan.env[i].option->env_name, name) == 0)
      return plan.env[i].value;
  return NULL;
}

Test(launch_args, exported_settings)
{
  expect_ok(parse("--ckptdir", "/scratch/ck", "--interval=600", "--coordinator", "node1:7779",
                  "mpirun", "-n", "2", "./app"),
            "mpirun -n 2 " LH " ./app");
  cr_assert_eq(plan.env_count, 3);
  cr_assert_str_eq(env_value("MANA_CKPTDIR"), "/scratch/ck");
  cr_assert_str_eq(env_value("MANA_INTERVAL"), "600");
  cr_assert_str_eq(env_value("MANA_COORDINATOR"), "node1:7779");
}

Test(launch_args, repeated_option_last_wins)
{
  expect_ok(parse("--interval", "60", "--interval", "0", "./app"), LH " ./app");
  cr_assert_eq(plan.env_count, 1);
  cr_assert_str_eq(env_value("MANA_INTERVAL"), "0");
}

Test(launch_args, coordinator_forms)
{
  expect_ok(parse("--coordinator", "[::1]:7779", "./app"), LH " ./app");
  expect_ok(parse("--coordinator", "10.0.0.1:1", "./app"), LH " ./app");
  expect_error(parse("--coordinator", "node1", "./app"), "expected HOST:PORT");
  expect_error(parse("--coordinator", "node1:0", "./app"), "1 to 65535");
  expect_error(parse("--coordinator", "node1:65536", "./app"), "1 to 65535");
  expect_error(parse("--coordinator", ":7779", "./app"), "invalid value ':7779'");
  expect_error(parse("--coordinator", "::1:7779", "./app"), "brackets");
  expect_error(parse("--coordinator", "no de:1", "./app"), "--coordinator");
}

Test(launch_args, interval_values)
{
  expect_error(parse("--interval", "abc", "./app"),
               "invalid value 'abc' for --interval: expected a whole number of seconds");
  expect_error(parse("--interval", "-5", "./app"), "invalid value '-5'");
  expect_error(parse("--interval", "99999999999", "./app"), "--interval");
  expect_error(parse("--interval=", "./app"), "--interval");
  expect_error(parse("--ckptdir="), "expected a directory path");
}

Test(launch_args, option_value_missing)
{
  expect_error(parse("--ckptdir"), "option '--ckptdir' needs a value");
}

Test(launch_args, unknown_options)
{
  expect_error(parse("--foo", "./app"), "unknown option '--foo' (see mana_launch --help)");
  cr_assert_str_eq(plan.error, "unknown option '--foo' (see mana_launch --help)");
  expect_error(parse("--foo=bar", "./app"), "unknown option '--foo'");
  expect_error(parse("-x", "./app"), "unknown option '-x' (see mana_launch --help)");
  expect_error(parse("--verbose=yes", "./app"), "takes no value");
}

Test(launch_args, help_and_version)
{
  cr_assert_eq(parse("--help"), 0);
  cr_assert(plan.help);
  cr_assert_eq(parse("-h", "mpirun"), 0);
  cr_assert(plan.help);
  cr_assert_eq(parse("-vh"), 0);
  cr_assert(plan.help && plan.verbose);
  cr_assert_eq(parse("--version"), 0);
  cr_assert(plan.version);
}

Test(launch_args, option_table_is_complete)
{
  size_t count;
  const struct mana_option *opts = launch_options(&count);

  cr_assert_geq(count, 6);
  for (size_t i = 0; i < count; i++) {
    cr_assert_not_null(opts[i].help);
    if (opts[i].action == MANA_ACTION_EXPORT)
      cr_assert(opts[i].env_name, "%s", opts[i].long_name);
    /* a flag (exported as 1) has no value to name */
    cr_assert(opts[i].value_name || opts[i].value_kind == MANA_VALUE_NONE, "%s", opts[i].long_name);
  }
}

/* --- MANA_LAUNCHERS ------------------------------------------------------------------- */

Test(launch_args, extra_launchers)
{
  const char *extra = "site-srun=srun:sitempi";

  expect_ok(parse_with(extra, "site-srun", "-n4", "./app", (char *)NULL),
            "site-srun -n4 " LH " ./app");
  cr_assert_eq(plan.style, LAUNCHER_STYLE_SRUN);
  expect_ok(parse_with(extra, "/opt/bin/sitempi", "-n", "4", "./app", (char *)NULL),
            "/opt/bin/sitempi -n 4 " LH " ./app");
  cr_assert_eq(plan.style, LAUNCHER_STYLE_HYDRA);
  expect_ok(parse_with(extra, "sitemp", "-n", "4", (char *)NULL), LH " sitemp -n 4");
  cr_assert_eq(plan.form, LAUNCH_FORM_PER_RANK);
}

Test(launch_args, extra_launchers_malformed)
{
  expect_error(parse_with("good:bad=pbs", "./app", (char *)NULL), "MANA_LAUNCHERS");
  cr_assert(strstr(plan.error, "bad=pbs"), "%s", plan.error);
  /* Empty entries are harmless. */
  expect_ok(parse_with("::x::", "x", "-n", "1", "./a", (char *)NULL), "x -n 1 " LH " ./a");
}

Test(launch_args, style_lookup)
{
  enum launcher_style style;
  char err[128];

  cr_assert(launch_style_for("/usr/bin/srun", NULL, &style, err, sizeof(err)));
  cr_assert_eq(style, LAUNCHER_STYLE_SRUN);
  cr_assert(launch_style_for("mpiexec.hydra", NULL, &style, err, sizeof(err)));
  cr_assert_eq(style, LAUNCHER_STYLE_HYDRA);
  cr_assert(launch_style_for("./mpiexec-not", NULL, &style, err, sizeof(err)));
  cr_assert_eq(style, LAUNCHER_STYLE_NONE);
}

Test(launch_args, incremental_options)
{
  expect_ok(parse("--incremental", "--full-every", "3", "--keep=0", "mpiexec", "-n", "2", "./app"),
            "mpiexec -n 2 " LH " ./app");
  cr_assert_str_eq(launch_plan_value(&plan, "MANA_INCREMENTAL"), "1");
  cr_assert_str_eq(launch_plan_value(&plan, "MANA_FULL_EVERY"), "3");
  cr_assert_str_eq(launch_plan_value(&plan, "MANA_KEEP"), "0");
  cr_assert_neq(parse("--full-every", "0", "mpiexec", "./app"), 0);
  cr_assert_str_eq(plan.error,
                   "invalid value '0' for --full-every: expected a whole number of at least 1");
  cr_assert_neq(parse("--keep", "x", "mpiexec", "./app"), 0);
  cr_assert_str_eq(plan.error, "invalid value 'x' for --keep: expected a whole number");
  cr_assert_neq(parse("--keep", "1000001", "mpiexec", "./app"), 0);
  cr_assert_neq(parse("--incremental=1", "mpiexec", "./app"), 0);
}

Test(launch_args, flag_exported_as_one)
{
  expect_ok(parse("--forked-writers", "mpiexec", "-n", "2", "./app"), "mpiexec -n 2 " LH " ./app");
  cr_assert_str_eq(launch_plan_value(&plan, "MANA_FORKED_WRITERS"), "1");
  cr_assert_neq(parse("--forked-writers=1", "mpiexec", "./app"), 0);
}
