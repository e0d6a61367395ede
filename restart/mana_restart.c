/* mana_restart: restart a checkpointed job.
 *
 *   mana_restart [OPTIONS] mpirun|mpiexec|srun [LAUNCHER-ARGS...]   (launcher form)
 *   mpirun -n N mana_restart [OPTIONS]                              (per-rank form)
 *
 * Both find the generation (the newest committed one, or --generation G), check that it is
 * complete and that the job is started with its number of ranks, and run mana_lh --restart on
 * every rank.  The launcher form goes through mana_launch, so the restarted job gets a
 * coordinator and can be checkpointed again. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include "mana/exe_dir.h"
#include "mana/launcher_rank.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_signal.h"
#include "coord_layout.h"
#include "generation.h"

static void usage(FILE *out)
{
  fprintf(
      out,
      "usage: mana_restart [OPTIONS] mpirun|mpiexec|srun [LAUNCHER-ARGS...]\n"
      "       mpirun -n N mana_restart [OPTIONS]\n"
      "Restarts a job from a committed checkpoint generation.\n\n"
      "  --ckptdir DIR      checkpoint directory (default $MANA_CKPTDIR, else ./" STORE_DEFAULT_DIR
      ")\n"
      "  --generation G     restart generation G (default: the newest committed one)\n"
      "  --interval SECS    checkpoint the restarted job every SECS seconds (launcher form)\n"
      "  --forked-writers   the restarted job's checkpoints are written by forked writers\n"
      "                     while it runs (launcher form)\n"
      "  --incremental      the restarted job's checkpoints store only what changed since\n"
      "                     the last committed one (launcher form)\n"
      "  --full-every K     with --incremental, every K-th checkpoint is full (default 8)\n"
      "  --keep N           remove checkpoints the N newest do not need (launcher form;\n"
      "                     default 0: keep all)\n"
      "  --ckpt-signal SIG  checkpoint when the job gets SIG (e.g. USR1 from sbatch --signal)\n"
      "  --ckpt-signal-action kill|checkpoint\n"
      "                     kill (default): then end the job, exit status 85; checkpoint: go on\n"
      "  --keep-files       leave the application's files as they are; by default a file it\n"
      "                     wrote that grew after the checkpoint is cut back to its size then\n"
      "  --check            verify every image's checksums, restart nothing\n"
      "  --which            print the generation directory a restart would use, restart\n"
      "                     nothing (exit 1 when there is none: a chaining script launches)\n"
      "  -v, --verbose      print the command that is run\n"
      "  -h, --help         this text\n");
}

/* "mana_restart: rank R on HOST: " when the launcher started several ranks. */
static void name_rank(char *who, size_t len)
{
  unsigned long rank, size;
  char host[64] = "?";
  if (mana_launcher_rank((const char *const *)environ, &rank, &size) != 0 || size < 2)
    return;
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  snprintf(who, len, "mana_restart: rank %lu on %s: ", rank, host);
}

/* The rank count the launcher started (1 for a program no launcher started), or -1 when it
 * does not say. */
static long launched_size(void)
{
  unsigned long rank, size;
  return mana_launcher_rank((const char *const *)environ, &rank, &size) == 0 ? (long)size : -1;
}

int main(int argc, char **argv)
{
  static const struct option opts[] = {{"ckptdir", required_argument, 0, 'd'},
                                       {"generation", required_argument, 0, 'g'},
                                       {"interval", required_argument, 0, 'i'},
                                       {"ckpt-signal", required_argument, 0, 's'},
                                       {"forked-writers", no_argument, 0, 'f'},
                                       {"ckpt-signal-action", required_argument, 0, 'a'},
                                       {"incremental", no_argument, 0, 'I'},
                                       {"full-every", required_argument, 0, 'F'},
                                       {"keep", required_argument, 0, 'K'},
                                       {"check", no_argument, 0, 'c'},
                                       {"which", no_argument, 0, 'w'},
                                       {"verbose", no_argument, 0, 'v'},
                                       {"keep-files", no_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *ckptdir = getenv("MANA_CKPTDIR"), *interval = NULL, *why;
  const char *ckpt_signal = NULL, *ckpt_signal_action = NULL;
  const char *full_every = NULL, *keep = NULL;
  int incremental = 0;
  enum ckpt_signal_action action;
  int signo;
  unsigned long long wanted = 0;
  int check = 0, which = 0, verbose = 0, forked = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'd':
      ckptdir = optarg;
      break;
    case 'g':
      errno = 0;
      wanted = strtoull(optarg, &end, 10);
      /* strtoull takes "-1" as 2^64-1 */
      if (errno || *end || wanted == 0 || optarg[0] < '0' || optarg[0] > '9') {
        fprintf(stderr, "mana_restart: --generation needs a positive number, not '%s'\n", optarg);
        return 2;
      }
      break;
    case 'i':
      interval = optarg;
      break;
    case 's':
      if (ckpt_signal_parse(optarg, &signo, &why) != 0) {
        fprintf(stderr, "mana_restart: --ckpt-signal %s: %s\n", optarg, why);
        return 2;
      }
      ckpt_signal = optarg;
      break;
    case 'a':
      if (ckpt_signal_action_parse(optarg, &action) != 0) {
        fprintf(stderr, "mana_restart: --ckpt-signal-action must be kill or checkpoint\n");
        return 2;
      }
      ckpt_signal_action = optarg;
      break;
    case 'c':
      check = 1;
      break;
    case 'w':
      which = 1;
      break;
    case 'k': /* read by every rank's restore (lower-half/state_written_files.c) */
      setenv("MANA_RESTART_KEEP_FILES", "1", 1);
      break;
    case 'f':
      forked = 1;
      break;
    case 'I':
      incremental = 1;
      break;
    case 'F':
    case 'K': {
      /* checked here too, so that a mistake is told before the launcher is started */
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (errno || *end || optarg[0] < '0' || optarg[0] > '9' || v > 1000000 ||
          (c == 'F' && v == 0)) {
        fprintf(stderr, "mana_restart: --%s needs a whole number%s, not '%s'\n",
                c == 'F' ? "full-every" : "keep", c == 'F' ? " of at least 1" : "", optarg);
        return 2;
      }
      *(c == 'F' ? &full_every : &keep) = optarg;
      break;
    }
    case 'v':
      verbose = 1;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      fprintf(stderr, "mana_restart: unknown option '%s' (see mana_restart --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (!ckptdir)
    ckptdir = STORE_DEFAULT_DIR;
  /* The per-rank form runs once per rank: its errors say which rank and host they are. */
  char who[160] = "mana_restart: ";
  if (optind == argc)
    name_rank(who, sizeof(who));
  char dir[PATH_MAX], err[1024], bin[PATH_MAX];
  if (!realpath(ckptdir, dir)) {
    fprintf(stderr, "%scheckpoint directory %s: %s\n", who, ckptdir, strerror(errno));
    return 1;
  }
  struct mana_generation g;
  if (mana_generation_find(dir, wanted, &g, err, sizeof(err)) != 0) {
    fprintf(stderr, "%s%s\n", who, err);
    return 1;
  }
  if (which) {
    printf("%s\n", g.dir);
    mana_generation_release(&g);
    return 0;
  }
  if (check) {
    if (mana_generation_verify(&g, err, sizeof(err)) != 0) {
      fprintf(stderr, "%s%s\n", who, err);
      return 1;
    }
    printf("generation %llu of %s: %u rank images, all checksums correct\n",
           (unsigned long long)g.number, dir, g.world_size);
    mana_generation_release(&g);
    return 0;
  }
  if (mana_exe_dir(bin, sizeof(bin)) != 0) {
    fprintf(stderr, "%scannot find my own installation directory\n", who);
    return 1;
  }

  if (optind == argc) { /* per-rank form */
    long size = launched_size();
    if (size > 0 && (unsigned long)size != g.world_size) {
      fprintf(stderr, "%sgeneration %llu has %u ranks but %ld were started: restart with -n %u\n",
              who, (unsigned long long)g.number, g.world_size, size, g.world_size);
      return 1;
    }
  }

  /* Both forms go through mana_launch, so that the restarted job has a coordinator and can be
   * checkpointed again: the launcher form rewrites the launcher's command so every rank runs
   * mana_lh --restart on this generation; the per-rank form (no launcher) is one rank of the
   * restart, and rank 0 starts the coordinator (mana_launch(1)). */
  char launch[PATH_MAX + 16], gen_opt[PATH_MAX + 32], size_opt[32];
  snprintf(launch, sizeof(launch), "%s/mana_launch", bin);
  snprintf(gen_opt, sizeof(gen_opt), "--restart-from=%s", g.dir);
  snprintf(size_opt, sizeof(size_opt), "--expect-ranks=%u", g.world_size);
  char **args = calloc((size_t)argc + 20, sizeof(char *));
  int n = 0;
  args[n++] = launch;
  args[n++] = gen_opt;
  args[n++] = size_opt;
  args[n++] = "--ckptdir";
  args[n++] = dir;
  if (interval) {
    args[n++] = "--interval";
    args[n++] = (char *)interval;
  }
  if (forked)
    args[n++] = "--forked-writers";
  if (incremental)
    args[n++] = "--incremental";
  if (full_every) {
    args[n++] = "--full-every";
    args[n++] = (char *)full_every;
  }
  if (keep) {
    args[n++] = "--keep";
    args[n++] = (char *)keep;
  }
  if (ckpt_signal) {
    args[n++] = "--ckpt-signal";
    args[n++] = (char *)ckpt_signal;
  }
  if (ckpt_signal_action) {
    args[n++] = "--ckpt-signal-action";
    args[n++] = (char *)ckpt_signal_action;
  }
  if (verbose)
    args[n++] = "--verbose";
  for (int i = optind; i < argc; i++)
    args[n++] = argv[i];
  args[n] = NULL;
  execv(launch, args);
  fprintf(stderr, "%scannot run %s: %s\n", who, launch, strerror(errno));
  return 126;
}
