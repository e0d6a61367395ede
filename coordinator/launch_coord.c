/* launch_coord: find or start the job's coordinator for mana_launch (see launch_coord.h). */
#define _GNU_SOURCE
#include "launch_coord.h"
#include "coord_proto.h"

#include "coord_client.h"
#include "coord_lock_probe.h"
#include "coord_store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "mana/fail.h"

#define ADDRESS_WAIT_MS 2000 /* a coordinator that holds the lock writes its address soon */
#define CONTROL_TIMEOUT_MS 5000
#define TAKEN_WAIT_MS 3000 /* for the coordinator of a launcher that just ended */

static int read_address_once(const char *ckptdir, char *out, size_t len)
{
  char path[PATH_MAX + 32];
  ssize_t n;
  int fd;

  store_meta_file(ckptdir, STORE_PORT_FILE, path, sizeof(path));
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  n = read(fd, out, len - 1);
  close(fd);
  if (n <= 0)
    return -1;
  out[n] = '\0';
  out[strcspn(out, "\n")] = '\0';
  return out[0] ? 0 : -1;
}

/* The address of the live coordinator of ckptdir, waiting a little for one starting up. */
static int live_address(const char *ckptdir, char *out, size_t len)
{
  long long deadline = coord_now_ms() + ADDRESS_WAIT_MS;

  while (coord_dir_served(ckptdir)) {
    if (read_address_once(ckptdir, out, len) == 0)
      return 0;
    if (coord_now_ms() >= deadline)
      return -1;
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL);
  }
  return -1;
}

int launch_coord_find(const char *ckptdir, struct launch_coord *lc)
{
  memset(lc, 0, sizeof(*lc));
  if (live_address(ckptdir, lc->address, sizeof(lc->address)))
    return 0;
  store_meta_file(ckptdir, STORE_SECRET_FILE, lc->secret_file, sizeof(lc->secret_file));
  return 1;
}

int launch_coord_await(const char *ckptdir, long wait_ms, struct launch_coord *lc)
{
  long long deadline = coord_now_ms() + wait_ms;

  for (;;) {
    if (launch_coord_find(ckptdir, lc) == 1)
      return 1;
    if (coord_now_ms() >= deadline)
      return 0;
    nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000}, NULL);
  }
}

/* ------------------------------------------------------------------------------------- */
/* Reusing a coordinator that waits for a job                                            */
/* ------------------------------------------------------------------------------------- */

/* A coordinator is free for this job when no rank has ever connected to it and no
 * launcher owns it (JOB joined=0 watch=0): one started by hand to wait for a job. */
static int check_free(struct coord_client *c, bool *taken, char *err, size_t errlen)
{
  struct coord_msg msg;
  const char *joined, *watch;

  if (coord_client_send(c, coord_client_line(c, "STATUS")) ||
      coord_client_recv(c, &msg, CONTROL_TIMEOUT_MS) != 1 || strcmp(msg.verb, "JOB") != 0)
    return mana_fail(err, errlen, 0, "no status from the coordinator: %s", coord_client_error(c));
  joined = coord_msg_get(&msg, "joined");
  watch = coord_msg_get(&msg, "watch");
  *taken = (joined && strcmp(joined, "0") != 0) || (watch && strcmp(watch, "0") != 0);
  /* the rest of the reply is not needed: the connection is closed */
  return 0;
}

static int set_interval(struct coord_client *c, const char *interval, char *err, size_t errlen)
{
  struct coord_line *line = coord_client_line(c, "INTERVAL");
  struct coord_msg msg;
  uint64_t seconds = 0;

  coord_parse_u64(interval, &seconds);
  coord_line_u64(line, "seconds", seconds);
  if (coord_client_send(c, line))
    return mana_fail(err, errlen, 0, "%s", coord_client_error(c));
  /* STATUS's remaining lines come first; OK follows them */
  for (;;) {
    if (coord_client_recv(c, &msg, CONTROL_TIMEOUT_MS) != 1)
      return mana_fail(err, errlen, 0,
                       "the coordinator did not confirm the interval: "
                       "%s",
                       coord_client_error(c));
    if (strcmp(msg.verb, "OK") == 0)
      return 0;
    if (strcmp(msg.verb, "ERROR") == 0)
      return mana_fail(err, errlen, 0, "the coordinator refused the interval");
  }
}

enum reuse_result { REUSE_OK, REUSE_UNREACHABLE, REUSE_TAKEN, REUSE_ERROR };

/* A coordinator bound to another launcher exits with it: give it a moment to go. */
static bool wait_until_free(const char *ckptdir, int wait_ms)
{
  long long deadline = coord_now_ms() + wait_ms;

  while (coord_dir_served(ckptdir)) {
    if (coord_now_ms() >= deadline)
      return false;
    nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000}, NULL);
  }
  return true;
}

/* Whether the live coordinator of the directory can serve this job. */
static enum reuse_result reuse(const struct launch_coord_request *req, struct launch_coord *lc,
                               char *err, size_t errlen)
{
  char why[COORD_ERR_LEN * 2];
  struct coord_endpoint ep;
  struct coord_client *c;
  bool taken = false;
  int rc;

  store_meta_file(req->ckptdir, STORE_SECRET_FILE, lc->secret_file, sizeof(lc->secret_file));
  if (coord_endpoint_init(&ep, lc->address, lc->secret_file, err, errlen))
    return REUSE_ERROR;
  c = coord_client_connect(&ep, CONTROL_TIMEOUT_MS, why, sizeof(why));
  if (!c)
    return REUSE_UNREACHABLE;
  if (coord_client_hello_control(c, CONTROL_TIMEOUT_MS)) {
    mana_fail(err, errlen, 0, "%s (coordinator at %s)", coord_client_error(c), lc->address);
    rc = -1;
  } else {
    rc = check_free(c, &taken, err, errlen);
    if (rc == 0 && !taken && req->interval)
      rc = set_interval(c, req->interval, err, errlen);
  }
  coord_client_close(c);
  /* The coordinator of the job before this one closes its connections as it exits (its
   * launcher ended): that is no error when it is then gone. */
  if (rc && wait_until_free(req->ckptdir, TAKEN_WAIT_MS))
    return REUSE_UNREACHABLE;
  if (rc)
    return REUSE_ERROR;
  return taken ? REUSE_TAKEN : REUSE_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Starting one                                                                          */
/* ------------------------------------------------------------------------------------- */

#define MAX_ARGS 32

static void build_argv(const struct launch_coord_request *req, char *path, char *pid, char *ranks,
                       char **argv)
{
  int n = 0;

  argv[n++] = path;
  argv[n++] = "--daemon";
  argv[n++] = "--port";
  argv[n++] = "0";
  argv[n++] = "--ckptdir";
  argv[n++] = (char *)req->ckptdir;
  if (req->bound_to_caller) {
    argv[n++] = "--watch-pid";
    argv[n++] = pid;
  }
  if (req->host) {
    argv[n++] = "--host";
    argv[n++] = (char *)req->host;
  }
  if (req->ranks) {
    argv[n++] = "--ranks";
    argv[n++] = ranks;
  }
  if (req->interval) {
    argv[n++] = "--interval";
    argv[n++] = (char *)req->interval;
  }
  if (req->forked_writers)
    argv[n++] = "--forked-writers";
  if (req->incremental)
    argv[n++] = "--incremental";
  if (req->full_every) {
    argv[n++] = "--full-every";
    argv[n++] = (char *)req->full_every;
  }
  if (req->keep) {
    argv[n++] = "--keep";
    argv[n++] = (char *)req->keep;
  }
  if (req->ckpt_signal) {
    argv[n++] = "--ckpt-signal";
    argv[n++] = (char *)req->ckpt_signal;
  }
  if (req->ckpt_signal_action) {
    argv[n++] = "--ckpt-signal-action";
    argv[n++] = (char *)req->ckpt_signal_action;
  }
  if (req->command) {
    argv[n++] = "--command";
    argv[n++] = (char *)req->command;
  }
  argv[n] = NULL;
}

/* Reads the daemon's announcement "HOST:PORT PID" from fd. */
static int read_announcement(int fd, struct launch_coord *lc)
{
  char line[COORD_HOSTPORT_MAX + 32], *space;
  size_t got = 0;
  ssize_t n;

  while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
    n = read(fd, line + got, sizeof(line) - 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  line[got] = '\0';
  line[strcspn(line, "\n")] = '\0';
  space = strchr(line, ' ');
  if (!space)
    return -1;
  *space = '\0';
  if (strlen(line) >= sizeof(lc->address))
    return -1;
  memcpy(lc->address, line, strlen(line) + 1);
  lc->started_pid = (pid_t)atoi(space + 1);
  return lc->started_pid > 0 ? 0 : -1;
}

static int spawn(const struct launch_coord_request *req, struct launch_coord *lc, char *err,
                 size_t errlen)
{
  char path[PATH_MAX + 32], pid[24], ranks[24], *argv[MAX_ARGS];
  int out[2], status = 0, rc;
  pid_t child;

  snprintf(path, sizeof(path), "%s/mana_coordinator", req->bin_dir);
  snprintf(pid, sizeof(pid), "%d", (int)getpid());
  snprintf(ranks, sizeof(ranks), "%lu", req->ranks);
  build_argv(req, path, pid, ranks, argv);
  if (pipe2(out, O_CLOEXEC) != 0)
    return mana_fail(err, errlen, errno, "cannot create a pipe");
  fflush(NULL);
  child = fork();
  if (child < 0)
    return mana_fail(err, errlen, errno, "cannot fork");
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    /* Nothing else of ours: in the per-rank form rank 0's descriptors include its launcher's
     * (Hydra's PMI_FD), and a daemon holding one kept the job from ending while it lived. */
    close_range(3, ~0u, 0);
    execv(path, argv);
    fprintf(stderr, "mana_launch: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
  }
  close(out[1]);
  rc = read_announcement(out[0], lc);
  close(out[0]);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || rc != 0)
    return mana_fail(err, errlen, 0, "could not start the coordinator for %s (see above)",
                     req->ckptdir);
  store_meta_file(req->ckptdir, STORE_SECRET_FILE, lc->secret_file, sizeof(lc->secret_file));
  return 0;
}

int launch_coord_start(const struct launch_coord_request *req, struct launch_coord *lc, char *err,
                       size_t errlen)
{
  memset(lc, 0, sizeof(*lc));
  if (store_mkdirs(req->ckptdir, 0700, err, errlen))
    return -1;
  if (live_address(req->ckptdir, lc->address, sizeof(lc->address)) == 0) {
    switch (reuse(req, lc, err, errlen)) {
    case REUSE_OK:
      return 0;
    case REUSE_ERROR:
      return -1;
    case REUSE_TAKEN:
      if (!wait_until_free(req->ckptdir, TAKEN_WAIT_MS))
        return mana_fail(err, errlen, 0,
                         "checkpoint directory %s is in use by "
                         "another job (coordinator at %s); give another "
                         "--ckptdir",
                         req->ckptdir, lc->address);
      break;
    case REUSE_UNREACHABLE:
      break; /* it is going away; a new one waits for its lock */
    }
  }
  return spawn(req, lc, err, errlen);
}

void launch_coord_abandon(const struct launch_coord *lc)
{
  if (lc->started_pid > 0)
    kill(lc->started_pid, SIGTERM);
}
