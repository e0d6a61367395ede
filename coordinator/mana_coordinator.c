/* mana_coordinator: the per-job daemon that checkpoints come from.
 *
 * This file reads the command line and sets the stage: the checkpoint directory and its
 * lock, the secret, the listening socket, the port files, detaching. coord_serve() (in
 * coord_server.c) then runs the job until it is over.
 */
#define _GNU_SOURCE
#include "coord_daemon.h"
#include "coord_log.h"
#include "coord_manifest.h"
#include "ckpt_signal.h"
#include "coord_server.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MANA_VERSION
#define MANA_VERSION "unknown"
#endif

#define PROG "mana_coordinator"
#define EXIT_USAGE 2
#define DEFAULT_AUTH_TIMEOUT 5
#define DEFAULT_CONNECT_TIMEOUT 120
#define DEFAULT_CKPT_TIMEOUT 600
#define DEFAULT_FULL_EVERY 8
#define LOCK_WAIT_MS 3000
#define COMMAND_MAX 8192 /* of the job command recorded in MANIFEST */

static void usage(FILE *out)
{
  fprintf(out,
          "Usage: " PROG " [OPTIONS]\n"
          "\n"
          "Run the coordinator of one mana job: it admits the job's ranks, starts\n"
          "checkpoints (on request or periodically), commits complete ones, and exits\n"
          "when the job is over.\n"
          "\n"
          "Options:\n"
          "      --ckptdir DIR          checkpoint directory (default: $MANA_CKPTDIR, else\n"
          "                             ./" STORE_DEFAULT_DIR ")\n"
          "      --host ADDR            address to listen on and to advertise (default:\n"
          "                             all addresses, advertised as this host's name)\n"
          "      --port N               TCP port; 0 lets the kernel pick (default 0)\n"
          "      --port-file FILE       also write HOST:PORT to FILE\n"
          "      --secret-file FILE     the job secret (default DIR/.mana/secret; created\n"
          "                             with mode 0600 when missing)\n"
          "      --interval SECONDS     checkpoint every SECONDS (default 0: never)\n"
          "      --ranks N              the job's number of ranks (default: from the\n"
          "                             first rank that connects)\n"
          "      --daemon               detach; print HOST:PORT and the daemon's pid once\n"
          "                             it listens; log to DIR/.mana/coordinator.log\n"
          "      --connect-timeout S    exit if no rank connects within S seconds\n"
          "                             (default %d; 0: wait forever)\n"
          "      --ckpt-timeout S       abort a checkpoint whose ranks have not reached\n"
          "                             the safe point within S seconds (default %d;\n"
          "                             0: no limit)\n"
          "      --auth-timeout S       drop connections that do not authenticate within\n"
          "                             S seconds (default %d)\n"
          "      --watch-pid PID        exit when process PID exits (the launcher)\n"
          "      --command TEXT         the job's command line, recorded in MANIFEST\n"
          "      --forked-writers       ranks resume once drained while a forked process\n"
          "                             writes each image (not for a checkpoint that ends\n"
          "                             the job)\n"
          "      --incremental          write each generation against the last committed\n"
          "                             one (CKPT base=): the ranks store only what changed\n"
          "      --full-every K         with --incremental, every K-th generation is a full\n"
          "                             one (default %d; 1: every one)\n"
          "      --keep N               after each commit, remove the committed generations\n"
          "                             that the N newest do not need (default 0: keep all)\n"
          "      --ckpt-signal SIG      checkpoint when this process receives SIG (e.g.\n"
          "                             USR1, as sbatch --signal sends it)\n"
          "      --ckpt-signal-action A kill (default): the job then ends, its ranks exiting\n"
          "                             with status 85; checkpoint: the job goes on\n"
          "  -h, --help                 print this help and exit\n"
          "      --version              print the version and exit\n"
          "\n"
          "The coordinator exits when every rank has disconnected, on QUIT (mana_status\n"
          "--quit) and on SIGTERM. See mana_coordinator(1) and\n"
          "docs/coordinator-protocol.md.\n",
          DEFAULT_CONNECT_TIMEOUT, DEFAULT_CKPT_TIMEOUT, DEFAULT_AUTH_TIMEOUT, DEFAULT_FULL_EVERY);
}

enum {
  OPT_CKPTDIR = 256,
  OPT_HOST,
  OPT_PORT,
  OPT_PORT_FILE,
  OPT_SECRET_FILE,
  OPT_INTERVAL,
  OPT_RANKS,
  OPT_DAEMON,
  OPT_CONNECT_TIMEOUT,
  OPT_CKPT_TIMEOUT,
  OPT_AUTH_TIMEOUT,
  OPT_WATCH_PID,
  OPT_COMMAND,
  OPT_CKPT_SIGNAL,
  OPT_FORKED_WRITERS,
  OPT_CKPT_SIGNAL_ACTION,
  OPT_INCREMENTAL,
  OPT_FULL_EVERY,
  OPT_KEEP,
  OPT_VERSION
};

static const struct option long_options[] = {
    {"ckptdir", required_argument, NULL, OPT_CKPTDIR},
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"port-file", required_argument, NULL, OPT_PORT_FILE},
    {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"daemon", no_argument, NULL, OPT_DAEMON},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"ckpt-timeout", required_argument, NULL, OPT_CKPT_TIMEOUT},
    {"auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
    {"watch-pid", required_argument, NULL, OPT_WATCH_PID},
    {"command", required_argument, NULL, OPT_COMMAND},
    {"ckpt-signal", required_argument, NULL, OPT_CKPT_SIGNAL},
    {"forked-writers", no_argument, NULL, OPT_FORKED_WRITERS},
    {"ckpt-signal-action", required_argument, NULL, OPT_CKPT_SIGNAL_ACTION},
    {"incremental", no_argument, NULL, OPT_INCREMENTAL},
    {"full-every", required_argument, NULL, OPT_FULL_EVERY},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Owned copies of paths made absolute: the daemon runs in "/". */
struct paths {
  char *ckptdir, *port_file, *secret_file;
};

static int usage_error(const char *fmt, const char *what)
{
  fprintf(stderr, PROG ": ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, " (see " PROG " --help)\n");
  return EXIT_USAGE;
}

static int number(const char *value, unsigned long max, const char *option, unsigned *out)
{
  uint64_t v;

  if (!coord_parse_u64(value, &v) || v > max) {
    fprintf(stderr,
            PROG ": invalid value '%s' for --%s: expected a whole number up "
                 "to %lu (see " PROG " --help)\n",
            value, option, max);
    return EXIT_USAGE;
  }
  *out = (unsigned)v;
  return 0;
}

static char *absolute(const char *path)
{
  char cwd[PATH_MAX];
  char *out = NULL;

  if (path[0] == '/')
    return strdup(path);
  if (!getcwd(cwd, sizeof(cwd)))
    return NULL;
  if (asprintf(&out, "%s/%s", cwd, path) < 0)
    return NULL;
  return out;
}

static int parse_value_option(int opt, const char *arg, struct coord_config *cfg,
                              struct paths *paths)
{
  unsigned v;
  int rc = 0;

  switch (opt) {
  case OPT_CKPTDIR:
    paths->ckptdir = absolute(arg);
    break;
  case OPT_HOST:
    cfg->host = arg;
    break;
  case OPT_PORT:
    rc = number(arg, 65535, "port", &v);
    cfg->port = arg;
    break;
  case OPT_PORT_FILE:
    paths->port_file = absolute(arg);
    break;
  case OPT_SECRET_FILE:
    paths->secret_file = absolute(arg);
    break;
  case OPT_INTERVAL:
    rc = number(arg, UINT32_MAX, "interval", &cfg->interval);
    break;
  case OPT_RANKS:
    rc = number(arg, COORD_MAX_RANKS, "ranks", &cfg->ranks);
    break;
  case OPT_CONNECT_TIMEOUT:
    rc = number(arg, 1000000, "connect-timeout", &cfg->connect_timeout);
    break;
  case OPT_CKPT_TIMEOUT:
    rc = number(arg, 1000000, "ckpt-timeout", &cfg->ckpt_timeout);
    break;
  case OPT_AUTH_TIMEOUT:
    rc = number(arg, 3600, "auth-timeout", &v);
    cfg->auth_timeout_ms = v * 1000;
    if (!rc && v == 0)
      rc = usage_error("--auth-timeout must be at least 1 second%s", "");
    break;
  case OPT_WATCH_PID:
    rc = number(arg, 1u << 30, "watch-pid", &v);
    cfg->watch_pid = (pid_t)v;
    break;
  case OPT_COMMAND:
    cfg->command = arg;
    break;
  case OPT_FORKED_WRITERS:
    cfg->forked_writers = true;
    break;
  case OPT_INCREMENTAL:
    cfg->incremental = true;
    break;
  case OPT_FULL_EVERY:
    rc = number(arg, 1000000, "full-every", &cfg->full_every);
    if (!rc && cfg->full_every == 0)
      rc = usage_error("--full-every must be at least 1 (1: every generation is full)%s", "");
    break;
  case OPT_KEEP:
    rc = number(arg, 1000000, "keep", &cfg->keep);
    break;
  case OPT_CKPT_SIGNAL: {
    const char *why;
    if (ckpt_signal_parse(arg, &cfg->ckpt_signal, &why))
      rc = usage_error("--ckpt-signal: %s", why);
    break;
  }
  case OPT_CKPT_SIGNAL_ACTION: {
    enum ckpt_signal_action a;
    if (ckpt_signal_action_parse(arg, &a))
      rc = usage_error("--ckpt-signal-action must be kill or checkpoint%s", "");
    cfg->ckpt_signal_kill = a == CKPT_SIGNAL_KILL;
    break;
  }
  }
  return rc;
}

/* Returns -1 to go on, or an exit status. */
static int parse_options(int argc, char **argv, struct coord_config *cfg, struct paths *paths)
{
  int opt;

  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
    int rc;

    switch (opt) {
    case 'h':
      usage(stdout);
      return 0;
    case OPT_VERSION:
      printf(PROG " (mana) " MANA_VERSION "\n");
      return 0;
    case OPT_DAEMON:
      cfg->daemon = true;
      continue;
    case ':':
      return usage_error("option '%s' needs a value", argv[optind - 1]);
    case '?':
      return usage_error("unknown option '%s'", argv[optind - 1]);
    }
    rc = parse_value_option(opt, optarg, cfg, paths);
    if (rc)
      return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  return -1;
}

static int fill_defaults(struct coord_config *cfg, struct paths *paths)
{
  const char *env = getenv("MANA_CKPTDIR");

  if (!paths->ckptdir)
    paths->ckptdir = absolute(env && *env ? env : STORE_DEFAULT_DIR);
  if (!paths->ckptdir) {
    fprintf(stderr, PROG ": cannot make the checkpoint directory path absolute: %s\n",
            strerror(errno));
    return 1;
  }
  cfg->ckptdir = paths->ckptdir;
  cfg->port_file = paths->port_file;
  cfg->secret_file = paths->secret_file;
  if (cfg->command && strlen(cfg->command) > COMMAND_MAX)
    ((char *)cfg->command)[COMMAND_MAX] = '\0';
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Setting the stage                                                                     */
/* ------------------------------------------------------------------------------------- */

/* The name other nodes reach us by: the listen address if one was given, else our host
 * name if it resolves, else the loopback address (then only local ranks can connect). */
static void advertised_host(const struct coord_config *cfg, char *out, size_t len)
{
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;

  if (cfg->host) {
    snprintf(out, len, "%s", cfg->host);
    return;
  }
  if (gethostname(out, len) == 0 && getaddrinfo(out, NULL, &hints, &res) == 0) {
    freeaddrinfo(res);
    return;
  }
  coord_log("this host's name does not resolve; advertising 127.0.0.1 (use --host "
            "for multi-node jobs)");
  snprintf(out, len, "127.0.0.1");
}

static int load_secret(struct coordinator *co, const struct coord_config *cfg)
{
  char path[PATH_MAX + 32], err[COORD_ERR_LEN * 2];
  bool created;

  if (cfg->secret_file)
    snprintf(path, sizeof(path), "%s", cfg->secret_file);
  else
    store_meta_path(&co->store, STORE_SECRET_FILE, path, sizeof(path));
  if (coord_secret_load_or_create(path, co->secret, &created, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  return 0;
}

/* Where LATEST stands in its chain of incremental generations, so that the depth goes on
 * across runs of the job (--full-every counts from the last full generation, not from the
 * start of this coordinator). */
static void read_chain(struct coordinator *co)
{
  char dir[PATH_MAX + 32], err[COORD_ERR_LEN * 2];
  struct manifest_chain chain;

  if (!co->committed)
    return;
  store_gen_path(&co->store, co->committed, dir, sizeof(dir));
  if (manifest_chain_of(dir, &chain, err, sizeof(err)) != 0) {
    coord_log("%s; the next generation is a full one", err);
    return;
  }
  co->committed_needs = chain.needs;
  co->committed_depth = chain.depth;
  co->committed_chain_known = true;
}

static int read_history(struct coordinator *co)
{
  char err[COORD_ERR_LEN * 2];
  uint64_t newest;

  if (store_latest(&co->store, &co->committed, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  /* Numbers continue after everything on disk, so a new generation never lands in a
   * directory of an earlier job. */
  newest = store_newest_dir(&co->store);
  co->newest_started = newest > co->committed ? newest : co->committed;
  store_remove_incomplete(&co->store, co->committed);
  read_chain(co);
  return 0;
}

/* The owner-only local socket beside the TCP port (see coord_net.h): clients on this host
 * use it first, so that other users cannot crowd the owner out of the TCP port. */
static int open_local_door(struct coordinator *co, unsigned port)
{
  char err[COORD_ERR_LEN], name[COORD_LOCAL_NAME_MAX], portstr[COORD_PORT_MAX];
  size_t len;

  snprintf(portstr, sizeof(portstr), "%u", port);
  len = coord_local_name(portstr, co->secret, name);
  co->local_fd = coord_listen_local(name, len, err, sizeof(err));
  if (co->local_fd < 0) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  return 0;
}

static int open_listener(struct coordinator *co, const struct coord_config *cfg)
{
  char err[COORD_ERR_LEN], host[COORD_HOST_MAX];
  unsigned port;

  co->listen_fd = coord_listen(cfg->host, cfg->port, &port, err, sizeof(err));
  if (co->listen_fd < 0) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  advertised_host(cfg, host, sizeof(host));
  coord_hostport_join(co->address, sizeof(co->address), host, port);
  return open_local_door(co, port);
}

static int write_port_files(struct coordinator *co, const struct coord_config *cfg)
{
  char err[COORD_ERR_LEN * 2], line[COORD_HOSTPORT_MAX + 2];
  int n = snprintf(line, sizeof(line), "%s\n", co->address);

  store_meta_path(&co->store, STORE_PORT_FILE, co->port_file, sizeof(co->port_file));
  if (store_write_atomic(co->port_file, line, (size_t)n, 0600, err, sizeof(err)) ||
      (cfg->port_file &&
       store_write_atomic(cfg->port_file, line, (size_t)n, 0600, err, sizeof(err)))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  return 0;
}

/* Opened before detaching, while the launcher is certainly alive (it waits for us). */
static int watch_launcher(struct coordinator *co, const struct coord_config *cfg)
{
  co->watch_fd = -1;
  if (!cfg->watch_pid)
    return 0;
  co->watch_fd = (int)syscall(SYS_pidfd_open, cfg->watch_pid, 0);
  if (co->watch_fd >= 0 || errno == ENOSYS)
    return 0; /* without pidfds the loop polls the pid */
  fprintf(stderr, PROG ": cannot watch process %d: %s\n", (int)cfg->watch_pid, strerror(errno));
  return 1;
}

static int detach(struct coordinator *co)
{
  char log_path[PATH_MAX + 32], err[COORD_ERR_LEN];

  store_meta_path(&co->store, STORE_LOG_FILE, log_path, sizeof(log_path));
  if (coord_daemonize(log_path, co->address, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  return 0;
}

static int prepare(struct coordinator *co, const struct coord_config *cfg)
{
  char err[COORD_ERR_LEN * 2];

  if (store_open(&co->store, cfg->ckptdir, LOCK_WAIT_MS, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  if (load_secret(co, cfg) || read_history(co))
    return 1;
  if (cfg->ranks && hello_learn_size(co, cfg->ranks, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  if (open_listener(co, cfg) || watch_launcher(co, cfg) || write_port_files(co, cfg))
    return 1;
  if (cfg->daemon && detach(co)) {
    remove(co->port_file);
    if (cfg->port_file)
      remove(cfg->port_file);
    return 1;
  }
  store_record_pid(&co->store);
  return 0;
}

int main(int argc, char **argv)
{
  static struct coordinator co; /* large (line buffer): not on the stack */
  struct coord_config cfg = {
      .port = "0",
      .auth_timeout_ms = DEFAULT_AUTH_TIMEOUT * 1000,
      .connect_timeout = DEFAULT_CONNECT_TIMEOUT,
      .ckpt_timeout = DEFAULT_CKPT_TIMEOUT,
      .ckpt_signal_kill = true,
      .full_every = DEFAULT_FULL_EVERY,
  };
  struct paths paths = {0};
  int rc = parse_options(argc, argv, &cfg, &paths);

  if (rc >= 0) /* --help, --version or a usage error */
    goto out;
  rc = fill_defaults(&cfg, &paths);
  if (rc)
    goto out;
  if (coord_block_signals(&cfg) != 0) {
    fprintf(stderr, PROG ": cannot block signals: %s\n", strerror(errno));
    rc = 1;
    goto out;
  }
  co.cfg = &cfg;
  co.interval = cfg.interval;
  co.listen_fd = co.local_fd = co.watch_fd = co.signal_fd = -1;
  rc = prepare(&co, &cfg);
  if (rc == 0)
    rc = coord_serve(&co);
  store_close(&co.store);
out:
  free(paths.ckptdir);
  free(paths.port_file);
  free(paths.secret_file);
  return rc;
}
