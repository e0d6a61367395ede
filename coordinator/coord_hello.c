/* coord_hello: the first message of every connection. Nothing but a correct HELLO with the
 * job's secret gets a connection past this file; whatever else arrives closes that
 * connection with one log line and leaves the job alone. */
#include "coord_server.h"

#include "coord_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A connection that authenticated but cannot be admitted: a problem of the job, always
 * logged. */
static void reject(struct coordinator *co, struct conn *c, const char *reason)
{
  (void)co;
  coord_log("rejected connection from %s: %s", c->peer, reason);
  conn_reject(c, reason);
}

static void welcome(struct coordinator *co, struct conn *c)
{
  struct coord_line line;

  coord_line_start(&line, co->scratch, sizeof(co->scratch), "WELCOME");
  coord_line_u64(&line, "v", COORD_PROTO_VERSION);
  conn_send(c, &line);
}

int hello_learn_size(struct coordinator *co, uint64_t size, char *why, size_t whylen)
{
  if (co->size) {
    if (size == co->size)
      return 0;
    snprintf(why, whylen, "size=%" PRIu64 " does not match the job's %zu ranks", size, co->size);
    return -1;
  }
  if (size == 0 || size > COORD_MAX_RANKS) {
    snprintf(why, whylen, "size=%" PRIu64 " is out of range", size);
    return -1;
  }
  co->slots = calloc((size_t)size, sizeof(*co->slots));
  if (!co->slots) {
    snprintf(why, whylen, "out of memory for %" PRIu64 " ranks", size);
    return -1;
  }
  co->size = (size_t)size;
  return 0;
}

/* Every check comes before the size is learnt, so a bad first HELLO cannot set it. */
static int check_rank(struct coordinator *co, const struct coord_msg *msg, uint64_t *rank,
                      char *why, size_t whylen)
{
  uint64_t size;

  if (coord_msg_u64(msg, "rank", rank, why, whylen) ||
      coord_msg_u64(msg, "size", &size, why, whylen))
    return -1;
  if (co->size && size != co->size) {
    snprintf(why, whylen, "size=%" PRIu64 " does not match the job's %zu ranks", size, co->size);
    return -1;
  }
  if (*rank >= size) {
    snprintf(why, whylen, "rank=%" PRIu64 " is not below size=%" PRIu64, *rank, size);
    return -1;
  }
  if (co->size && co->slots[*rank].state == SLOT_CONNECTED) {
    snprintf(why, whylen,
             "rank %" PRIu64 " is already connected (is another job "
             "using this checkpoint directory?)",
             *rank);
    return -1;
  }
  if (co->ckpt) {
    snprintf(why, whylen, "a checkpoint is in progress");
    return -1;
  }
  return co->size ? 0 : hello_learn_size(co, size, why, whylen);
}

static void hello_rank(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  char why[COORD_ERR_LEN];
  const char *host = coord_msg_get(msg, "host");
  uint64_t rank, pid;
  struct rank_slot *slot;

  size_t known = co->size;

  if (coord_msg_u64(msg, "pid", &pid, why, sizeof(why)) ||
      check_rank(co, msg, &rank, why, sizeof(why))) {
    reject(co, c, why);
    return;
  }
  if (!known)
    coord_log("the job has %zu ranks (from the HELLO of rank %" PRIu64 ")", co->size, rank);
  slot = &co->slots[rank];
  slot->state = SLOT_CONNECTED;
  slot->conn = c;
  slot->pid = pid;
  slot->exiting = false;
  snprintf(slot->host, sizeof(slot->host), "%s", host && *host ? host : "?");
  c->role = CONN_RANK;
  c->rank = (size_t)rank;
  co->connected++;
  co->joined = true;
  welcome(co, c);
  coord_log("rank %" PRIu64 " connected from %s (host %s, pid %" PRIu64 ")%s", rank, c->peer,
            slot->host, pid, co->connected == co->size ? "; all ranks are in" : "");
  job_ranks_changed(co);
}

static void hello_control(struct coordinator *co, struct conn *c)
{
  if (co->controls >= COORD_MAX_CONTROL) {
    reject(co, c, "too many control connections");
    return;
  }
  c->role = CONN_CONTROL;
  co->controls++;
  welcome(co, c);
}

static int check_version(const struct coord_msg *msg, char *why, size_t whylen)
{
  uint64_t v;

  if (coord_msg_u64(msg, "v", &v, why, whylen))
    return -1;
  if (v != COORD_PROTO_VERSION) {
    snprintf(why, whylen,
             "unsupported protocol version %" PRIu64 " (this "
             "coordinator speaks version %d)",
             v, COORD_PROTO_VERSION);
    return -1;
  }
  return 0;
}

void hello_handle(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  char why[COORD_ERR_LEN];
  const char *secret = coord_msg_get(msg, "secret");
  const char *role = coord_msg_get(msg, "role");

  /* anyone who can reach the port can cause these: within the log budget */
  if (strcmp(msg->verb, "HELLO") != 0) {
    coord_refuse(co, c, "the first message must be HELLO");
    return;
  }
  if (check_version(msg, why, sizeof(why))) {
    coord_refuse(co, c, why);
    return;
  }
  if (!secret || !coord_secret_equal(co->secret, secret)) {
    coord_refuse(co, c, "authentication failed");
    return;
  }
  coord_unpend(co, c);
  if (role && strcmp(role, "rank") == 0)
    hello_rank(co, c, msg);
  else if (role && strcmp(role, "control") == 0)
    hello_control(co, c);
  else
    reject(co, c, "role= must be rank or control");
}

void hello_rank_gone(struct coordinator *co, struct conn *c)
{
  struct rank_slot *slot = &co->slots[c->rank];

  if (slot->conn != c)
    return;
  slot->conn = NULL;
  slot->state = SLOT_GONE;
  co->connected--;
  if (!slot->exiting)
    coord_log("rank %zu disconnected", c->rank);
  job_rank_disconnected(co, c->rank);
}
