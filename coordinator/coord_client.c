/* coord_client: a connection to the coordinator (see coord_client.h). */
#include "coord_client.h"

#include "coord_linebuf.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mana/fail.h"

#define DEFAULT_SEND_TIMEOUT_MS 10000

struct coord_client {
  int fd;
  int send_timeout_ms;
  char secret[COORD_SECRET_HEX + 1];
  struct coord_linebuf in;
  struct coord_line line;   /* the line being built */
  char out[COORD_LINE_MAX]; /* its storage */
  char error[COORD_ERR_LEN];
};

int coord_endpoint_init(struct coord_endpoint *ep, const char *hostport, const char *secret_file,
                        char *err, size_t errlen)
{
  memset(ep, 0, sizeof(*ep));
  if (coord_hostport_split(hostport, ep->host, ep->port, err, errlen))
    return -1;
  return coord_secret_load(secret_file, ep->secret, err, errlen);
}

int coord_endpoint_from_env(struct coord_endpoint *ep, char *err, size_t errlen)
{
  const char *hostport = getenv(COORD_ENV_ADDRESS);
  const char *secret = getenv(COORD_ENV_SECRET);

  if (!hostport || !*hostport)
    return 1;
  if (!secret || !*secret) {
    return mana_fail(err, errlen, 0,
                     "%s is set but %s is not: cannot authenticate to the "
                     "coordinator",
                     COORD_ENV_ADDRESS, COORD_ENV_SECRET);
  }
  return coord_endpoint_init(ep, hostport, secret, err, errlen);
}

struct coord_client *coord_client_connect(const struct coord_endpoint *ep, int timeout_ms,
                                          char *err, size_t errlen)
{
  struct coord_client *c;
  char local[COORD_LOCAL_NAME_MAX];
  size_t local_len = coord_local_name(ep->port, ep->secret, local);
  /* On the coordinator's host the local door comes first: no other user can hold it
   * full. Elsewhere the name is unknown (ECONNREFUSED at once) and TCP is used. */
  int fd = coord_connect_local(local, local_len);

  if (fd < 0)
    fd = coord_connect(ep->host, ep->port, timeout_ms, err, errlen);

  if (fd < 0)
    return NULL;
  c = calloc(1, sizeof(*c));
  if (!c) {
    mana_fail(err, errlen, 0, "out of memory for the coordinator connection");
    close(fd);
    return NULL;
  }
  c->fd = fd;
  c->send_timeout_ms = DEFAULT_SEND_TIMEOUT_MS;
  memcpy(c->secret, ep->secret, sizeof(c->secret));
  coord_linebuf_init(&c->in, COORD_LINE_MAX);
  return c;
}

void coord_client_close(struct coord_client *c)
{
  if (!c)
    return;
  close(c->fd);
  coord_linebuf_free(&c->in);
  /* the secret does not outlive the connection in freed memory */
  memset(c->secret, 0, sizeof(c->secret));
  free(c);
}

int coord_client_fd(const struct coord_client *c)
{
  return c->fd;
}

const char *coord_client_error(const struct coord_client *c)
{
  return c->error;
}

void coord_client_set_send_timeout(struct coord_client *c, int timeout_ms)
{
  c->send_timeout_ms = timeout_ms;
}

/* ------------------------------------------------------------------------------------- */
/* Sending                                                                               */
/* ------------------------------------------------------------------------------------- */

static int wait_fd(struct coord_client *c, short events, long long deadline)
{
  struct pollfd pfd = {.fd = c->fd, .events = events};
  int n;

  do
    n = poll(&pfd, 1, coord_remaining_ms(deadline));
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return mana_fail(c->error, sizeof(c->error), errno,
                     "poll on the coordinator connection failed");
  return n; /* 0: time ran out */
}

int coord_client_send_raw(struct coord_client *c, const void *data, size_t len)
{
  const char *p = data;
  long long deadline = c->send_timeout_ms < 0 ? -1 : coord_now_ms() + c->send_timeout_ms;

  while (len > 0) {
    ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
    int rc;

    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return mana_fail(c->error, sizeof(c->error), errno, "cannot send to the coordinator");
    rc = wait_fd(c, POLLOUT, deadline);
    if (rc < 0)
      return -1;
    if (rc == 0)
      return mana_fail(c->error, sizeof(c->error), 0,
                       "the coordinator did not accept data for %d ms", c->send_timeout_ms);
  }
  return 0;
}

struct coord_line *coord_client_line(struct coord_client *c, const char *verb)
{
  coord_line_start(&c->line, c->out, sizeof(c->out), verb);
  return &c->line;
}

int coord_client_send(struct coord_client *c, struct coord_line *line)
{
  if (coord_line_end(line))
    return mana_fail(c->error, sizeof(c->error), 0,
                     "message %.16s is malformed or longer than %d bytes", line->buf,
                     COORD_LINE_MAX);
  return coord_client_send_raw(c, line->buf, line->len);
}

/* ------------------------------------------------------------------------------------- */
/* Receiving                                                                             */
/* ------------------------------------------------------------------------------------- */

/* One complete buffered line, parsed: 1, 0 when none is buffered, -1 when bad. */
static int buffered_line(struct coord_client *c, struct coord_msg *msg)
{
  char *line, why[COORD_ERR_LEN];
  size_t len;
  int rc = coord_linebuf_next(&c->in, &line, &len);

  if (rc < 0)
    return mana_fail(c->error, sizeof(c->error), 0,
                     "the coordinator sent a line longer than %d bytes", COORD_LINE_MAX - 1);
  if (rc == 0)
    return 0;
  if (coord_msg_parse(line, len, msg, why, sizeof(why)))
    return mana_fail(c->error, sizeof(c->error), 0, "the coordinator sent a malformed line: %s",
                     why);
  return 1;
}

int coord_client_recv(struct coord_client *c, struct coord_msg *msg, int timeout_ms)
{
  long long deadline = timeout_ms < 0 ? -1 : coord_now_ms() + timeout_ms;

  for (;;) {
    int rc = buffered_line(c, msg);
    ssize_t n;

    if (rc != 0)
      return rc;
    n = coord_linebuf_fill(&c->in, c->fd);
    if (n > 0)
      continue;
    if (n == 0)
      return mana_fail(c->error, sizeof(c->error), 0, "the coordinator closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return mana_fail(c->error, sizeof(c->error), errno, "cannot read from the coordinator");
    rc = wait_fd(c, POLLIN, deadline);
    if (rc <= 0)
      return rc;
  }
}

/* ------------------------------------------------------------------------------------- */
/* HELLO                                                                                 */
/* ------------------------------------------------------------------------------------- */

/* Waits for WELCOME; an ERROR reply or anything else is a refusal. */
static int await_welcome(struct coord_client *c, int timeout_ms)
{
  struct coord_msg msg;
  const char *reason;
  int rc = coord_client_recv(c, &msg, timeout_ms);

  if (rc == 0)
    return mana_fail(c->error, sizeof(c->error), 0,
                     "the coordinator did not answer HELLO within %d ms", timeout_ms);
  if (rc < 0)
    return -1;
  if (strcmp(msg.verb, "WELCOME") == 0)
    return 0;
  reason = coord_msg_get(&msg, "reason");
  if (strcmp(msg.verb, "ERROR") == 0 && reason)
    return mana_fail(c->error, sizeof(c->error), 0, "the coordinator refused us: %s", reason);
  return mana_fail(c->error, sizeof(c->error), 0, "the coordinator answered HELLO with %s",
                   msg.verb);
}

static void hello_start(struct coord_client *c, const char *role)
{
  struct coord_line *line = coord_client_line(c, "HELLO");

  coord_line_u64(line, "v", COORD_PROTO_VERSION);
  coord_line_str(line, "secret", c->secret);
  coord_line_str(line, "role", role);
}

int coord_client_hello_rank(struct coord_client *c, uint32_t rank, uint32_t size, pid_t pid,
                            const char *host, int timeout_ms)
{
  char name[COORD_HOST_MAX] = "unknown";

  if (!host) {
    if (gethostname(name, sizeof(name)) == 0)
      name[sizeof(name) - 1] = '\0';
    host = name;
  }
  hello_start(c, "rank");
  coord_line_u64(&c->line, "rank", rank);
  coord_line_u64(&c->line, "size", size);
  coord_line_u64(&c->line, "pid", (uint64_t)pid);
  coord_line_str(&c->line, "host", host);
  if (coord_client_send(c, &c->line))
    return -1;
  return await_welcome(c, timeout_ms);
}

int coord_client_hello_control(struct coord_client *c, int timeout_ms)
{
  hello_start(c, "control");
  if (coord_client_send(c, &c->line))
    return -1;
  return await_welcome(c, timeout_ms);
}

int coord_rank_open(uint32_t rank, uint32_t size, int timeout_ms, struct coord_client **out,
                    char *err, size_t errlen)
{
  struct coord_endpoint ep;
  struct coord_client *c;
  int rc = coord_endpoint_from_env(&ep, err, errlen);

  *out = NULL;
  if (rc != 0)
    return rc;
  c = coord_client_connect(&ep, timeout_ms, err, errlen);
  memset(ep.secret, 0, sizeof(ep.secret));
  if (!c)
    return -1;
  if (coord_client_hello_rank(c, rank, size, getpid(), NULL, timeout_ms)) {
    mana_fail(err, errlen, 0, "%s", c->error);
    coord_client_close(c);
    return -1;
  }
  *out = c;
  return 0;
}
