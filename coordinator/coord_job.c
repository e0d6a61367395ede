/* coord_job: the ranks' messages and the life of a generation. coord_ckpt decides; this
 * file talks to the ranks and the disk and keeps the job-level record (last commit, last
 * failure) that STATUS shows. */
#include "coord_server.h"

#include "coord_log.h"
#include "coord_manifest.h"
#include "coord_store_prune.h"

#include "mana/fault.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mana/fail.h"

/* The stall grace period (docs/checkpoint-protocol.md, 1.5): short at first, so that a
 * real stall costs little; doubled after every release of the same generation, so that
 * releases on a view that was about to change stay rare; bounded, so that a real stall
 * never waits long. */
#define STALL_GRACE_FIRST_MS 5
#define STALL_GRACE_MAX_MS 1000

void job_broadcast(struct coordinator *co, struct coord_line *line)
{
  if (coord_line_end(line)) {
    coord_log("internal error: could not format a %.16s message", line->buf);
    return;
  }
  for (size_t i = 0; i < co->size; i++)
    if (co->slots[i].state == SLOT_CONNECTED)
      conn_queue(co->slots[i].conn, line->buf, line->len);
}

static struct coord_line *start_line(struct coordinator *co, struct coord_line *line,
                                     const char *verb)
{
  coord_line_start(line, co->scratch, sizeof(co->scratch), verb);
  coord_line_u64(line, "gen", co->ckpt->gen);
  return line;
}

void job_schedule(struct coordinator *co)
{
  if (co->kill_after && !co->ending && !co->ckpt)
    co->next_ckpt_ms = coord_now_ms(); /* at once, from the loop (not while it stops) */
  else if (co->interval && !co->ending && !co->ckpt)
    co->next_ckpt_ms = coord_now_ms() + (long long)co->interval * 1000;
  else
    co->next_ckpt_ms = -1;
}

/* ------------------------------------------------------------------------------------- */
/* Ending a generation                                                                   */
/* ------------------------------------------------------------------------------------- */

static void finish(struct coordinator *co)
{
  ckpt_free(co->ckpt);
  co->ckpt = NULL;
  co->ckpt_deadline = co->stall_deadline = -1;
  job_schedule(co);
}

static void abort_now(struct coordinator *co)
{
  struct coord_line line;
  char err[COORD_ERR_LEN * 2];
  uint64_t gen = co->ckpt->gen;

  start_line(co, &line, "ABORT");
  coord_line_str(&line, "reason", co->ckpt->reason);
  job_broadcast(co, &line);
  if (store_gen_remove(&co->store, gen, err, sizeof(err)))
    coord_log("generation %" PRIu64 ": %s", gen, err);
  snprintf(co->last_error, sizeof(co->last_error), "%s", co->ckpt->reason);
  co->last_error_gen = gen;
  coord_log("generation %" PRIu64 " aborted: %s", gen, co->ckpt->reason);
  control_done(co, gen, false, co->ckpt->reason);
  finish(co);
}

void job_abort(struct coordinator *co, const char *reason)
{
  if (!co->ckpt)
    return;
  ckpt_abort(co->ckpt, "%s", reason);
  abort_now(co);
}

static int check_images(struct coordinator *co, char *err, size_t errlen)
{
  for (size_t i = 0; i < co->size; i++) {
    const struct ckpt_rank *r = &co->ckpt->ranks[i];

    if (store_check_image(&co->store, co->ckpt->gen, r->file, r->bytes, err, errlen))
      return -1;
  }
  return 0;
}

/* Depth 0 whenever no image refers to an older generation, base or not: a rank may write
 * a full image though it was offered a base (one restarted from another generation cannot
 * write against it), and the chain then starts afresh. */
static uint64_t depth_of(const struct coordinator *co, uint64_t needs)
{
  return needs == co->ckpt->gen || !co->ckpt->base ? 0 : co->committed_depth + 1;
}

static int write_manifest(struct coordinator *co, int64_t now_wall, char *err, size_t errlen)
{
  struct manifest_rank *ranks = calloc(co->size, sizeof(*ranks));
  uint64_t needs = ckpt_needs(co->ckpt);
  struct manifest m = {
      .gen = co->ckpt->gen,
      .previous = co->committed,
      .size = co->size,
      .started_ms = co->ckpt_start_wall,
      .committed_ms = now_wall,
      .needs = needs,
      .depth = depth_of(co, needs),
      .command = co->cfg->command,
      .ranks = ranks,
  };
  size_t len;
  char *text;
  int rc;

  if (!ranks)
    return mana_fail(err, errlen, 0, "out of memory for the manifest"), -1;
  for (size_t i = 0; i < co->size; i++) {
    ranks[i].file = co->ckpt->ranks[i].file;
    ranks[i].bytes = co->ckpt->ranks[i].bytes;
    ranks[i].xxh = co->ckpt->ranks[i].xxh;
    ranks[i].host = co->slots[i].host;
    ranks[i].pid = co->slots[i].pid;
  }
  text = manifest_format(&m, &len);
  free(ranks);
  if (!text)
    return mana_fail(err, errlen, 0, "cannot format the manifest"), -1;
  rc = store_commit(&co->store, m.gen, text, len, err, errlen);
  free(text);
  return rc;
}

static void commit(struct coordinator *co)
{
  char err[COORD_ERR_LEN * 2];
  int64_t now_wall = coord_wall_ms();
  long long written_us = coord_now_us(); /* the last WRITTEN has just arrived */
  struct coord_line line;
  uint64_t gen = co->ckpt->gen;

  if (check_images(co, err, sizeof(err)) || write_manifest(co, now_wall, err, sizeof(err))) {
    job_abort(co, err);
    return;
  }
  /* depth_of reads the base's depth: before committed moves on */
  co->committed_needs = ckpt_needs(co->ckpt);
  co->committed_depth = depth_of(co, co->committed_needs);
  co->committed_chain_known = true;
  co->committed = gen;
  co->committed_wall = now_wall;
  co->committed_span_ms = coord_now_ms() - co->ckpt_start_ms;
  co->committed_sync_us = co->ckpt_drain_us - co->ckpt_start_us;
  co->committed_write_us = written_us - co->ckpt_drain_us;
  /* 0 when a rank never reported the end of its drain (an older mana_lh) */
  co->committed_drain_us = co->ckpt_drained_us ? co->ckpt_drained_us - co->ckpt_drain_us : 0;
  co->committed_bytes = ckpt_bytes(co->ckpt);
  start_line(co, &line, "COMMITTED");
  if (co->ckpt_kill) {
    coord_line_str(&line, "then", "exit");
    if (co->ckpt_exit_status)
      coord_line_u64(&line, "status", co->ckpt_exit_status);
    co->ending = true;
    for (size_t i = 0; i < co->size; i++)
      co->slots[i].exiting = true;
  }
  job_broadcast(co, &line);
  coord_log("generation %" PRIu64 " committed: %" PRIu64 " bytes in %lld ms (%" PRIu64
            " epochs, %" PRIu64 " raises, %" PRIu64 " releases)%s",
            gen, co->committed_bytes, co->committed_span_ms, co->ckpt->epoch, co->ckpt->raises,
            co->ckpt->releases, co->ckpt_kill ? "; the ranks exit now" : "");
  if (co->committed_depth)
    coord_log("generation %" PRIu64 " is incremental: depth %" PRIu64 ", needs generation %" PRIu64
              " and later",
              gen, co->committed_depth, co->committed_needs);
  /* After the ranks were told, so that removing old directories does not delay them; before
   * DONE, so that a client that saw DONE sees the directory as pruning left it. */
  store_prune(&co->store, gen, co->cfg->keep);
  control_done(co, gen, true, NULL);
  finish(co);
}

/* ------------------------------------------------------------------------------------- */
/* Actions of the state machine                                                          */
/* ------------------------------------------------------------------------------------- */

/* TARGETS of the current epoch to one rank, in lines of at most COORD_TABLE_CHUNK entries,
 * all but the last with more=1; a rank with nothing to learn still gets one (empty) line,
 * which it answers. */
static void send_targets_to(struct coordinator *co, size_t rank)
{
  struct coord_entry chunk[COORD_TABLE_CHUNK];
  const struct ckpt *c = co->ckpt;
  struct coord_entry next;
  size_t cursor = 0, n = 0;
  bool have = ckpt_next_rank_target(c, rank, &cursor, &next);
  struct coord_line line;

  do {
    n = 0;
    while (have && n < COORD_TABLE_CHUNK) {
      chunk[n++] = next;
      have = ckpt_next_rank_target(c, rank, &cursor, &next);
    }
    start_line(co, &line, "TARGETS");
    coord_line_u64(&line, "epoch", c->epoch);
    coord_line_u64(&line, "n", n);
    coord_line_table(&line, "t", chunk, n);
    if (have)
      coord_line_u64(&line, "more", 1);
    if (coord_line_end(&line)) {
      coord_log("internal error: could not format a TARGETS message");
      return;
    }
    conn_queue(co->slots[rank].conn, line.buf, line.len);
  } while (have);
}

/* Each rank gets the targets of its own groups only: sent to every rank, a communicator per
 * node made the entries grow with ranks x nodes. */
static void send_targets(struct coordinator *co)
{
  for (size_t i = 0; i < co->size; i++)
    if (co->slots[i].state == SLOT_CONNECTED)
      send_targets_to(co, i);
}

static void act(struct coordinator *co, enum ckpt_action action)
{
  struct coord_line line;

  switch (action) {
  case CKPT_ACT_NONE:
    return;
  case CKPT_ACT_TARGETS_ALL:
  case CKPT_ACT_TARGETS_CHANGED:
    send_targets(co);
    return;
  case CKPT_ACT_DRAIN:
    coord_log("generation %" PRIu64 ": all ranks parked at epoch %" PRIu64 ", suspending",
              co->ckpt->gen, co->ckpt->epoch);
    co->ckpt_drain_us = coord_now_us();
    job_broadcast(co, start_line(co, &line, "DRAIN"));
    return;
  case CKPT_ACT_GO:
    job_broadcast(co, start_line(co, &line, "GO"));
    return;
  case CKPT_ACT_COMMIT:
    commit(co);
    return;
  case CKPT_ACT_ABORT:
    abort_now(co);
    return;
  }
}

/* ------------------------------------------------------------------------------------- */
/* Rank messages                                                                         */
/* ------------------------------------------------------------------------------------- */

/* A rank broke the protocol: it loses its connection, which aborts a generation in
 * progress; the other ranks and the job carry on. */
static void protocol_error(struct coordinator *co, struct conn *c, const char *why)
{
  coord_log("rank %zu (%s): protocol error: %s; closing its connection", c->rank, c->peer, why);
  conn_reject(c, why);
  hello_rank_gone(co, c);
}

typedef enum ckpt_action (*rank_handler)(struct coordinator *co, size_t rank,
                                         const struct coord_msg *msg, char *why, size_t whylen,
                                         bool *bad);

static enum ckpt_action on_seq(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                               char *why, size_t whylen, bool *bad)
{
  struct coord_entry entries[COORD_TABLE_CHUNK];
  const char *table;
  uint64_t n;
  size_t count;
  bool more;

  if (coord_msg_u64(msg, "n", &n, why, whylen) || coord_msg_str(msg, "t", &table, why, whylen) ||
      coord_msg_flag(msg, "more", &more, why, whylen) ||
      coord_table_parse(table, entries, COORD_TABLE_CHUNK, &count, why, whylen)) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  if (n != count) {
    snprintf(why, whylen, "SEQ: n=%" PRIu64 " but the table has %zu entries", n, count);
    *bad = true;
    return CKPT_ACT_NONE;
  }
  return ckpt_on_seq(co->ckpt, rank, entries, count, more);
}

static enum ckpt_action on_raise(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                 char *why, size_t whylen, bool *bad)
{
  uint64_t ggid, target;

  if (coord_msg_x64(msg, "ggid", &ggid, why, whylen) ||
      coord_msg_u64(msg, "target", &target, why, whylen)) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  return ckpt_on_raise(co->ckpt, rank, ggid, target);
}

/* PARKED gen= epoch= [ggid= seq=]: the location comes as a pair or not at all. */
static enum ckpt_action on_parked(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                  char *why, size_t whylen, bool *bad)
{
  bool located = coord_msg_get(msg, "ggid") || coord_msg_get(msg, "seq");
  struct ckpt_park at;
  uint64_t epoch;

  if (coord_msg_u64(msg, "epoch", &epoch, why, whylen) ||
      (located && (coord_msg_x64(msg, "ggid", &at.ggid, why, whylen) ||
                   coord_msg_u64(msg, "seq", &at.seq, why, whylen)))) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  return ckpt_on_parked(co->ckpt, rank, epoch, located ? &at : NULL);
}

/* RUNNING gen= [epoch=] [blocked=1 [ggid= seq=]] */
static enum ckpt_action on_running(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                   char *why, size_t whylen, bool *bad)
{
  uint64_t epoch = 0;
  bool blocked, held = coord_msg_get(msg, "ggid") || coord_msg_get(msg, "seq");
  struct ckpt_park at;

  if ((coord_msg_get(msg, "epoch") && coord_msg_u64(msg, "epoch", &epoch, why, whylen)) ||
      coord_msg_flag(msg, "blocked", &blocked, why, whylen) ||
      (held && (coord_msg_x64(msg, "ggid", &at.ggid, why, whylen) ||
                coord_msg_u64(msg, "seq", &at.seq, why, whylen)))) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  if (held && blocked)
    return ckpt_on_blocked_held(co->ckpt, rank, epoch, &at);
  return ckpt_on_running(co->ckpt, rank, epoch, blocked);
}

static enum ckpt_action on_progress(struct coordinator *co, size_t rank,
                                    const struct coord_msg *msg, char *why, size_t whylen,
                                    bool *bad)
{
  uint64_t bytes;

  if (coord_msg_u64(msg, "bytes", &bytes, why, whylen)) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  /* A rank's first PROGRESS comes right after its drain (bytes 0): the network of that
   * rank is quiet from then on; the last one to get there ends the job's drain. */
  if (co->ckpt->ranks[rank].state == CKPT_RANK_DRAINING)
    co->ckpt_drained_us = coord_now_us();
  if (mana_fault("coord-kill-in-write", -1))
    raise(SIGKILL);
  return ckpt_on_progress(co->ckpt, rank, bytes);
}

static enum ckpt_action on_suspended(struct coordinator *co, size_t rank,
                                     const struct coord_msg *msg, char *why, size_t whylen,
                                     bool *bad)
{
  (void)msg, (void)why, (void)whylen, (void)bad;
  return ckpt_on_suspended(co->ckpt, rank);
}

static enum ckpt_action on_written(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                   char *why, size_t whylen, bool *bad)
{
  const char *file, *xxh;
  uint64_t bytes, oldest = 0;

  if (coord_msg_u64(msg, "bytes", &bytes, why, whylen) ||
      coord_msg_str(msg, "file", &file, why, whylen) ||
      coord_msg_str(msg, "xxh", &xxh, why, whylen) ||
      (coord_msg_get(msg, "oldest") && coord_msg_u64(msg, "oldest", &oldest, why, whylen))) {
    *bad = true;
    return CKPT_ACT_NONE;
  }
  if (coord_msg_get(msg, "oldest") && oldest == 0) {
    snprintf(why, whylen, "WRITTEN: oldest=0 is no generation");
    *bad = true;
    return CKPT_ACT_NONE;
  }
  return ckpt_on_written(co->ckpt, rank, bytes, file, xxh, oldest);
}

static const char *reason_of(const struct coord_msg *msg)
{
  const char *reason = coord_msg_get(msg, "reason");

  return reason && *reason ? reason : "no reason given";
}

static enum ckpt_action on_failed(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                  char *why, size_t whylen, bool *bad)
{
  (void)why, (void)whylen, (void)bad;
  return ckpt_on_failed(co->ckpt, rank, reason_of(msg));
}

static enum ckpt_action on_refuse(struct coordinator *co, size_t rank, const struct coord_msg *msg,
                                  char *why, size_t whylen, bool *bad)
{
  (void)why, (void)whylen, (void)bad;
  return ckpt_on_refuse(co->ckpt, rank, reason_of(msg));
}

static const struct {
  const char *verb;
  rank_handler handler;
} rank_verbs[] = {
    {"SEQ", on_seq},         {"RAISE", on_raise},       {"PARKED", on_parked},
    {"RUNNING", on_running}, {"PROGRESS", on_progress}, {"WRITTEN", on_written},
    {"FAILED", on_failed},   {"REFUSE", on_refuse},     {"SUSPENDED", on_suspended},
};

static rank_handler find_handler(const char *verb)
{
  for (size_t i = 0; i < sizeof(rank_verbs) / sizeof(rank_verbs[0]); i++)
    if (strcmp(rank_verbs[i].verb, verb) == 0)
      return rank_verbs[i].handler;
  return NULL;
}

/* Arms the stall timer when the ranks are stalled, disarms it when they are not. */
static void watch_stall(struct coordinator *co)
{
  if (!co->ckpt || !ckpt_stalled(co->ckpt)) {
    co->stall_deadline = -1;
    return;
  }
  if (co->stall_deadline < 0)
    co->stall_deadline = coord_now_ms() + co->stall_grace_ms;
}

/* Once per generation: a rank the test trigger holds inside its call may be the one the
 * blocked ranks wait for (docs/coordinator-protocol.md, NUDGE).  Ranks that hold nothing
 * ignore it. */
static void nudge_if_waiting(struct coordinator *co)
{
  struct coord_line line;

  if (!co->ckpt || co->nudged_gen == co->ckpt->gen || !ckpt_waits_on_done(co->ckpt))
    return;
  co->nudged_gen = co->ckpt->gen;
  coord_log("generation %" PRIu64 ": ranks blocked at epoch %" PRIu64
            " wait for ranks that are done; NUDGE sent",
            co->ckpt->gen, co->ckpt->epoch);
  job_broadcast(co, start_line(co, &line, "NUDGE"));
}

void job_rank_message(struct coordinator *co, struct conn *c, const struct coord_msg *msg)
{
  rank_handler handler = find_handler(msg->verb);
  char why[COORD_ERR_LEN];
  enum ckpt_action action;
  bool bad = false;
  uint64_t gen;

  if (!handler) {
    snprintf(why, sizeof(why), "unknown message %s", msg->verb);
    protocol_error(co, c, why);
    return;
  }
  if (coord_msg_u64(msg, "gen", &gen, why, sizeof(why))) {
    protocol_error(co, c, why);
    return;
  }
  switch (ckpt_match_gen(co->ckpt, co->newest_started, gen)) {
  case CKPT_GEN_STALE:
    return; /* an answer to a generation that is over: nothing depends on it */
  case CKPT_GEN_FUTURE:
    snprintf(why, sizeof(why),
             "%s for generation %" PRIu64 ", which was never "
             "started",
             msg->verb, gen);
    protocol_error(co, c, why);
    return;
  case CKPT_GEN_CURRENT:
    break;
  }
  action = handler(co, c->rank, msg, why, sizeof(why), &bad);
  if (bad) {
    protocol_error(co, c, why);
    return;
  }
  act(co, action);
  watch_stall(co);
  nudge_if_waiting(co);
}

/* ------------------------------------------------------------------------------------- */
/* Starting a generation                                                                 */
/* ------------------------------------------------------------------------------------- */

static int refuse_start(struct coordinator *co, char *why, size_t whylen)
{
  if (co->ckpt)
    snprintf(why, whylen, "checkpoint already in progress");
  else if (co->ending)
    snprintf(why, whylen, "the job is ending after its last checkpoint");
  else if (!co->joined)
    snprintf(why, whylen, "no rank has connected yet");
  else if (co->connected < co->size)
    snprintf(why, whylen, "only %zu of %zu ranks are connected", co->connected, co->size);
  else
    return 0;
  return -1;
}

/* The committed generation the next one is written against, 0 for a full one: only ever
 * a generation of this directory that is committed (an aborted one may be half written),
 * and a full one after full_every - 1 incremental ones, so that a restart reads a bounded
 * number of images and pruning can let old chains go. */
static uint64_t choose_base(const struct coordinator *co)
{
  if (!co->cfg->incremental || !co->committed || !co->committed_chain_known)
    return 0;
  if (co->committed_depth + 1 >= co->cfg->full_every)
    return 0;
  return co->committed;
}

static int start_checkpoint(struct coordinator *co, bool kill, const char *origin, uint64_t *gen,
                            char *why, size_t whylen)
{
  char base_dir[PATH_MAX + 32];
  char dir[PATH_MAX + 32];
  struct coord_line line;

  if (refuse_start(co, why, whylen))
    return -1;
  /* The number is used up even if the attempt fails: a generation number is never
   * reused, so late messages of an old attempt can never be mistaken for new ones. */
  *gen = ++co->newest_started;
  if (store_gen_create(&co->store, *gen, why, whylen))
    return -1;
  co->ckpt = ckpt_new(*gen, co->size);
  if (!co->ckpt) {
    char err[COORD_ERR_LEN * 2];

    if (store_gen_remove(&co->store, *gen, err, sizeof(err)))
      coord_log("%s", err);
    snprintf(why, whylen, "out of memory for generation %" PRIu64, *gen);
    return -1;
  }
  co->ckpt->base = choose_base(co);
  co->ckpt_kill = kill;
  co->ckpt_exit_status = 0;
  /* A checkpoint that ends the job is written by the parked ranks themselves: there is no
   * application to resume. */
  co->ckpt_forked = co->cfg->forked_writers && !kill;
  co->ckpt_start_ms = coord_now_ms();
  co->ckpt_start_us = coord_now_us();
  co->ckpt_drain_us = 0;
  co->ckpt_drained_us = 0;
  co->ckpt_deadline =
      co->cfg->ckpt_timeout ? co->ckpt_start_ms + (long long)co->cfg->ckpt_timeout * 1000 : -1;
  co->stall_deadline = -1;
  co->stall_grace_ms = STALL_GRACE_FIRST_MS;
  co->ckpt_start_wall = coord_wall_ms();
  co->next_ckpt_ms = -1;
  store_gen_path(&co->store, *gen, dir, sizeof(dir));
  start_line(co, &line, "CKPT");
  coord_line_str(&line, "dir", dir);
  if (co->ckpt_forked)
    coord_line_u64(&line, "fork", 1);
  if (co->ckpt->base) {
    store_gen_path(&co->store, co->ckpt->base, base_dir, sizeof(base_dir));
    coord_line_str(&line, "base", base_dir);
  }
  job_broadcast(co, &line);
  coord_log("generation %" PRIu64 " started (%s%s)", *gen, origin,
            kill              ? ", the job ends once it is committed"
            : co->ckpt_forked ? ", written by forked writers while the job runs"
                              : "");
  if (co->ckpt->base)
    coord_log("generation %" PRIu64 " is written against generation %" PRIu64, *gen,
              co->ckpt->base);
  return 0;
}

int job_start_checkpoint(struct coordinator *co, const char *origin, uint64_t *gen, char *why,
                         size_t whylen)
{
  return start_checkpoint(co, false, origin, gen, why, whylen);
}

int job_checkpoint_then_exit(struct coordinator *co, unsigned status, const char *origin,
                             uint64_t *gen, bool *committed, char *why, size_t whylen)
{
  *committed = false;
  if (co->ending) {
    *gen = co->committed;
    *committed = true;
    return 0;
  }
  if (!co->ckpt) {
    if (start_checkpoint(co, true, origin, gen, why, whylen))
      return -1;
    co->ckpt_exit_status = status;
    return 0;
  }
  *gen = co->ckpt->gen;
  if (co->ckpt_forked) {
    /* Its ranks resume before it commits: the job ends with the next one, started as soon
     * as this one is over (numbers are never reused, and none can start in between). */
    if (!co->kill_after || (status && !co->kill_after_status)) {
      co->kill_after = true;
      co->kill_after_status = status;
      coord_log("generation %" PRIu64 " is written in the background: the job ends with the "
                "next checkpoint (%s)",
                *gen, origin);
    }
    *gen = co->newest_started + 1;
    return 0;
  }
  if (co->ckpt_kill && (co->ckpt_exit_status || !status))
    return 0;
  if (!co->ckpt_kill)
    coord_log("generation %" PRIu64 ": the job ends once it is committed (%s)", *gen, origin);
  else
    coord_log("generation %" PRIu64 ": the ranks will exit with status %u (%s)", *gen, status,
              origin);
  co->ckpt_kill = true;
  co->ckpt_exit_status = status;
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Ranks coming and going, the timer                                                     */
/* ------------------------------------------------------------------------------------- */

void job_rank_disconnected(struct coordinator *co, size_t rank)
{
  if (co->ckpt)
    act(co, ckpt_on_disconnect(co->ckpt, rank));
  if (co->joined && co->connected == 0)
    coord_stop(co, 0,
               co->ending ? "the job ended after its last checkpoint"
                          : "all ranks have disconnected: the job is over");
}

void job_ranks_changed(struct coordinator *co)
{
  if (co->connected < co->size)
    return;
  if (!co->all_joined || co->next_ckpt_ms < 0) {
    co->all_joined = true;
    job_schedule(co);
  }
}

void job_timer(struct coordinator *co)
{
  char why[COORD_ERR_LEN * 2];
  uint64_t gen;
  bool committed;

  co->next_ckpt_ms = -1;
  if (co->kill_after) {
    co->kill_after = false;
    if (job_checkpoint_then_exit(co, co->kill_after_status,
                                 "asked for while the previous one was written", &gen, &committed,
                                 why, sizeof(why))) {
      coord_log("the checkpoint that ends the job cannot start: %s", why);
      control_done(co, co->newest_started + 1, false, why);
      job_schedule(co);
    }
    return;
  }
  if (job_start_checkpoint(co, "periodic", &gen, why, sizeof(why))) {
    coord_log("periodic checkpoint skipped: %s", why);
    job_schedule(co);
  }
}

static bool before_drain(const struct coordinator *co)
{
  return co->ckpt && (co->ckpt->phase == CKPT_PHASE_SEQ || co->ckpt->phase == CKPT_PHASE_CONVERGE);
}

long long job_deadline(const struct coordinator *co)
{
  long long d = co->stall_deadline;

  if (before_drain(co) && co->ckpt_deadline >= 0 && (d < 0 || co->ckpt_deadline < d))
    d = co->ckpt_deadline;
  return d;
}

static void release_stalled(struct coordinator *co)
{
  co->stall_deadline = -1;
  if (!ckpt_stalled(co->ckpt))
    return;
  if (ckpt_release(co->ckpt) == CKPT_ACT_TARGETS_CHANGED) {
    coord_log("generation %" PRIu64 ": stalled for %u ms; parked ranks released "
              "(epoch %" PRIu64 ")",
              co->ckpt->gen, co->stall_grace_ms, co->ckpt->epoch);
    co->stall_grace_ms =
        co->stall_grace_ms * 2 > STALL_GRACE_MAX_MS ? STALL_GRACE_MAX_MS : co->stall_grace_ms * 2;
    act(co, CKPT_ACT_TARGETS_CHANGED);
  }
  watch_stall(co);
}

void job_check_deadlines(struct coordinator *co, long long now)
{
  char why[96];

  if (!co->ckpt)
    return;
  if (co->stall_deadline >= 0 && now >= co->stall_deadline)
    release_stalled(co);
  if (before_drain(co) && co->ckpt_deadline >= 0 && now >= co->ckpt_deadline) {
    snprintf(why, sizeof(why), "the ranks did not reach a safe point within %u s",
             co->cfg->ckpt_timeout);
    job_abort(co, why);
  }
}
