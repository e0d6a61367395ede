/* mana_status: ask a job's coordinator how the job is doing, or tell it what to do
 * (checkpoint, checkpoint and stop, change the interval, quit).
 *
 * Finding the coordinator is most of the work: an explicit --coordinator, else the port
 * file of a checkpoint directory (--ckptdir), else MANA_COORDINATOR, else the port file of
 * $MANA_CKPTDIR or ./mana-ckpt, the directory mana_launch uses by default. Every failure is
 * one line on stderr and exit status 1; command-line mistakes exit with 2.
 */
#define _GNU_SOURCE
#include "coord_client.h"
#include "coord_lock_probe.h"
#include "coord_layout.h"
#include "status_render.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MANA_VERSION
#define MANA_VERSION "unknown"
#endif

#define PROG "mana_status"
#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define DEFAULT_TIMEOUT_S 10

struct options {
  const char *coordinator, *ckptdir, *secret_file;
  bool json, checkpoint, wait, kill, quit, help, version;
  const char *interval;    /* NULL: unchanged */
  const char *exit_status; /* --kill: the ranks' exit status, NULL: 0 */
  unsigned timeout_s;
};

static void usage(FILE *out)
{
  fprintf(out,
          "Usage: " PROG " [OPTIONS]\n"
          "\n"
          "Show the state of a mana job (ranks, checkpoint in progress, last checkpoint),\n"
          "or tell its coordinator to checkpoint, change the interval, or quit.\n"
          "\n"
          "Finding the coordinator:\n"
          "      --coordinator HOST:PORT  the coordinator's address (default:\n"
          "                              $MANA_COORDINATOR, else the one recorded in the\n"
          "                              checkpoint directory)\n"
          "      --ckptdir DIR           the job's checkpoint directory (default:\n"
          "                              $MANA_CKPTDIR, else ./" STORE_DEFAULT_DIR ")\n"
          "      --secret-file FILE      the job secret (default: $MANA_SECRET_FILE, else\n"
          "                              DIR/.mana/secret)\n"
          "      --timeout SECONDS       how long to wait for the coordinator (default %d)\n"
          "\n"
          "Actions (default: show the status):\n"
          "      --checkpoint            start a checkpoint and print its generation\n"
          "      --wait                  with --checkpoint or --kill: wait until it is\n"
          "                              committed (exit 0) or aborted (exit 1)\n"
          "      --kill                  checkpoint, and end the job once it is committed\n"
          "      --exit-status N         with --kill: the ranks, and so the launcher, exit\n"
          "                              with N (default 0; 85 means checkpointed, continue\n"
          "                              me, as after the checkpoint signal)\n"
          "      --interval SECONDS      checkpoint every SECONDS from now on (0: off)\n"
          "      --quit                  end the job now, without a checkpoint\n"
          "      --json                  print JSON instead of text\n"
          "  -h, --help                  print this help and exit\n"
          "      --version               print the version and exit\n"
          "\n"
          "Exit status: 0 on success, 1 when the coordinator cannot be reached, refuses\n"
          "the request or the checkpoint is aborted, 2 for a usage error.\n"
          "See mana_status(1).\n",
          DEFAULT_TIMEOUT_S);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
  va_list ap;

  fputs(PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_FAIL;
}

/* ------------------------------------------------------------------------------------- */
/* Options                                                                               */
/* ------------------------------------------------------------------------------------- */

enum {
  OPT_COORDINATOR = 256,
  OPT_CKPTDIR,
  OPT_SECRET_FILE,
  OPT_TIMEOUT,
  OPT_JSON,
  OPT_CHECKPOINT,
  OPT_WAIT,
  OPT_KILL,
  OPT_EXIT_STATUS,
  OPT_INTERVAL,
  OPT_QUIT,
  OPT_VERSION
};

static const struct option long_options[] = {
    {"coordinator", required_argument, NULL, OPT_COORDINATOR},
    {"ckptdir", required_argument, NULL, OPT_CKPTDIR},
    {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"json", no_argument, NULL, OPT_JSON},
    {"checkpoint", no_argument, NULL, OPT_CHECKPOINT},
    {"wait", no_argument, NULL, OPT_WAIT},
    {"kill", no_argument, NULL, OPT_KILL},
    {"exit-status", required_argument, NULL, OPT_EXIT_STATUS},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"quit", no_argument, NULL, OPT_QUIT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, const char *what)
{
  fputs(PROG ": ", stderr);
  fprintf(stderr, fmt, what);
  fputs(" (see " PROG " --help)\n", stderr);
  return EXIT_USAGE;
}

static int seconds_value(const char *value, const char *option, uint64_t max)
{
  uint64_t v;

  if (!coord_parse_u64(value, &v) || v > max)
    return usage_error("invalid number of seconds for %s", option);
  return 0;
}

static int apply_option(struct options *o, int opt, const char *arg)
{
  uint64_t v;

  switch (opt) {
  case 'h':
    o->help = true;
    break;
  case OPT_VERSION:
    o->version = true;
    break;
  case OPT_COORDINATOR:
    o->coordinator = arg;
    break;
  case OPT_CKPTDIR:
    o->ckptdir = arg;
    break;
  case OPT_SECRET_FILE:
    o->secret_file = arg;
    break;
  case OPT_JSON:
    o->json = true;
    break;
  case OPT_CHECKPOINT:
    o->checkpoint = true;
    break;
  case OPT_WAIT:
    o->wait = true;
    break;
  case OPT_KILL:
    o->kill = true;
    break;
  case OPT_EXIT_STATUS:
    if (!coord_parse_u64(arg, &v) || v > 255)
      return usage_error("%s needs a number from 0 to 255", "--exit-status");
    o->exit_status = arg;
    break;
  case OPT_QUIT:
    o->quit = true;
    break;
  case OPT_INTERVAL:
    o->interval = arg;
    return seconds_value(arg, "--interval", UINT32_MAX);
  case OPT_TIMEOUT:
    if (seconds_value(arg, "--timeout", 86400) || !coord_parse_u64(arg, &v) || !v)
      return usage_error("%s needs a positive number of seconds", "--timeout");
    o->timeout_s = (unsigned)v;
    break;
  }
  return 0;
}

static int check_combination(const struct options *o)
{
  if (o->wait && !o->checkpoint && !o->kill)
    return usage_error("%s needs --checkpoint or --kill", "--wait");
  if (o->exit_status && !o->kill)
    return usage_error("%s goes with --kill", "--exit-status");
  if (o->quit && (o->checkpoint || o->kill || o->interval))
    return usage_error("%s cannot be combined with other actions", "--quit");
  return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
  int opt;

  o->timeout_s = DEFAULT_TIMEOUT_S;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
    int rc;

    if (opt == ':')
      return usage_error("option '%s' needs a value", argv[optind - 1]);
    if (opt == '?')
      return usage_error("unknown option '%s'", argv[optind - 1]);
    rc = apply_option(o, opt, optarg);
    if (rc)
      return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  return check_combination(o);
}

/* ------------------------------------------------------------------------------------- */
/* Finding the coordinator                                                               */
/* ------------------------------------------------------------------------------------- */

struct target {
  char hostport[COORD_HOSTPORT_MAX];
  char secret_file[PATH_MAX];
  char from[PATH_MAX + 64]; /* where the address came from, for messages */
  char dir[PATH_MAX];       /* the checkpoint directory whose port file named it, or "" */
};

static int read_port_file(const char *dir, struct target *t)
{
  char path[PATH_MAX + 32];
  ssize_t n;
  int fd;

  store_meta_file(dir, STORE_PORT_FILE, path, sizeof(path));
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return fail("no coordinator is running for %s (%s does not exist); give "
                "--coordinator HOST:PORT or --ckptdir DIR",
                dir, path);
  if (fd < 0)
    return fail("cannot open %s: %s", path, strerror(errno));
  n = read(fd, t->hostport, sizeof(t->hostport) - 1);
  close(fd);
  if (n <= 0)
    return fail("cannot read the coordinator's address from %s", path);
  t->hostport[n] = '\0';
  t->hostport[strcspn(t->hostport, "\n")] = '\0';
  snprintf(t->from, sizeof(t->from), " (from %s)", path);
  snprintf(t->dir, sizeof(t->dir), "%s", dir);
  return 0;
}

static const char *default_dir(void)
{
  const char *env = getenv(COORD_ENV_CKPTDIR);

  return env && *env ? env : STORE_DEFAULT_DIR;
}

static void dir_secret(const char *dir, struct target *t)
{
  store_meta_file(dir, STORE_SECRET_FILE, t->secret_file, sizeof(t->secret_file));
}

static int locate(const struct options *o, struct target *t)
{
  const char *env_addr = getenv(COORD_ENV_ADDRESS);
  const char *env_secret = getenv(COORD_ENV_SECRET);
  const char *dir = NULL;

  memset(t, 0, sizeof(*t));
  if (o->coordinator) {
    snprintf(t->hostport, sizeof(t->hostport), "%s", o->coordinator);
  } else if (o->ckptdir) {
    dir = o->ckptdir;
  } else if (env_addr && *env_addr) {
    snprintf(t->hostport, sizeof(t->hostport), "%s", env_addr);
    snprintf(t->from, sizeof(t->from), " (from %s)", COORD_ENV_ADDRESS);
  } else {
    dir = default_dir();
  }
  if (dir && read_port_file(dir, t))
    return EXIT_FAIL;
  /* An explicit directory's own secret beats one inherited from the environment. */
  if (o->secret_file)
    snprintf(t->secret_file, sizeof(t->secret_file), "%s", o->secret_file);
  else if (dir)
    dir_secret(dir, t);
  else if (env_secret && *env_secret)
    snprintf(t->secret_file, sizeof(t->secret_file), "%s", env_secret);
  else
    dir_secret(default_dir(), t);
  return 0;
}

static bool loopback_only(const char *host)
{
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
         strcmp(host, "localhost") == 0;
}

static struct coord_client *open_control(const struct options *o)
{
  struct coord_endpoint ep;
  struct coord_client *c;
  struct target t;
  char err[COORD_ERR_LEN * 2];
  int timeout = (int)o->timeout_s * 1000;

  if (locate(o, &t))
    return NULL;
  if (coord_endpoint_init(&ep, t.hostport, t.secret_file, err, sizeof(err))) {
    fail("%s", err);
    return NULL;
  }
  c = coord_client_connect(&ep, timeout, err, sizeof(err));
  if (!c && t.dir[0] && !coord_dir_served(t.dir)) {
    /* the port file outlived its coordinator (killed, or its host went down) */
    fail("no coordinator is running for %s: the one at %s that wrote %s/" STORE_META_DIR
         "/" STORE_PORT_FILE " is gone (killed?); restart the job from its last "
         "checkpoint with mana_restart",
         t.dir, t.hostport, t.dir);
    return NULL;
  }
  if (!c && loopback_only(ep.host)) {
    /* mana_launch binds it to loopback when every rank runs on its host */
    fail("%s%s; it listens on its own host only: run mana_status there, or start the "
         "job with mana_launch --coordinator-host ADDR",
         err, t.from);
    return NULL;
  }
  if (!c) {
    fail("%s%s", err, t.from);
    return NULL;
  }
  if (coord_client_hello_control(c, timeout)) {
    fail("%s (coordinator %s, secret %s)", coord_client_error(c), t.hostport, t.secret_file);
    coord_client_close(c);
    return NULL;
  }
  return c;
}

/* ------------------------------------------------------------------------------------- */
/* Requests                                                                              */
/* ------------------------------------------------------------------------------------- */

/* The next line, which must be expect (or ERROR, which becomes the failure). */
static int expect_reply(struct coord_client *c, struct coord_msg *msg, const char *expect,
                        int timeout_ms)
{
  int rc = coord_client_recv(c, msg, timeout_ms);

  if (rc == 0)
    return fail("the coordinator did not answer within %d s", timeout_ms / 1000);
  if (rc < 0)
    return fail("%s", coord_client_error(c));
  if (strcmp(msg->verb, "ERROR") == 0)
    return fail("the coordinator refused: %s",
                coord_msg_get(msg, "reason") ? coord_msg_get(msg, "reason") : "?");
  if (strcmp(msg->verb, expect) != 0)
    return fail("unexpected answer %s from the coordinator", msg->verb);
  return 0;
}

static int send_line(struct coord_client *c, struct coord_line *line)
{
  if (coord_client_send(c, line))
    return fail("%s", coord_client_error(c));
  return 0;
}

static int do_status(struct coord_client *c, const struct options *o)
{
  struct status_reply reply = {0};
  struct coord_msg msg;
  int timeout = (int)o->timeout_s * 1000;
  int rc = send_line(c, coord_client_line(c, "STATUS"));

  if (!rc)
    rc = expect_reply(c, &msg, "JOB", timeout);
  while (!rc) {
    if (status_reply_add(&reply, &msg)) {
      rc = fail("out of memory or unexpected %s line in the status", msg.verb);
      break;
    }
    if (coord_client_recv(c, &msg, timeout) != 1) {
      rc = fail("the status reply was cut short: %s", coord_client_error(c));
      break;
    }
    if (strcmp(msg.verb, "END") == 0)
      break;
  }
  if (!rc && o->json)
    status_print_json(stdout, &reply);
  else if (!rc)
    status_print_human(stdout, &reply);
  status_reply_free(&reply);
  return rc;
}

static int do_interval(struct coord_client *c, const struct options *o)
{
  struct coord_line *line = coord_client_line(c, "INTERVAL");
  struct coord_msg msg;
  uint64_t seconds = 0;

  coord_parse_u64(o->interval, &seconds);
  coord_line_u64(line, "seconds", seconds);
  if (send_line(c, line) || expect_reply(c, &msg, "OK", (int)o->timeout_s * 1000))
    return EXIT_FAIL;
  if (o->json)
    printf("{\"interval\": %llu}\n", (unsigned long long)seconds);
  else if (seconds)
    printf("checkpoint interval set to %llu s\n", (unsigned long long)seconds);
  else
    printf("periodic checkpoints turned off\n");
  return 0;
}

static int do_quit(struct coord_client *c, const struct options *o)
{
  struct coord_msg msg;

  if (send_line(c, coord_client_line(c, "QUIT")) ||
      expect_reply(c, &msg, "OK", (int)o->timeout_s * 1000))
    return EXIT_FAIL;
  if (o->json)
    printf("{\"quit\": true}\n");
  else
    printf("the coordinator is ending the job\n");
  return 0;
}

static int print_done(const struct coord_msg *msg, const struct options *o, uint64_t gen)
{
  const char *status = coord_msg_get(msg, "status");
  const char *reason = coord_msg_get(msg, "reason");
  bool committed = status && strcmp(status, "committed") == 0;
  char bytes[32];

  status_bytes(strtoull(coord_msg_get(msg, "bytes") ? coord_msg_get(msg, "bytes") : "0", NULL, 10),
               bytes, sizeof(bytes));
  if (o->json) {
    printf("{\"gen\": %llu, \"status\": ", (unsigned long long)gen);
    status_json_string(stdout, committed ? "committed" : "aborted");
    if (!committed) {
      printf(", \"reason\": ");
      status_json_string(stdout, reason ? reason : "");
    }
    printf("}\n");
  } else if (committed) {
    printf("checkpoint committed: generation %llu, %s in %s s\n", (unsigned long long)gen, bytes,
           coord_msg_get(msg, "seconds") ? coord_msg_get(msg, "seconds") : "?");
  }
  if (committed)
    return 0;
  return fail("checkpoint generation %llu aborted: %s", (unsigned long long)gen,
              reason ? reason : "no reason given");
}

static int wait_done(struct coord_client *c, const struct options *o, uint64_t gen)
{
  struct coord_msg msg;
  uint64_t done_gen;

  for (;;) {
    if (coord_client_recv(c, &msg, -1) != 1)
      return fail("the coordinator went away before generation %llu finished: "
                  "%s",
                  (unsigned long long)gen, coord_client_error(c));
    if (strcmp(msg.verb, "DONE") == 0 &&
        coord_parse_u64(coord_msg_get(&msg, "gen") ? coord_msg_get(&msg, "gen") : "", &done_gen) &&
        done_gen == gen)
      return print_done(&msg, o, gen);
  }
}

static int do_checkpoint(struct coord_client *c, const struct options *o)
{
  struct coord_line *line = coord_client_line(c, "CHECKPOINT");
  struct coord_msg msg;
  uint64_t gen;

  if (o->wait)
    coord_line_u64(line, "wait", 1);
  if (o->kill)
    coord_line_u64(line, "kill", 1);
  if (o->exit_status && strcmp(o->exit_status, "0") != 0)
    coord_line_str(line, "status", o->exit_status);
  if (send_line(c, line) || expect_reply(c, &msg, "OK", (int)o->timeout_s * 1000))
    return EXIT_FAIL;
  if (!coord_msg_get(&msg, "gen") || !coord_parse_u64(coord_msg_get(&msg, "gen"), &gen))
    return fail("the coordinator's answer lacks the generation");
  if (o->wait)
    return wait_done(c, o, gen);
  if (o->json)
    printf("{\"gen\": %llu, \"status\": \"started\"}\n", (unsigned long long)gen);
  else
    printf("checkpoint started: generation %llu%s\n", (unsigned long long)gen,
           o->kill ? " (the job ends once it is committed)" : "");
  return 0;
}

static int run(const struct options *o)
{
  struct coord_client *c = open_control(o);
  int rc = 0;

  if (!c)
    return EXIT_FAIL;
  if (o->quit)
    rc = do_quit(c, o);
  if (!rc && o->interval)
    rc = do_interval(c, o);
  if (!rc && (o->checkpoint || o->kill))
    rc = do_checkpoint(c, o);
  if (!rc && !o->quit && !o->interval && !o->checkpoint && !o->kill)
    rc = do_status(c, o);
  coord_client_close(c);
  return rc;
}

int main(int argc, char **argv)
{
  struct options o = {0};
  int rc = parse_options(argc, argv, &o);

  if (rc)
    return rc;
  if (o.help) {
    usage(stdout);
    return 0;
  }
  if (o.version) {
    printf(PROG " (mana) " MANA_VERSION "\n");
    return 0;
  }
  return run(&o);
}
