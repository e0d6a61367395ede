/* mana_launch: start an MPI program under mana.
 *
 * Glue only: launch_args.c decides what to run, app_check.c decides whether the program
 * can run under mana, launch_coord.c gives the job a coordinator, and this file finds the
 * installation, exports the settings the ranks need, and execs. mana_launch never stays
 * around: once it execs, the launcher (or mana_lh) owns the process, its signals and its
 * exit status; a coordinator started here watches that process and exits with it.
 */
#define _GNU_SOURCE /* asprintf */
#include "app_check.h"
#include "ckpt_signal.h"
#include "coord_client.h"
#include "coord_layout.h"
#include "launch_args.h"
#include "launch_coord.h"
#include "launch_locality.h"
#include "mana/exe_dir.h"
#include "mana/launcher_rank.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MANA_VERSION
#define MANA_VERSION "unknown"
#endif

#define PROG "mana_launch"

/* mana is not completely installed, or the system refused a basic request. */
#define EXIT_BROKEN 1

/* mana_lh and the stub library sit at fixed places relative to bin/, the same in the build
 * tree and in the install tree. */
#define LOWER_HALF_NAME "mana_lh"
#define COORDINATOR_NAME "mana_coordinator"
/* Where checkpoints go without --ckptdir or MANA_CKPTDIR, relative to the current directory. */
/* What mana_lh loads into every upper half: the stub MPI library and the stand-in vDSO. */
static const char *const upper_half_files[] = {"lib/mana/libmpich.so.12", "lib/mana/mana_vdso.so"};
/* How long a rank of the per-rank form waits for the coordinator rank 0 starts: rank 0's own
 * start (exec, the checks, the daemon's fork and bind) takes milliseconds, seconds on a
 * loaded node; a directory other nodes do not see never shows it. */
#define RANK0_COORDINATOR_WAIT_MS 30000

/* "  -v, --verbose     help" or "      --ckptdir DIR     help", columns aligned. */
static void print_option_line(FILE *out, const struct mana_option *opt)
{
  char shortpart[8] = "    ", left[64];

  if (opt->short_name)
    snprintf(shortpart, sizeof(shortpart), "-%c, ", opt->short_name);
  snprintf(left, sizeof(left), "%s--%s%s%s", shortpart, opt->long_name, opt->value_name ? " " : "",
           opt->value_name ? opt->value_name : "");
  fprintf(out, "  %-28s %s\n", left, opt->help);
}

static void print_usage(FILE *out)
{
  const struct mana_option *opts;
  size_t count;

  fprintf(out, "Usage: " PROG " [OPTIONS] LAUNCHER [LAUNCHER-ARGS...] PROGRAM [ARGS...]\n"
               "       LAUNCHER [LAUNCHER-ARGS...] " PROG " [OPTIONS] PROGRAM [ARGS...]\n"
               "\n"
               "Run an MPI program under mana, so that it can be checkpointed and restarted.\n"
               "\n"
               "In the first form " PROG " finds PROGRAM in the launcher's command line (in\n"
               "every ':'-separated MPMD segment), puts mana_lh in front of it and runs the\n"
               "launcher. In the second form the launcher starts " PROG " once per rank.\n"
               "The form is chosen by the name of the first word after the options:\n"
               "mpirun, mpiexec, mpiexec.hydra, mpirun.mpich, mpiexec.mpich and srun, plus\n"
               "the names listed in MANA_LAUNCHERS, are launchers; anything else is PROGRAM.\n"
               "\n"
               "Checkpoints are steered by the job's coordinator. Without --coordinator (or\n"
               "MANA_COORDINATOR), the first form uses the coordinator waiting in the\n"
               "checkpoint directory or starts one (mana_coordinator --daemon) that ends with\n"
               "the job; in the second form rank 0 does so and the other ranks find it in\n"
               "the checkpoint directory. Ask it with mana_status.\n"
               "\n"
               "Options:\n");
  opts = launch_options(&count);
  for (size_t i = 0; i < count; i++)
    print_option_line(out, &opts[i]);
  fprintf(out, "\nEvery rank receives these settings in its environment:\n");
  for (size_t i = 0; i < count; i++)
    if (opts[i].action == MANA_ACTION_EXPORT)
      fprintf(out, "  %-28s from --%s\n", opts[i].env_name, opts[i].long_name);
  fprintf(out, "  %-28s the coordinator's secret\n", COORD_ENV_SECRET);
  fprintf(out, "\n"
               "PROGRAM must be a dynamically linked x86-64 program built with MPICH.\n"
               "\n"
               "Exit status: that of the launcher or program; 2 for a usage error, 126 when\n"
               "PROGRAM cannot run under mana, 127 when it is not found, 1 when the mana\n"
               "installation is incomplete.\n"
               "\n"
               "See mana_launch(1).\n");
}

/* The directory mana_launch was started from, through symlinks. */
static int find_bin_dir(char *dir, size_t len)
{
  if (mana_exe_dir(dir, len) != 0) {
    fprintf(stderr, PROG ": cannot find own location (/proc/self/exe): %s\n", strerror(errno));
    return EXIT_BROKEN;
  }
  return 0;
}

static int check_installation(const char *bin_dir, const char *lh_path)
{
  char stub[PATH_MAX], prefix[PATH_MAX];
  struct stat st;
  char *slash;

  if (stat(lh_path, &st) != 0 || !S_ISREG(st.st_mode) || access(lh_path, X_OK) != 0) {
    fprintf(stderr,
            PROG ": the mana installation is incomplete: %s is missing or "
                 "not executable\n",
            lh_path);
    return EXIT_BROKEN;
  }
  /* The install prefix is bin/'s parent; spelled out so the message shows a clean path. */
  snprintf(prefix, sizeof(prefix), "%s", bin_dir);
  slash = strrchr(prefix, '/');
  if (slash)
    *slash = '\0';
  for (size_t i = 0; i < sizeof(upper_half_files) / sizeof(upper_half_files[0]); i++) {
    if (snprintf(stub, sizeof(stub), "%s/%s", prefix, upper_half_files[i]) >= (int)sizeof(stub)) {
      fprintf(stderr, PROG ": installation path too long: %s\n", prefix);
      return EXIT_BROKEN;
    }
    if (stat(stub, &st) != 0) {
      fprintf(stderr, PROG ": the mana installation is incomplete: %s is missing\n", stub);
      return EXIT_BROKEN;
    }
  }
  return 0;
}

static int check_coordinator_program(const char *bin_dir)
{
  char path[PATH_MAX + sizeof(COORDINATOR_NAME) + 1];

  snprintf(path, sizeof(path), "%s/" COORDINATOR_NAME, bin_dir);
  if (access(path, X_OK) != 0) {
    fprintf(stderr,
            PROG ": the mana installation is incomplete: %s is missing or "
                 "not executable\n",
            path);
    return EXIT_BROKEN;
  }
  return 0;
}

/* Strings made here that the command points to. They live until exec; freeing them on
 * the error paths keeps leak checkers quiet in sanitizer builds. */
struct owned {
  char **items;
  size_t count;
};

static char *own(struct owned *owned, char *s)
{
  char **grown;

  if (!s)
    return NULL;
  grown = realloc(owned->items, (owned->count + 1) * sizeof(*grown));
  if (!grown) {
    free(s);
    return NULL;
  }
  owned->items = grown;
  owned->items[owned->count++] = s;
  return s;
}

static void free_owned(struct owned *owned)
{
  for (size_t i = 0; i < owned->count; i++)
    free(owned->items[i]);
  free(owned->items);
}

/* Checks every program of the plan. A program named without '/' is replaced by the path
 * PATH gave it, so every rank runs the very file that was checked. */
static int check_programs(struct launch_plan *plan, struct owned *owned)
{
  struct app_check_env env = {
      .path = getenv("PATH"),
      .ld_library_path = getenv("LD_LIBRARY_PATH"),
  };

  for (size_t i = 0; i < plan->app_count; i++) {
    char **slot = &plan->argv[plan->apps[i].argv_index];
    struct app_check_result result;
    int rc = app_check(*slot, plan->apps[i].wdir, &env, &result);

    if (rc) {
      fprintf(stderr, PROG ": %s\n", result.error);
      return rc;
    }
    if (!strchr(*slot, '/')) {
      *slot = own(owned, strdup(result.resolved));
      if (!*slot) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BROKEN;
      }
    }
  }
  return 0;
}

/* A relative --ckptdir would mean a different place for ranks started elsewhere. */
static const char *absolute_path(const char *value, struct owned *owned)
{
  char cwd[PATH_MAX];
  char *joined;

  if (value[0] == '/' || !getcwd(cwd, sizeof(cwd)))
    return value;
  if (asprintf(&joined, "%s/%s", cwd, value) < 0)
    return value;
  joined = own(owned, joined);
  return joined ? joined : value;
}

static int export_settings(struct launch_plan *plan, struct owned *owned)
{
  for (size_t i = 0; i < plan->env_count; i++) {
    const struct mana_option *opt = plan->env[i].option;

    if (opt->value_kind == MANA_VALUE_PATH)
      plan->env[i].value = absolute_path(plan->env[i].value, owned);
    if (setenv(opt->env_name, plan->env[i].value, 1) != 0) {
      fprintf(stderr, PROG ": cannot set %s: %s\n", opt->env_name, strerror(errno));
      return EXIT_BROKEN;
    }
  }
  return 0;
}

/* Prints a word so that it can be pasted back into a shell. */
static void print_quoted(FILE *out, const char *word)
{
  static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789_-./:=,+@%";

  if (word[0] != '\0' && strspn(word, safe) == strlen(word)) {
    fputs(word, out);
    return;
  }
  fputc('\'', out);
  for (const char *p = word; *p; p++) {
    if (*p == '\'')
      fputs("'\\''", out);
    else
      fputc(*p, out);
  }
  fputc('\'', out);
}

/* The coordinator's settings, which come from the options, the caller's environment or
 * the coordinator found or started for the job. */
static const char *const coordinator_env[] = {COORD_ENV_ADDRESS, COORD_ENV_SECRET,
                                              COORD_ENV_CKPTDIR};

static bool from_option(const struct launch_plan *plan, const char *env_name)
{
  for (size_t i = 0; i < plan->env_count; i++)
    if (strcmp(plan->env[i].option->env_name, env_name) == 0)
      return true;
  return false;
}

/* The whole line in one write: in the per-rank form every rank prints it to the same stderr,
 * and piece by piece the ranks' lines interleaved. */
static void print_command(const struct launch_plan *plan)
{
  char *line = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&line, &len);

  if (!out)
    out = stderr;
  fputs(PROG ": running:", out);
  for (size_t i = 0; i < plan->env_count; i++) {
    fprintf(out, " %s=", plan->env[i].option->env_name);
    print_quoted(out, plan->env[i].value);
  }
  for (size_t i = 0; i < sizeof(coordinator_env) / sizeof(coordinator_env[0]); i++) {
    const char *value = getenv(coordinator_env[i]);

    if (!value || from_option(plan, coordinator_env[i]))
      continue;
    fprintf(out, " %s=", coordinator_env[i]);
    print_quoted(out, value);
  }
  for (int i = 0; i < plan->argc; i++) {
    fputc(' ', out);
    print_quoted(out, plan->argv[i]);
  }
  fputc('\n', out);
  if (out == stderr)
    return;
  fclose(out);
  ssize_t done = line ? write(STDERR_FILENO, line, len) : 0; /* nowhere to report a failure */
  (void)done;
  free(line);
}

static void print_warnings(const char *warnings)
{
  const char *line = warnings;

  while (*line) {
    size_t len = strcspn(line, "\n");

    fprintf(stderr, PROG ": warning: %.*s\n", (int)len, line);
    line += len;
    if (*line == '\n')
      line++;
  }
}

/* ------------------------------------------------------------------------------------- */
/* The coordinator                                                                       */
/* ------------------------------------------------------------------------------------- */

static int set_env(const char *name, const char *value)
{
  if (setenv(name, value, 1) != 0) {
    fprintf(stderr, PROG ": cannot set %s: %s\n", name, strerror(errno));
    return EXIT_BROKEN;
  }
  return 0;
}

/* The job's command line, quoted, for the coordinator to record in MANIFEST. */
static char *job_command(int argc, char **argv, struct owned *owned)
{
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);

  if (!out)
    return NULL;
  for (int i = 0; i < argc; i++) {
    if (i)
      fputc(' ', out);
    print_quoted(out, argv[i]);
  }
  fclose(out);
  return own(owned, text);
}

static int export_coordinator(const struct launch_coord *lc, const char *ckptdir)
{
  int rc = set_env(COORD_ENV_ADDRESS, lc->address);

  if (!rc)
    rc = set_env(COORD_ENV_SECRET, lc->secret_file);
  if (!rc)
    rc = set_env(COORD_ENV_CKPTDIR, ckptdir);
  return rc;
}

/* A coordinator named by --coordinator or MANA_COORDINATOR: the secret defaults to the
 * checkpoint directory's. */
static int use_given_coordinator(const char *ckptdir)
{
  char secret[PATH_MAX + 32];

  if (!getenv(COORD_ENV_SECRET)) {
    store_meta_file(ckptdir, STORE_SECRET_FILE, secret, sizeof(secret));
    if (set_env(COORD_ENV_SECRET, secret))
      return EXIT_BROKEN;
  }
  return set_env(COORD_ENV_CKPTDIR, ckptdir);
}

/* How the checkpoints are written is a site's or a batch script's choice as much as the
 * command line's: an option not given is taken from the caller's environment (a module file
 * may set MANA_INCREMENTAL=1). The options were exported into it by export_settings. */
static const char *policy(const char *env_name)
{
  const char *v = getenv(env_name);
  return v && *v ? v : NULL;
}

static bool policy_on(const char *env_name)
{
  const char *v = policy(env_name);
  return v && strcmp(v, "0") != 0;
}

static int start_coordinator(const struct launch_plan *plan, const char *bin_dir,
                             const char *ckptdir, unsigned long ranks, char *command,
                             struct launch_coord *lc)
{
  struct launch_coord_request req = {
      .bin_dir = bin_dir,
      .ckptdir = ckptdir,
      .ranks = ranks,
      .interval = launch_plan_value(plan, "MANA_INTERVAL"),
      .ckpt_signal = launch_plan_value(plan, CKPT_SIGNAL_ENV),
      .ckpt_signal_action = launch_plan_value(plan, CKPT_SIGNAL_ACTION_ENV),
      .forked_writers = policy_on("MANA_FORKED_WRITERS"),
      .incremental = policy_on("MANA_INCREMENTAL"),
      .full_every = policy("MANA_FULL_EVERY"),
      .keep = policy("MANA_KEEP"),
      .command = command,
      .host = launch_coordinator_host(plan, launch_plan_value(plan, LAUNCH_ENV_COORD_HOST)),
      .bound_to_caller = plan->form == LAUNCH_FORM_WRAP_LAUNCHER,
  };
  char err[1024];

  if (check_coordinator_program(bin_dir))
    return EXIT_BROKEN;
  if (launch_coord_start(&req, lc, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return EXIT_BROKEN;
  }
  return export_coordinator(lc, ckptdir);
}

/* Per-rank form: the process the launcher numbers 0 starts the job's coordinator; the
 * others wait for it to appear in the checkpoint directory (launch_coord.h).  Without a
 * numbering, or when it does not appear, the ranks run without checkpointing, and say so. */
static int per_rank_coordinator(const struct launch_plan *plan, const char *bin_dir,
                                const char *ckptdir, char *command, struct launch_coord *lc)
{
  unsigned long rank, size;

  if (launch_coord_find(ckptdir, lc) == 1)
    return export_coordinator(lc, ckptdir);
  if (mana_launcher_rank((const char *const *)environ, &rank, &size) != 0) {
    fprintf(stderr,
            PROG ": warning: the launcher does not number its processes (PMI_RANK and "
                 "PMI_SIZE, SLURM_PROCID and SLURM_NTASKS) and no coordinator serves %s: "
                 "running without checkpoints\n",
            ckptdir);
    return 0;
  }
  /* Rank 0 cannot end the job from here (the others would wait for it in MPI_Init for ever):
   * it says why and runs on without checkpoints, as the others will once they stop waiting. */
  if (rank == 0 && start_coordinator(plan, bin_dir, ckptdir, size, command, lc) != 0) {
    launch_coord_abandon(lc);
    fprintf(stderr,
            PROG ": warning: rank 0: no coordinator for %s (above): running without "
                 "checkpoints\n",
            ckptdir);
    return 0;
  }
  if (rank == 0)
    return 0;
  if (launch_coord_await(ckptdir, RANK0_COORDINATOR_WAIT_MS, lc) == 1)
    return export_coordinator(lc, ckptdir);
  fprintf(stderr,
          PROG ": warning: rank %lu: the coordinator rank 0 starts did not appear in %s "
               "within %d s (a directory every node shares is needed, or --coordinator): "
               "running without checkpoints\n",
          rank, ckptdir, RANK0_COORDINATOR_WAIT_MS / 1000);
  return 0;
}

/* Gives the ranks a coordinator: the one named, the one running for the checkpoint
 * directory, or a new one (launcher form: mana_launch starts it; per-rank form: rank 0). */
static int setup_coordinator(const struct launch_plan *plan, const char *bin_dir, int argc,
                             char **argv, struct owned *owned, struct launch_coord *lc)
{
  const char *env_dir = getenv(COORD_ENV_CKPTDIR);
  const char *ckptdir = absolute_path(env_dir && *env_dir ? env_dir : STORE_DEFAULT_DIR, owned);
  char *command = job_command(argc, argv, owned);

  if (getenv(COORD_ENV_ADDRESS) && *getenv(COORD_ENV_ADDRESS))
    return use_given_coordinator(ckptdir);
  if (plan->form == LAUNCH_FORM_WRAP_LAUNCHER)
    return start_coordinator(plan, bin_dir, ckptdir, plan->ranks ? plan->ranks : plan->expect_ranks,
                             command, lc);
  return per_rank_coordinator(plan, bin_dir, ckptdir, command, lc);
}

/* Only returns when exec fails. */
static int run(struct launch_plan *plan, const char *lh_path)
{
  const char *what = plan->form == LAUNCH_FORM_PER_RANK ? lh_path : plan->argv[0];
  int err;

  fflush(NULL);
  if (plan->form == LAUNCH_FORM_PER_RANK)
    execv(lh_path, plan->argv);
  else
    execvp(plan->argv[0], plan->argv); /* the launcher is found through PATH */
  err = errno;                         /* before fprintf can change it */
  fprintf(stderr, PROG ": cannot run %s: %s\n", what, strerror(err));
  return err == ENOENT ? APP_CHECK_NOT_FOUND : APP_CHECK_CANNOT_RUN;
}

int main(int argc, char **argv)
{
  struct launch_plan plan;
  struct launch_coord coordinator = {0};
  struct owned owned = {0};
  char bin_dir[PATH_MAX], lh_path[PATH_MAX + sizeof(LOWER_HALF_NAME) + 1];
  int rc;

  rc = find_bin_dir(bin_dir, sizeof(bin_dir));
  if (rc)
    return rc;
  snprintf(lh_path, sizeof(lh_path), "%s/" LOWER_HALF_NAME, bin_dir);

  rc = launch_args_parse(argc, argv, lh_path, getenv("MANA_LAUNCHERS"), &plan);
  print_warnings(plan.warnings);
  if (rc) {
    fprintf(stderr, PROG ": %s\n", plan.error);
    goto out;
  }
  if (plan.help) {
    print_usage(stdout);
    goto out;
  }
  if (plan.version) {
    printf(PROG " (mana) " MANA_VERSION "\n");
    goto out;
  }

  rc = check_installation(bin_dir, lh_path);
  if (!rc)
    rc = check_programs(&plan, &owned);
  if (!rc)
    rc = export_settings(&plan, &owned);
  if (!rc)
    rc = setup_coordinator(&plan, bin_dir, argc, argv, &owned, &coordinator);
  if (rc)
    goto out;
  if (plan.verbose)
    print_command(&plan);
  rc = run(&plan, lh_path);
  /* The launcher never started: its coordinator has no job to wait for. */
  launch_coord_abandon(&coordinator);
out:
  free_owned(&owned);
  launch_plan_free(&plan);
  return rc;
}
