/* coord_control: commands from control clients (mana_status, mana_launch): STATUS,
 * CHECKPOINT, INTERVAL, QUIT. A command that cannot be carried out gets ERROR with the
 * reason and the connection stays open. */
#include "coord_server.h"

#include "coord_log.h"
#include "coord_manifest.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void reply_error(struct coordinator *co, struct conn *c, const char *reason)
{
  struct coord_line line;

  coord_line_start(&line, co->scratch, sizeof(co->scratch), "ERROR");
  coord_line_str(&line, "reason", reason);
  conn_send(c, &line);
}

static void seconds_field(struct coord_line *line, const char *key, long long ms)
{
  char text[32];

  snprintf(text, sizeof(text), "%lld.%03lld", ms / 1000, ms % 1000);
  coord_line_str(line, key, text);
}

static void us_field(struct coord_line *line, const char *key, long long us)
{
  char text[32];

  snprintf(text, sizeof(text), "%lld.%06lld", us / 1000000, us % 1000000);
  coord_line_str(line, key, text);
}

static const char *job_state(const struct coordinator *co)
{
  if (co->ckpt)
    return "checkpointing";
  if (co->ending)
    return "ending";
  if (!co->size || co->connected < co->size)
    return co->all_joined ? "degraded" : "waiting";
  return "running";
}

static void status_checkpoint_fields(struct coordinator *co, struct coord_line *line)
{
  const struct ckpt *c = co->ckpt;

  coord_line_u64(line, "gen", c->gen);
  coord_line_str(line, "phase", ckpt_phase_name(c->phase));
  coord_line_u64(line, "epoch", c->epoch);
  seconds_field(line, "elapsed", coord_now_ms() - co->ckpt_start_ms);
  coord_line_u64(line, "bytes", ckpt_bytes(c));
  coord_line_u64(line, "kill", co->ckpt_kill);
  coord_line_u64(line, "raises", c->raises);
  coord_line_u64(line, "releases", c->releases);
}

static void status_history_fields(struct coordinator *co, struct coord_line *line)
{
  char when[40];

  coord_line_u64(line, "committed", co->committed);
  if (co->committed && co->committed_chain_known) {
    coord_line_u64(line, "committed_depth", co->committed_depth);
    coord_line_u64(line, "committed_needs", co->committed_needs);
  }
  if (co->committed && co->committed_wall) { /* 0: read from LATEST at start */
    manifest_time(co->committed_wall, when, sizeof(when));
    coord_line_str(line, "committed_at", when);
    seconds_field(line, "committed_seconds", co->committed_span_ms);
    us_field(line, "committed_sync_seconds", co->committed_sync_us);
    us_field(line, "committed_write_seconds", co->committed_write_us);
    us_field(line, "committed_drain_seconds", co->committed_drain_us);
    coord_line_u64(line, "committed_bytes", co->committed_bytes);
  }
  if (co->last_error_gen) {
    coord_line_u64(line, "error_gen", co->last_error_gen);
    coord_line_str(line, "error", co->last_error);
  }
}

static void status_job_line(struct coordinator *co, struct conn *c)
{
  struct coord_line line;

  coord_line_start(&line, co->scratch, sizeof(co->scratch), "JOB");
  coord_line_u64(&line, "v", COORD_PROTO_VERSION);
  coord_line_u64(&line, "pid", (uint64_t)getpid());
  coord_line_str(&line, "address", co->address);
  coord_line_str(&line, "ckptdir", co->store.dir);
  coord_line_str(&line, "state", job_state(co));
  coord_line_u64(&line, "size", co->size);
  coord_line_u64(&line, "connected", co->connected);
  coord_line_u64(&line, "joined", co->joined);
  coord_line_u64(&line, "watch", (uint64_t)co->cfg->watch_pid);
  coord_line_u64(&line, "interval", co->interval);
  if (co->next_ckpt_ms >= 0)
    seconds_field(&line, "next_in",
                  co->next_ckpt_ms - coord_now_ms() > 0 ? co->next_ckpt_ms - coord_now_ms() : 0);
  if (co->ckpt)
    status_checkpoint_fields(co, &line);
  status_history_fields(co, &line);
  conn_send(c, &line);
}

static const char *rank_state(const struct coordinator *co, size_t rank)
{
  const struct rank_slot *slot = &co->slots[rank];

  switch (slot->state) {
  case SLOT_WAITING:
    return "waiting";
  case SLOT_GONE:
    return "gone";
  case SLOT_CONNECTED:
    break;
  }
  if (co->ckpt)
    return ckpt_rank_state_name(co->ckpt->ranks[rank].state);
  return slot->exiting ? "committed" : "running";
}

static void status_rank_line(struct coordinator *co, struct conn *c, size_t rank)
{
  const struct rank_slot *slot = &co->slots[rank];
  struct coord_line line;

  coord_line_start(&line, co->scratch, sizeof(co->scratch), "RANK");
  coord_line_u64(&line, "rank", rank);
  coord_line_str(&line, "state", rank_state(co, rank));
  if (slot->state != SLOT_WAITING) {
    coord_line_str(&line, "host", slot->host);
    coord_line_u64(&line, "pid", slot->pid);
  }
  if (co->ckpt)
    coord_line_u64(&line, "bytes", co->ckpt->ranks[rank].bytes);
  conn_send(c, &line);
}

static void status(struct coordinator *co, struct conn *c)
{
  struct coord_line line;

  status_job_line(co, c);
  for (size_t i = 0; i < co->size; i++)
    status_rank_line(co, c, i);
  coord_line_start(&line, co->scratch, sizeof(co->scratch), "END");
  conn_send(c, &line);
}

static void checkpoint(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  char why[COORD_ERR_LEN * 2], origin[96];
  struct coord_line line;
  bool wait, kill, join, committed = false;
  uint64_t gen, status = 0;
  int rc;

  if (coord_msg_flag(msg, "wait", &wait, why, sizeof(why)) ||
      coord_msg_flag(msg, "kill", &kill, why, sizeof(why)) ||
      coord_msg_flag(msg, "join", &join, why, sizeof(why))) {
    reply_error(co, c, why);
    return;
  }
  if (coord_msg_get(msg, "status") &&
      (coord_msg_u64(msg, "status", &status, why, sizeof(why)) || status > 255 || !kill)) {
    reply_error(co, c, "status=N (0 to 255) goes with kill=1: the ranks' exit status");
    return;
  }
  snprintf(origin, sizeof(origin), "requested from %s", c->peer);
  if (kill) {
    rc = job_checkpoint_then_exit(co, (unsigned)status, origin, &gen, &committed, why, sizeof(why));
  } else if (join && co->ckpt) { /* another rank's request started it */
    gen = co->ckpt->gen;
    rc = 0;
  } else {
    rc = job_start_checkpoint(co, origin, &gen, why, sizeof(why));
  }
  if (rc) {
    reply_error(co, c, why);
    return;
  }
  coord_line_start(&line, co->scratch, sizeof(co->scratch), "OK");
  coord_line_u64(&line, "gen", gen);
  conn_send(c, &line);
  if (wait) {
    c->done_gen = gen;
    if (committed) /* the job is already ending after it */
      control_done(co, gen, true, NULL);
  }
}

static void interval(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  char why[COORD_ERR_LEN];
  struct coord_line line;
  uint64_t seconds;

  if (coord_msg_u64(msg, "seconds", &seconds, why, sizeof(why)) || seconds > UINT32_MAX) {
    reply_error(co, c, "INTERVAL needs seconds=N (0 turns periodic checkpoints off)");
    return;
  }
  co->interval = (unsigned)seconds;
  job_schedule(co);
  coord_log("checkpoint interval set to %u s by %s", co->interval, c->peer);
  coord_line_start(&line, co->scratch, sizeof(co->scratch), "OK");
  coord_line_u64(&line, "interval", seconds);
  conn_send(c, &line);
}

static void quit(struct coordinator *co, struct conn *c)
{
  struct coord_line line;
  char why[96];

  job_abort(co, "the coordinator was told to quit");
  coord_line_start(&line, co->scratch, sizeof(co->scratch), "QUIT");
  coord_line_str(&line, "reason", "the job was killed with mana_status --quit");
  job_broadcast(co, &line);
  coord_line_start(&line, co->scratch, sizeof(co->scratch), "OK");
  conn_send(c, &line);
  snprintf(why, sizeof(why), "told to quit by %s", c->peer);
  coord_stop(co, 0, why);
}

void control_message(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  char why[COORD_ERR_LEN];

  if (strcmp(msg->verb, "STATUS") == 0) {
    status(co, c);
  } else if (strcmp(msg->verb, "CHECKPOINT") == 0) {
    checkpoint(co, c, msg);
  } else if (strcmp(msg->verb, "INTERVAL") == 0) {
    interval(co, c, msg);
  } else if (strcmp(msg->verb, "QUIT") == 0) {
    quit(co, c);
  } else {
    snprintf(why, sizeof(why), "unknown command %s", msg->verb);
    reply_error(co, c, why);
  }
}

void control_done(struct coordinator *co, uint64_t gen, bool committed, const char *reason)
{
  struct coord_line line;

  for (size_t i = 0; i < co->nconns; i++) {
    struct conn *c = co->conns[i];

    if (c->role != CONN_CONTROL || c->done_gen != gen)
      continue;
    coord_line_start(&line, co->scratch, sizeof(co->scratch), "DONE");
    coord_line_u64(&line, "gen", gen);
    coord_line_str(&line, "status", committed ? "committed" : "aborted");
    if (committed) {
      coord_line_u64(&line, "bytes", co->committed_bytes);
      seconds_field(&line, "seconds", co->committed_span_ms);
    } else {
      coord_line_str(&line, "reason", reason);
    }
    conn_send(c, &line);
    c->done_gen = 0;
  }
}
