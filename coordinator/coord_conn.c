/* coord_conn: one connection of the coordinator: input lines, bounded output queue. */
#include "coord_server.h"

#include "coord_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Enough for ERROR with any reason the coordinator writes, escaped. */
#define REJECT_LINE_MAX 4096

struct conn *conn_new(int fd, const char *peer, long long auth_deadline)
{
  struct conn *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  c->fd = fd;
  c->role = CONN_PENDING;
  c->auth_deadline = auth_deadline;
  snprintf(c->peer, sizeof(c->peer), "%s", peer);
  coord_linebuf_init(&c->in, COORD_LINE_MAX);
  return c;
}

void conn_free(struct conn *c)
{
  if (!c)
    return;
  if (c->fd >= 0)
    close(c->fd);
  coord_linebuf_free(&c->in);
  free(c->out);
  free(c);
}

bool conn_wants_write(const struct conn *c)
{
  return c->out_len > 0;
}

void conn_flush(struct conn *c)
{
  size_t sent = 0;

  while (sent < c->out_len) {
    ssize_t n = send(c->fd, c->out + sent, c->out_len - sent, MSG_NOSIGNAL);

    if (n > 0) {
      sent += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    /* the peer is gone; reading will tell the rest of the story */
    c->dead = true;
    c->out_len = 0;
    return;
  }
  memmove(c->out, c->out + sent, c->out_len - sent);
  c->out_len -= sent;
}

/* Room for len more bytes, within COORD_OUT_MAX. */
static bool reserve(struct conn *c, size_t len)
{
  size_t need = c->out_len + len, cap = c->out_cap ? c->out_cap : 4096;
  char *grown;

  if (need > COORD_OUT_MAX)
    return false;
  while (cap < need)
    cap *= 2;
  if (cap == c->out_cap)
    return true;
  grown = realloc(c->out, cap);
  if (!grown)
    return false;
  c->out = grown;
  c->out_cap = cap;
  return true;
}

void conn_queue(struct conn *c, const char *data, size_t len)
{
  if (c->dead)
    return;
  if (!reserve(c, len)) {
    /* It stopped reading: holding more for it would let one peer eat memory. */
    coord_log("dropping %s: it does not read what it is sent", c->peer);
    c->dead = true;
    return;
  }
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
  conn_flush(c);
}

void conn_send(struct conn *c, struct coord_line *line)
{
  if (coord_line_end(line)) {
    coord_log("internal error: could not format a %.16s message for %s", line->buf, c->peer);
    return;
  }
  conn_queue(c, line->buf, line->len);
}

void conn_reject(struct conn *c, const char *reason)
{
  char buf[REJECT_LINE_MAX];
  struct coord_line line;

  coord_line_start(&line, buf, sizeof(buf), "ERROR");
  coord_line_str(&line, "reason", reason);
  conn_send(c, &line);
  c->closing = true;
  c->close_deadline = coord_now_ms() + COORD_CLOSE_GRACE_MS;
}
