/* coord_ckpt: the generation state machine (see coord_ckpt.h). */
#include "coord_ckpt.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ckpt *ckpt_new(uint64_t gen, size_t size)
{
  struct ckpt *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  size_t slots = 16;
  while (slots < 2 * size)
    slots *= 2;
  c->ranks = calloc(size ? size : 1, sizeof(*c->ranks));
  c->file_slots = calloc(slots, sizeof(*c->file_slots));
  if (!c->ranks || !c->file_slots) {
    free(c->ranks);
    free(c->file_slots);
    free(c);
    return NULL;
  }
  c->file_mask = slots - 1;
  c->gen = gen;
  c->size = size;
  c->phase = CKPT_PHASE_SEQ;
  return c;
}

void ckpt_free(struct ckpt *c)
{
  if (!c)
    return;
  free(c->ranks);
  free(c->targets);
  free(c->file_slots);
  free(c);
}

enum ckpt_action ckpt_abort(struct ckpt *c, const char *fmt, ...)
{
  va_list ap;

  if (c->phase == CKPT_PHASE_ABORT)
    return CKPT_ACT_NONE; /* the first reason is the one that matters */
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
  va_end(ap);
  c->phase = CKPT_PHASE_ABORT;
  return CKPT_ACT_ABORT;
}

/* ------------------------------------------------------------------------------------- */
/* The target table                                                                      */
/* ------------------------------------------------------------------------------------- */

/* Index of ggid, or of where it would be inserted. */
static size_t find_slot(const struct ckpt *c, uint64_t ggid)
{
  size_t lo = 0, hi = c->ntargets;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (c->targets[mid].ggid < ggid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool ckpt_target(const struct ckpt *c, uint64_t ggid, uint64_t *target)
{
  size_t i = find_slot(c, ggid);

  if (i == c->ntargets || c->targets[i].ggid != ggid)
    return false;
  *target = c->targets[i].value;
  return true;
}

bool ckpt_next_target(const struct ckpt *c, uint64_t since, size_t *cursor, struct coord_entry *out)
{
  while (*cursor < c->ntargets) {
    const struct ckpt_target *t = &c->targets[(*cursor)++];

    if (since == 0 || t->epoch >= since) {
      out->ggid = t->ggid;
      out->value = t->value;
      return true;
    }
  }
  return false;
}

/* target[ggid] = max(target[ggid], value), the change belonging to epoch. Returns 1 if it
 * changed, 0 if not, -1 when out of memory. */
static int raise_target(struct ckpt *c, uint64_t ggid, uint64_t value, uint64_t epoch)
{
  size_t i = find_slot(c, ggid);

  if (i < c->ntargets && c->targets[i].ggid == ggid) {
    if (value <= c->targets[i].value)
      return 0;
    c->targets[i].value = value;
    c->targets[i].epoch = epoch;
    return 1;
  }
  if (c->ntargets == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    struct ckpt_target *grown = realloc(c->targets, cap * sizeof(*grown));

    if (!grown)
      return -1;
    c->targets = grown;
    c->cap = cap;
  }
  memmove(&c->targets[i + 1], &c->targets[i], (c->ntargets - i) * sizeof(*c->targets));
  c->targets[i] = (struct ckpt_target){.ggid = ggid, .value = value, .epoch = epoch};
  c->ntargets++;
  return 1;
}

/* ------------------------------------------------------------------------------------- */
/* Events                                                                                */
/* ------------------------------------------------------------------------------------- */

static bool aborted(const struct ckpt *c)
{
  return c->phase == CKPT_PHASE_ABORT;
}

/* Adds (sign 1) or removes (sign -1) a rank's status from the current epoch's counts. */
static void count_status(struct ckpt *c, const struct ckpt_rank *r, int sign)
{
  if (r->epoch != c->epoch)
    return;
  size_t delta = sign > 0 ? 1 : (size_t)-1;
  c->now_answered += delta;
  if (r->state == CKPT_RANK_RUNNING)
    c->now_running += delta;
  else if (r->state == CKPT_RANK_BLOCKED)
    c->now_blocked += delta;
  else if (r->state == CKPT_RANK_PARKED)
    c->now_parked += delta;
  else if (r->state == CKPT_RANK_DONE)
    c->now_done += delta;
}

/* A new epoch: no rank has answered it yet. */
static void next_epoch(struct ckpt *c)
{
  c->epoch++;
  c->now_answered = c->now_running = c->now_blocked = c->now_parked = c->now_done = 0;
}

enum ckpt_action ckpt_on_seq(struct ckpt *c, size_t rank, const struct coord_entry *seq,
                             size_t count, bool more)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_SEQ || r->state != CKPT_RANK_ASKED)
    return ckpt_abort(c, "rank %zu sent SEQ twice", rank);
  for (size_t i = 0; i < count; i++)
    if (raise_target(c, seq[i].ggid, seq[i].value, 1) < 0)
      return ckpt_abort(c, "out of memory for the target table");
  if (more)
    return CKPT_ACT_NONE;
  r->state = CKPT_RANK_SEQ;
  if (++c->seq_done < c->size)
    return CKPT_ACT_NONE;
  c->phase = CKPT_PHASE_CONVERGE;
  for (size_t i = 0; i < c->size; i++)
    c->ranks[i].state = CKPT_RANK_RUNNING; /* at epoch 0: not counted */
  next_epoch(c);
  return CKPT_ACT_TARGETS_ALL;
}

enum ckpt_action ckpt_on_raise(struct ckpt *c, size_t rank, uint64_t ggid, uint64_t target)
{
  int changed;

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_CONVERGE)
    return ckpt_abort(c, "rank %zu sent RAISE outside the convergence phase", rank);
  /* A rank that raises is about to enter a collective: it is running, whatever it
   * said before, until it answers the epoch that carries its raise. */
  count_status(c, &c->ranks[rank], -1);
  c->ranks[rank].state = CKPT_RANK_RUNNING;
  count_status(c, &c->ranks[rank], 1);
  changed = raise_target(c, ggid, target, c->epoch + 1);
  if (changed < 0)
    return ckpt_abort(c, "out of memory for the target table");
  if (changed == 0)
    return CKPT_ACT_NONE; /* someone raised it as far already: nothing to tell */
  c->raises++;
  next_epoch(c);
  return CKPT_ACT_TARGETS_CHANGED;
}

/* Every rank's last status is at the current epoch. */
static bool all_current(const struct ckpt *c)
{
  return c->phase == CKPT_PHASE_CONVERGE && c->now_answered == c->size;
}

bool ckpt_converged(const struct ckpt *c)
{
  return all_current(c) && c->now_parked + c->now_done == c->size;
}

bool ckpt_stalled(const struct ckpt *c)
{
  return all_current(c) && c->now_running == 0 && c->now_blocked > 0 && c->now_parked > 0;
}

/* Lets every rank parked at a collective pass it: that collective is about to start on
 * every member anyway, and the blocked rank may be waiting for what comes after it. */
enum ckpt_action ckpt_release(struct ckpt *c)
{
  size_t raised = 0;

  if (c->phase != CKPT_PHASE_CONVERGE)
    return CKPT_ACT_NONE;
  for (size_t i = 0; i < c->size; i++) {
    const struct ckpt_rank *r = &c->ranks[i];
    int rc;

    if (r->state != CKPT_RANK_PARKED)
      continue;
    rc = raise_target(c, r->park_ggid, r->park_seq + 1, c->epoch + 1);
    if (rc < 0)
      return ckpt_abort(c, "out of memory for the target table");
    raised += (size_t)rc;
  }
  if (!raised)
    return CKPT_ACT_NONE;
  c->releases++;
  next_epoch(c);
  return CKPT_ACT_TARGETS_CHANGED;
}

/* After every status: done, or keep waiting (a stall is the caller's to time). */
static enum ckpt_action after_status(struct ckpt *c)
{
  if (!ckpt_converged(c))
    return CKPT_ACT_NONE;
  c->phase = CKPT_PHASE_SUSPEND;
  c->suspended = 0;
  for (size_t i = 0; i < c->size; i++)
    c->ranks[i].state = CKPT_RANK_SUSPENDING;
  return CKPT_ACT_DRAIN;
}

static enum ckpt_action check_status(struct ckpt *c, size_t rank, const char *verb, uint64_t epoch)
{
  if (c->phase != CKPT_PHASE_CONVERGE)
    return ckpt_abort(c, "rank %zu sent %s outside the convergence phase", rank, verb);
  if (epoch > c->epoch)
    return ckpt_abort(c,
                      "rank %zu sent %s for epoch %" PRIu64 ", which was never "
                      "sent (current %" PRIu64 ")",
                      rank, verb, epoch, c->epoch);
  return CKPT_ACT_NONE;
}

enum ckpt_action ckpt_on_parked(struct ckpt *c, size_t rank, uint64_t epoch,
                                const struct ckpt_park *at)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (epoch == 0)
    return ckpt_abort(c, "rank %zu sent PARKED without an epoch", rank);
  /* A rank that was done (targets met, computing) may reach its next collective and say
   * so while DRAIN is on its way to it: the status crossed DRAIN on the wire and changes
   * nothing (its targets are still met).  RUNNING and RAISE cannot cross: they need an
   * unmet target, and targets do not move after termination. */
  if ((c->phase == CKPT_PHASE_SUSPEND || c->phase == CKPT_PHASE_WRITE) && epoch == c->epoch)
    return CKPT_ACT_NONE;
  if (check_status(c, rank, "PARKED", epoch) != CKPT_ACT_NONE)
    return CKPT_ACT_ABORT;
  /* A status for an older epoch is recorded but does not count: that rank has not
   * answered the latest change yet. */
  count_status(c, r, -1);
  r->state = at ? CKPT_RANK_PARKED : CKPT_RANK_DONE;
  r->epoch = epoch;
  r->park_ggid = at ? at->ggid : 0;
  r->park_seq = at ? at->seq : 0;
  count_status(c, r, 1);
  return after_status(c);
}

enum ckpt_action ckpt_on_running(struct ckpt *c, size_t rank, uint64_t epoch, bool blocked)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (check_status(c, rank, "RUNNING", epoch) != CKPT_ACT_NONE)
    return CKPT_ACT_ABORT;
  count_status(c, r, -1);
  r->state = blocked ? CKPT_RANK_BLOCKED : CKPT_RANK_RUNNING;
  r->epoch = epoch;
  count_status(c, r, 1);
  return after_status(c);
}

enum ckpt_action ckpt_on_suspended(struct ckpt *c, size_t rank)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_SUSPEND || r->state != CKPT_RANK_SUSPENDING)
    return ckpt_abort(c, "rank %zu sent SUSPENDED while not suspending", rank);
  r->state = CKPT_RANK_SUSPENDED;
  if (++c->suspended < c->size)
    return CKPT_ACT_NONE;
  c->phase = CKPT_PHASE_WRITE;
  for (size_t i = 0; i < c->size; i++)
    c->ranks[i].state = CKPT_RANK_DRAINING;
  return CKPT_ACT_GO;
}

/* The slot of an image file name: the one holding it, or the free one where it goes. */
static size_t *file_slot(struct ckpt *c, const char *file)
{
  uint64_t h = 14695981039346656037ull; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)file; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  for (size_t i = (size_t)h & c->file_mask;; i = (i + 1) & c->file_mask) {
    size_t *slot = &c->file_slots[i];
    if (!*slot || strcmp(c->ranks[*slot - 1].file, file) == 0)
      return slot;
  }
}

static bool writing(const struct ckpt_rank *r)
{
  return r->state == CKPT_RANK_DRAINING || r->state == CKPT_RANK_WRITING;
}

enum ckpt_action ckpt_on_progress(struct ckpt *c, size_t rank, uint64_t bytes)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_WRITE || !writing(r))
    return ckpt_abort(c, "rank %zu sent PROGRESS while not writing", rank);
  r->state = CKPT_RANK_WRITING;
  r->bytes = bytes;
  return CKPT_ACT_NONE;
}

enum ckpt_action ckpt_on_written(struct ckpt *c, size_t rank, uint64_t bytes, const char *file,
                                 const char *xxh, uint64_t oldest)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_WRITE || !writing(r))
    return ckpt_abort(c, "rank %zu sent WRITTEN while not writing", rank);
  if (!ckpt_valid_file_name(file))
    return ckpt_abort(c, "rank %zu reported an invalid image file name", rank);
  if (!ckpt_valid_xxh(xxh))
    return ckpt_abort(c, "rank %zu reported an invalid checksum", rank);
  /* Pruning trusts oldest: a reference outside the base's chain would make it remove, or
   * keep relying on, images that were never committed. */
  if (oldest && oldest != c->gen && (oldest > c->base))
    return ckpt_abort(c,
                      "rank %zu reported an image referring to generation %" PRIu64
                      " (it may refer to %" PRIu64 " only%s)",
                      rank, oldest, c->gen, c->base ? " or to its base and older" : "");
  size_t *slot = file_slot(c, file);
  if (*slot)
    return ckpt_abort(c, "ranks %zu and %zu both wrote %s", *slot - 1, rank, file);
  *slot = rank + 1;
  r->state = CKPT_RANK_WRITTEN;
  r->bytes = bytes;
  snprintf(r->file, sizeof(r->file), "%s", file);
  snprintf(r->xxh, sizeof(r->xxh), "%s", xxh);
  r->oldest = oldest ? oldest : c->gen;
  if (++c->written < c->size)
    return CKPT_ACT_NONE;
  c->phase = CKPT_PHASE_COMMIT;
  return CKPT_ACT_COMMIT;
}

enum ckpt_action ckpt_on_failed(struct ckpt *c, size_t rank, const char *reason)
{
  if (c->phase == CKPT_PHASE_SUSPEND)
    return ckpt_abort(c, "rank %zu could not suspend its threads: %s", rank, reason);
  return ckpt_abort(c, "rank %zu could not write its image: %s", rank, reason);
}

enum ckpt_action ckpt_on_refuse(struct ckpt *c, size_t rank, const char *reason)
{
  return ckpt_abort(c, "rank %zu refused the checkpoint: %s", rank, reason);
}

enum ckpt_action ckpt_on_disconnect(struct ckpt *c, size_t rank)
{
  return ckpt_abort(c, "rank %zu disconnected during the checkpoint", rank);
}

uint64_t ckpt_bytes(const struct ckpt *c)
{
  uint64_t sum = 0;

  for (size_t i = 0; i < c->size; i++)
    sum += c->ranks[i].bytes;
  return sum;
}

uint64_t ckpt_needs(const struct ckpt *c)
{
  uint64_t needs = c->gen;

  for (size_t i = 0; i < c->size; i++)
    if (c->ranks[i].state == CKPT_RANK_WRITTEN && c->ranks[i].oldest < needs)
      needs = c->ranks[i].oldest;
  return needs;
}

enum ckpt_gen_match ckpt_match_gen(const struct ckpt *c, uint64_t newest_started, uint64_t gen)
{
  if (c && gen == c->gen)
    return CKPT_GEN_CURRENT;
  if (gen <= newest_started)
    return CKPT_GEN_STALE;
  return CKPT_GEN_FUTURE;
}

/* ------------------------------------------------------------------------------------- */
/* Checks and names                                                                      */
/* ------------------------------------------------------------------------------------- */

bool ckpt_valid_file_name(const char *name)
{
  size_t n = strlen(name);

  if (n == 0 || n >= CKPT_FILE_MAX || name[0] == '.' || strcmp(name, "MANIFEST") == 0)
    return false;
  for (const char *p = name; *p; p++) {
    char ch = *p;

    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '.' || ch == '_' || ch == '-'))
      return false;
  }
  return true;
}

bool ckpt_valid_xxh(const char *xxh)
{
  size_t n = strlen(xxh);

  if (n < 8 || n > CKPT_XXH_MAX)
    return false;
  for (const char *p = xxh; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

const char *ckpt_phase_name(enum ckpt_phase phase)
{
  switch (phase) {
  case CKPT_PHASE_SEQ:
    return "collecting";
  case CKPT_PHASE_CONVERGE:
    return "converging";
  case CKPT_PHASE_SUSPEND:
    return "suspending";
  case CKPT_PHASE_WRITE:
    return "writing";
  case CKPT_PHASE_COMMIT:
    return "committing";
  case CKPT_PHASE_ABORT:
    return "aborting";
  }
  return "unknown";
}

const char *ckpt_rank_state_name(enum ckpt_rank_state state)
{
  switch (state) {
  case CKPT_RANK_ASKED:
    return "requested";
  case CKPT_RANK_SEQ:
    return "seq-sent";
  case CKPT_RANK_RUNNING:
    return "converging";
  case CKPT_RANK_BLOCKED:
    return "blocked";
  case CKPT_RANK_PARKED:
    return "parked";
  case CKPT_RANK_DONE:
    return "ready";
  case CKPT_RANK_SUSPENDING:
    return "suspending";
  case CKPT_RANK_SUSPENDED:
    return "suspended";
  case CKPT_RANK_DRAINING:
    return "draining";
  case CKPT_RANK_WRITING:
    return "writing";
  case CKPT_RANK_WRITTEN:
    return "written";
  }
  return "unknown";
}
