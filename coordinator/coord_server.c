/* coord_server: the event loop (see coord_server.h). */
#define _GNU_SOURCE /* accept4 */
#include "coord_server.h"
#include "ckpt_signal.h"

#include "coord_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "mana/fail.h"

/* Without a pidfd the watched process is polled this often. */
#define WATCH_POLL_MS 1000

int64_t coord_wall_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void coord_unpend(struct coordinator *co, struct conn *c)
{
  if (!c->pending)
    return;
  c->pending = false;
  if (c->local) {
    co->pending_local--;
    return;
  }
  co->pending--;
  if (c->older)
    c->older->newer = c->newer;
  else
    co->pend_oldest = c->newer;
  if (c->newer)
    c->newer->older = c->older;
  else
    co->pend_newest = c->older;
  c->older = c->newer = NULL;
}

void coord_refuse(struct coordinator *co, struct conn *c, const char *why)
{
  coord_unpend(co, c);
  coord_log_limited(&co->reject_log, "rejected connection from %s: %s", c->peer, why);
  conn_reject(c, why);
}

static void remove_port_files(struct coordinator *co)
{
  /* A port file names a live coordinator; left behind it would send clients to a dead
   * port. */
  unlink(co->port_file);
  if (co->cfg->port_file)
    unlink(co->cfg->port_file);
}

void coord_stop(struct coordinator *co, int code, const char *why)
{
  if (co->stopping)
    return;
  co->stopping = true;
  co->exit_code = code;
  co->stop_deadline = coord_now_ms() + COORD_EXIT_GRACE_MS;
  coord_log("exiting: %s", why);
  remove_port_files(co);
}

/* ------------------------------------------------------------------------------------- */
/* Connections                                                                           */
/* ------------------------------------------------------------------------------------- */

/* The peer as "address:port" for the log and its address alone for the per-source limit. */
static void peer_name(const struct sockaddr_storage *ss, char *out, size_t len, char *source,
                      size_t source_len)
{
  char addr[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;

  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

    inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
    port = ntohs(in->sin_port);
  } else if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

    inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
    port = ntohs(in6->sin6_port);
  }
  coord_hostport_join(out, len, addr, port);
  snprintf(source, source_len, "%s", addr);
}

static int add_conn(struct coordinator *co, struct conn *c)
{
  if (co->nconns == co->conns_cap) {
    size_t cap = co->conns_cap ? co->conns_cap * 2 : 64;
    struct conn **grown = realloc(co->conns, cap * sizeof(*grown));

    if (!grown)
      return -1;
    co->conns = grown;
    co->conns_cap = cap;
  }
  co->conns[co->nconns++] = c;
  return 0;
}

static void read_conn(struct coordinator *co, struct conn *c);

/* Drops a pending connection to make room for a newer one; it gets no ERROR line (it has
 * not spoken, and may not read). */
static void evict(struct coordinator *co, struct conn *c, const char *why)
{
  coord_unpend(co, c);
  coord_log_limited(&co->reject_log, "dropped connection from %s: %s", c->peer, why);
  c->dead = true;
}

/* Makes room for one more pending TCP connection from source. */
static void make_room(struct coordinator *co, const char *source)
{
  struct conn *oldest_here = NULL;
  size_t here = 0;

  for (struct conn *c = co->pend_oldest; c; c = c->newer)
    if (strcmp(c->source, source) == 0 && here++ == 0)
      oldest_here = c;
  if (here >= COORD_MAX_PENDING_SOURCE)
    evict(co, oldest_here,
          "its address has too many connections waiting to "
          "authenticate");
  else if (co->pending >= COORD_MAX_PENDING)
    evict(co, co->pend_oldest, "too many connections are waiting to authenticate");
}

static void queue_pending(struct coordinator *co, struct conn *c)
{
  c->pending = true;
  if (c->local) {
    co->pending_local++;
    return;
  }
  co->pending++;
  c->older = co->pend_newest;
  if (co->pend_newest)
    co->pend_newest->newer = c;
  else
    co->pend_oldest = c;
  co->pend_newest = c;
}

static void accept_one(struct coordinator *co, int fd, const char *peer, const char *source,
                       bool local)
{
  struct conn *c;
  int one = 1;

  if (co->stopping) {
    close(fd);
    return;
  }
  if (local && co->pending_local >= COORD_MAX_PENDING_LOCAL) {
    /* only the owner can get here: it is its own flood */
    coord_log_limited(&co->reject_log,
                      "rejected connection from %s: %d local "
                      "connections are already waiting to authenticate",
                      peer, COORD_MAX_PENDING_LOCAL);
    close(fd);
    return;
  }
  if (!local) {
    make_room(co, source);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  c = conn_new(fd, peer, coord_now_ms() + co->cfg->auth_timeout_ms);
  if (!c || add_conn(co, c)) {
    coord_log("rejected connection from %s: out of memory", peer);
    if (c)
      conn_free(c);
    else
      close(fd);
    return;
  }
  snprintf(c->source, sizeof(c->source), "%s", source);
  c->local = local;
  queue_pending(co, c);
  /* A client that means it has sent its HELLO by now: reading it at once admits it
   * before newer connections of a flood can push it out of the queue. */
  read_conn(co, c);
}

static void accept_all(struct coordinator *co)
{
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char peer[64], source[48];
    int fd = accept4(co->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        coord_log("accept failed: %s", strerror(errno));
      return;
    }
    peer_name(&ss, peer, sizeof(peer), source, sizeof(source));
    accept_one(co, fd, peer, source, false);
  }
}

/* The local socket admits only the user the coordinator runs as, and root. */
static bool local_peer_allowed(struct coordinator *co, int fd, char *peer, size_t len)
{
  struct ucred cred;
  socklen_t cl = sizeof(cred);

  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
    coord_log_limited(&co->reject_log,
                      "rejected local connection: cannot learn "
                      "its user: %s",
                      strerror(errno));
    return false;
  }
  snprintf(peer, len, "local pid %d", (int)cred.pid);
  if (cred.uid == geteuid() || cred.uid == 0)
    return true;
  coord_log_limited(&co->reject_log,
                    "rejected local connection from pid %d: user %u "
                    "is not the job's owner",
                    (int)cred.pid, (unsigned)cred.uid);
  return false;
}

static void accept_all_local(struct coordinator *co)
{
  for (;;) {
    char peer[64];
    int fd = accept4(co->local_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        coord_log("accept on the local socket failed: %s", strerror(errno));
      return;
    }
    if (!local_peer_allowed(co, fd, peer, sizeof(peer))) {
      close(fd);
      continue;
    }
    accept_one(co, fd, peer, "local", true);
  }
}

/* A connection sent something that is not a protocol line. */
static void bad_input(struct coordinator *co, struct conn *c, const char *why)
{
  switch (c->role) {
  case CONN_PENDING:
    coord_refuse(co, c, why);
    return;
  case CONN_RANK:
    coord_log("rank %zu (%s): %s; closing its connection", c->rank, c->peer, why);
    hello_rank_gone(co, c);
    break;
  case CONN_CONTROL:
    coord_log("control connection %s: %s; closing it", c->peer, why);
    break;
  }
  conn_reject(c, why);
}

static void dispatch_line(struct coordinator *co, struct conn *c, char *text, size_t len)
{
  char why[COORD_ERR_LEN], what[COORD_ERR_LEN + 32];
  struct coord_msg msg;

  if (coord_msg_parse(text, len, &msg, why, sizeof(why))) {
    snprintf(what, sizeof(what), "malformed message: %s", why);
    bad_input(co, c, what);
    return;
  }
  switch (c->role) {
  case CONN_PENDING:
    hello_handle(co, c, &msg);
    break;
  case CONN_RANK:
    job_rank_message(co, c, &msg);
    break;
  case CONN_CONTROL:
    control_message(co, c, &msg);
    break;
  }
}

static void read_conn(struct coordinator *co, struct conn *c)
{
  char *text;
  size_t len;
  ssize_t n = coord_linebuf_fill(&c->in, c->fd);
  int rc;

  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)) {
    c->dead = true;
    return;
  }
  while (!c->dead && !c->closing && (rc = coord_linebuf_next(&c->in, &text, &len)) != 0) {
    if (rc < 0) {
      bad_input(co, c, "line longer than the protocol allows");
      return;
    }
    dispatch_line(co, c, text, len);
  }
}

/* Everything that must happen when a connection goes away for good. */
static void forget_conn(struct coordinator *co, struct conn *c)
{
  switch (c->role) {
  case CONN_PENDING:
    coord_unpend(co, c);
    break;
  case CONN_RANK:
    hello_rank_gone(co, c);
    break;
  case CONN_CONTROL:
    co->controls--;
    break;
  }
}

static bool finished(const struct conn *c, long long now)
{
  if (c->dead)
    return true;
  return c->closing && (c->out_len == 0 || now >= c->close_deadline);
}

static void sweep(struct coordinator *co)
{
  long long now = coord_now_ms();

  for (size_t i = 0; i < co->nconns;) {
    struct conn *c = co->conns[i];

    if (!finished(c, now)) {
      i++;
      continue;
    }
    co->conns[i] = co->conns[--co->nconns];
    forget_conn(co, c);
    conn_free(c);
  }
}

static void check_auth_deadlines(struct coordinator *co, long long now)
{
  char why[96];

  for (size_t i = 0; i < co->nconns; i++) {
    struct conn *c = co->conns[i];

    if (c->role != CONN_PENDING || c->closing || c->dead || now < c->auth_deadline)
      continue;
    snprintf(why, sizeof(why), "no HELLO within %u ms", co->cfg->auth_timeout_ms);
    bad_input(co, c, why);
  }
}

/* ------------------------------------------------------------------------------------- */
/* The loop                                                                              */
/* ------------------------------------------------------------------------------------- */

static void handled_signals(sigset_t *set, const struct coord_config *cfg)
{
  sigemptyset(set);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGHUP);
  if (cfg->ckpt_signal) /* may be one of the three: then it checkpoints */
    sigaddset(set, cfg->ckpt_signal);
}

int coord_block_signals(const struct coord_config *cfg)
{
  sigset_t set;

  handled_signals(&set, cfg);
  return sigprocmask(SIG_BLOCK, &set, NULL);
}

static int open_signalfd(const struct coord_config *cfg, char *err, size_t errlen)
{
  sigset_t set;
  int fd;

  handled_signals(&set, cfg);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
    return mana_fail(err, errlen, errno, "cannot block signals");
  }
  fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0)
    mana_fail(err, errlen, errno, "cannot create a signalfd");
  return fd;
}

/* The checkpoint signal (Slurm's warning before the end of the allocation reaches every
 * process of the job step, the coordinator too): the same request the ranks make. */
static void on_checkpoint_signal(struct coordinator *co, int signo)
{
  char why[COORD_ERR_LEN * 2], origin[64], name[16];
  uint64_t gen;
  bool committed;
  int rc;

  snprintf(origin, sizeof(origin), "the coordinator received SIG%s",
           ckpt_signal_name(signo, name, sizeof(name)));
  if (co->cfg->ckpt_signal_kill)
    rc = job_checkpoint_then_exit(co, MANA_EXIT_CHECKPOINTED, origin, &gen, &committed, why,
                                  sizeof(why));
  else
    rc = job_start_checkpoint(co, origin, &gen, why, sizeof(why));
  if (rc)
    coord_log("%s; no checkpoint: %s", origin, why);
}

static void on_signal(struct coordinator *co)
{
  struct signalfd_siginfo si;
  char why[64];

  if (read(co->signal_fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
    return;
  if (co->cfg->ckpt_signal && (int)si.ssi_signo == co->cfg->ckpt_signal) {
    on_checkpoint_signal(co, (int)si.ssi_signo);
    return;
  }
  snprintf(why, sizeof(why), "received %s", strsignal((int)si.ssi_signo));
  job_abort(co, "the coordinator was stopped by a signal");
  coord_stop(co, 0, why);
}

static void on_launcher_exit(struct coordinator *co)
{
  char why[64];

  snprintf(why, sizeof(why), "the launcher (pid %d) exited", (int)co->cfg->watch_pid);
  job_abort(co, "the job's launcher exited");
  coord_stop(co, 0, why);
}

static long long earliest(long long a, long long b)
{
  if (a < 0)
    return b;
  if (b < 0)
    return a;
  return a < b ? a : b;
}

static long long connect_deadline(const struct coordinator *co)
{
  if (co->joined || !co->cfg->connect_timeout)
    return -1;
  return co->started_ms + (long long)co->cfg->connect_timeout * 1000;
}

static long long next_deadline(const struct coordinator *co)
{
  long long d = -1;

  for (size_t i = 0; i < co->nconns; i++) {
    const struct conn *c = co->conns[i];

    if (c->closing)
      d = earliest(d, c->close_deadline);
    else if (c->role == CONN_PENDING)
      d = earliest(d, c->auth_deadline);
  }
  d = earliest(d, co->next_ckpt_ms);
  d = earliest(d, job_deadline(co));
  if (co->reject_log.dropped)
    d = earliest(d, co->reject_log.window_start + COORD_LOG_WINDOW_MS);
  d = earliest(d, connect_deadline(co));
  if (co->stopping)
    d = earliest(d, co->stop_deadline);
  if (co->cfg->watch_pid && co->watch_fd < 0)
    d = earliest(d, coord_now_ms() + WATCH_POLL_MS);
  return d;
}

/* The fixed descriptors come first in the poll array. */
enum { PFD_LISTEN, PFD_LOCAL, PFD_SIGNAL, PFD_WATCH, PFD_FIXED };

static struct pollfd *build_pollfds(struct coordinator *co, struct pollfd *pfds)
{
  pfds[PFD_LISTEN] = (struct pollfd){.fd = co->stopping ? -1 : co->listen_fd, .events = POLLIN};
  pfds[PFD_LOCAL] = (struct pollfd){.fd = co->stopping ? -1 : co->local_fd, .events = POLLIN};
  pfds[PFD_SIGNAL] = (struct pollfd){.fd = co->signal_fd, .events = POLLIN};
  pfds[PFD_WATCH] = (struct pollfd){.fd = co->watch_fd, .events = POLLIN};
  for (size_t i = 0; i < co->nconns; i++) {
    const struct conn *c = co->conns[i];

    pfds[PFD_FIXED + i].fd = c->fd;
    pfds[PFD_FIXED + i].events =
        (short)((c->closing ? 0 : POLLIN) | (conn_wants_write(c) ? POLLOUT : 0));
    pfds[PFD_FIXED + i].revents = 0;
  }
  return pfds;
}

static void serve_conns(struct coordinator *co, const struct pollfd *pfds, size_t count)
{
  for (size_t i = 0; i < count && i < co->nconns; i++) {
    struct conn *c = co->conns[i];
    short ev = pfds[PFD_FIXED + i].revents;

    if (ev & POLLOUT)
      conn_flush(c);
    if (ev & (POLLIN | POLLHUP | POLLERR))
      read_conn(co, c);
  }
}

static void run_timers(struct coordinator *co)
{
  long long now = coord_now_ms();

  check_auth_deadlines(co, now);
  coord_log_limit_tick(&co->reject_log);
  job_check_deadlines(co, now);
  if (co->next_ckpt_ms >= 0 && now >= co->next_ckpt_ms && !co->stopping)
    job_timer(co);
  if (connect_deadline(co) >= 0 && now >= connect_deadline(co)) {
    char why[96];

    snprintf(why, sizeof(why), "no rank connected within %u s", co->cfg->connect_timeout);
    coord_stop(co, 1, why);
  }
  if (co->cfg->watch_pid && co->watch_fd < 0 && kill(co->cfg->watch_pid, 0) != 0 && errno == ESRCH)
    on_launcher_exit(co);
}

static bool all_flushed(const struct coordinator *co)
{
  for (size_t i = 0; i < co->nconns; i++)
    if (conn_wants_write(co->conns[i]) && !co->conns[i]->dead)
      return false;
  return true;
}

static int one_round(struct coordinator *co)
{
  size_t count = co->nconns;
  struct pollfd *pfds = malloc((PFD_FIXED + count) * sizeof(*pfds));
  int n;

  if (!pfds) {
    coord_log("out of memory in the event loop");
    return -1;
  }
  build_pollfds(co, pfds);
  n = poll(pfds, PFD_FIXED + count, coord_remaining_ms(next_deadline(co)));
  if (n < 0 && errno != EINTR) {
    coord_log("poll failed: %s", strerror(errno));
    free(pfds);
    return -1;
  }
  if (n > 0) {
    if (pfds[PFD_SIGNAL].revents & POLLIN)
      on_signal(co);
    if (pfds[PFD_WATCH].revents & (POLLIN | POLLHUP))
      on_launcher_exit(co);
    serve_conns(co, pfds, count);
    if (pfds[PFD_LISTEN].revents & POLLIN)
      accept_all(co);
    if (pfds[PFD_LOCAL].revents & POLLIN)
      accept_all_local(co);
  }
  free(pfds);
  run_timers(co);
  sweep(co);
  return 0;
}

static void close_all(struct coordinator *co)
{
  for (size_t i = 0; i < co->nconns; i++)
    conn_free(co->conns[i]);
  free(co->conns);
  co->conns = NULL;
  co->nconns = 0;
  free(co->slots);
  co->slots = NULL;
  ckpt_free(co->ckpt);
  co->ckpt = NULL;
}

int coord_serve(struct coordinator *co)
{
  char err[COORD_ERR_LEN];

  co->signal_fd = open_signalfd(co->cfg, err, sizeof(err));
  if (co->signal_fd < 0) {
    coord_log("%s", err);
    return 1;
  }
  co->started_ms = coord_now_ms();
  co->reject_log.what = "refused connections";
  co->next_ckpt_ms = co->ckpt_deadline = co->stall_deadline = -1;
  coord_log("listening on %s for the job in %s", co->address, co->store.dir);
  if (co->cfg->incremental)
    coord_log("incremental checkpoints: a full one every %u", co->cfg->full_every);
  if (co->cfg->keep)
    coord_log("keeping the %u newest committed generations and what they need", co->cfg->keep);
  while (!co->stopping || (!all_flushed(co) && coord_now_ms() < co->stop_deadline))
    if (one_round(co)) {
      coord_stop(co, 1, "internal error");
      break;
    }
  close_all(co);
  close(co->signal_fd);
  return co->exit_code;
}
