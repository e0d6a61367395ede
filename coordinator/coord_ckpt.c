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
  free(c->target_slots);
  free(c->members);
  free(c->sends);
  free(c->changes);
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

/* Grows *array to hold one more element of size bytes; false when out of memory. */
static bool grow(void **array, size_t *cap, size_t n, size_t size)
{
  if (n < *cap)
    return true;
  size_t more = *cap ? *cap * 2 : 64;
  void *grown = realloc(*array, more * size);

  if (!grown)
    return false;
  *array = grown;
  *cap = more;
  return true;
}

static size_t hash_ggid(uint64_t ggid)
{
  return (size_t)((ggid * 0x9e3779b97f4a7c15ull) >> 17);
}

/* The slot of ggid in the hash: the one holding its index + 1, or the free one where it goes. */
static size_t *target_slot(const struct ckpt *c, uint64_t ggid)
{
  for (size_t i = hash_ggid(ggid) & c->target_mask;; i = (i + 1) & c->target_mask) {
    size_t *slot = &c->target_slots[i];
    if (!*slot || c->targets[*slot - 1].ggid == ggid)
      return slot;
  }
}

/* Index of ggid in targets, or ntargets when there is none. */
static size_t find_target(const struct ckpt *c, uint64_t ggid)
{
  if (!c->target_slots)
    return c->ntargets;
  size_t slot = *target_slot(c, ggid);
  return slot ? slot - 1 : c->ntargets;
}

/* Keeps the hash at most half full; false when out of memory. */
static bool room_for_target(struct ckpt *c)
{
  size_t slots = c->target_mask + 1;

  if (c->target_slots && 2 * (c->ntargets + 1) <= slots)
    return true;
  slots = c->target_slots ? slots * 2 : 64;
  size_t *fresh = calloc(slots, sizeof(*fresh));
  if (!fresh)
    return false;
  free(c->target_slots);
  c->target_slots = fresh;
  c->target_mask = slots - 1;
  for (size_t i = 0; i < c->ntargets; i++)
    *target_slot(c, c->targets[i].ggid) = i + 1;
  return true;
}

bool ckpt_target(const struct ckpt *c, uint64_t ggid, uint64_t *target)
{
  size_t i = find_target(c, ggid);

  if (i == c->ntargets)
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

/* The cursor holds the next list element + 1, or SIZE_MAX once the list is over. */
bool ckpt_next_rank_target(const struct ckpt *c, size_t rank, size_t *cursor,
                           struct coord_entry *out)
{
  const struct ckpt_rank *r = &c->ranks[rank];
  bool first = c->epoch == 1;
  size_t next, target;

  if (*cursor == SIZE_MAX || c->epoch == 0)
    return false;
  if (*cursor == 0)
    *cursor = first ? r->groups : r->sends_epoch == c->epoch ? r->sends : 0;
  if (*cursor == 0) {
    *cursor = SIZE_MAX;
    return false;
  }
  if (first) {
    target = c->members[*cursor - 1].target;
    next = c->members[*cursor - 1].next_in_rank;
  } else {
    target = c->sends[*cursor - 1].target;
    next = c->sends[*cursor - 1].next;
  }
  *cursor = next ? next : SIZE_MAX;
  out->ggid = c->targets[target].ggid;
  out->value = c->targets[target].value;
  return true;
}

static bool queue_change(struct ckpt *c, size_t target, size_t rank)
{
  if (!grow((void **)&c->changes, &c->changes_cap, c->nchanges, sizeof(*c->changes)))
    return false;
  c->changes[c->nchanges++] = (struct ckpt_change){.target = target, .rank = rank};
  return true;
}

/* target[ggid] = max(target[ggid], value), the change belonging to epoch; *index is ggid's.
 * Returns 1 if it changed, 0 if not, -1 when out of memory. A change for epoch c->epoch + 1
 * is queued for the members, once per group. */
static int raise_target(struct ckpt *c, uint64_t ggid, uint64_t value, uint64_t epoch,
                        size_t *index)
{
  size_t i = find_target(c, ggid);

  *index = i;
  if (i < c->ntargets) {
    struct ckpt_target *t = &c->targets[i];

    if (value <= t->value)
      return 0;
    bool queued = t->epoch == epoch;
    t->value = value;
    t->epoch = epoch;
    if (c->epoch && epoch > c->epoch && !queued && !queue_change(c, i, SIZE_MAX))
      return -1;
    return 1;
  }
  if (!room_for_target(c) || !grow((void **)&c->targets, &c->cap, c->ntargets, sizeof(*c->targets)))
    return -1;
  c->targets[i] = (struct ckpt_target){.ggid = ggid, .value = value, .epoch = epoch};
  *target_slot(c, ggid) = i + 1;
  c->ntargets++;
  if (c->epoch && epoch > c->epoch && !queue_change(c, i, SIZE_MAX))
    return -1;
  return 1;
}

/* Makes rank a member of targets[target]; false when out of memory. */
static bool add_member(struct ckpt *c, size_t target, size_t rank)
{
  if (!grow((void **)&c->members, &c->members_cap, c->nmembers, sizeof(*c->members)))
    return false;
  struct ckpt_target *t = &c->targets[target];
  struct ckpt_rank *r = &c->ranks[rank];

  c->members[c->nmembers] = (struct ckpt_member){
      .target = target, .rank = rank, .next_in_target = t->members, .next_in_rank = r->groups};
  t->members = r->groups = ++c->nmembers;
  return true;
}

/* A rank's own groups are few; the group's members may be every rank. */
static bool is_member(const struct ckpt *c, size_t target, size_t rank)
{
  for (size_t m = c->ranks[rank].groups; m; m = c->members[m - 1].next_in_rank)
    if (c->members[m - 1].target == target)
      return true;
  return false;
}

/* rank reported ggid at seq (RAISE, PARKED): it is a member. One that was not yet (it joined
 * the group after its SEQ) and is below the target must be told it in the next epoch.
 * Returns 1 when that was queued, 0 when nothing needs telling, -1 when out of memory. */
static int join(struct ckpt *c, size_t target, size_t rank, uint64_t seq)
{
  if (is_member(c, target, rank))
    return 0;
  if (!add_member(c, target, rank))
    return -1;
  const struct ckpt_target *t = &c->targets[target];
  /* A change already queued for the next epoch reaches every member, this one included. */
  if (t->epoch == c->epoch + 1 || t->value <= seq)
    return 0;
  return queue_change(c, target, rank) ? 1 : -1;
}

static bool add_send(struct ckpt *c, size_t target, size_t rank)
{
  if (!grow((void **)&c->sends, &c->sends_cap, c->nsends, sizeof(*c->sends)))
    return false;
  struct ckpt_rank *r = &c->ranks[rank];

  if (r->sends_epoch != c->epoch) {
    r->sends_epoch = c->epoch;
    r->sends = 0;
  }
  c->sends[c->nsends] = (struct ckpt_send){.target = target, .next = r->sends};
  r->sends = ++c->nsends;
  return true;
}

/* The queued changes become the new epoch's TARGETS: the work is the number of entries sent,
 * whatever the number of ranks and groups. */
static bool build_sends(struct ckpt *c)
{
  c->nsends = 0;
  for (size_t i = 0; i < c->nchanges; i++) {
    const struct ckpt_change *ch = &c->changes[i];

    if (ch->rank != SIZE_MAX) {
      if (!add_send(c, ch->target, ch->rank))
        return false;
      continue;
    }
    for (size_t m = c->targets[ch->target].members; m; m = c->members[m - 1].next_in_target)
      if (!add_send(c, ch->target, c->members[m - 1].rank))
        return false;
  }
  c->nchanges = 0;
  return true;
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
  else if (r->state == CKPT_RANK_BLOCKED) {
    c->now_blocked += delta;
    if (r->held)
      c->now_blocked_held += delta;
  } else if (r->state == CKPT_RANK_PARKED)
    c->now_parked += delta;
  else if (r->state == CKPT_RANK_DONE)
    c->now_done += delta;
}

/* A new epoch: no rank has answered it yet, and the changes queued for it are its TARGETS.
 * False when out of memory. */
static bool next_epoch(struct ckpt *c)
{
  c->epoch++;
  c->now_answered = c->now_running = c->now_blocked = c->now_parked = c->now_done = 0;
  c->now_blocked_held = 0;
  return build_sends(c);
}

enum ckpt_action ckpt_on_seq(struct ckpt *c, size_t rank, const struct coord_entry *seq,
                             size_t count, bool more)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_SEQ || r->state != CKPT_RANK_ASKED)
    return ckpt_abort(c, "rank %zu sent SEQ twice", rank);
  for (size_t i = 0; i < count; i++) {
    size_t target;

    if (raise_target(c, seq[i].ggid, seq[i].value, 1, &target) < 0 || !add_member(c, target, rank))
      return ckpt_abort(c, "out of memory for the target table");
  }
  if (more)
    return CKPT_ACT_NONE;
  r->state = CKPT_RANK_SEQ;
  if (++c->seq_done < c->size)
    return CKPT_ACT_NONE;
  c->phase = CKPT_PHASE_CONVERGE;
  for (size_t i = 0; i < c->size; i++)
    c->ranks[i].state = CKPT_RANK_RUNNING; /* at epoch 0: not counted */
  if (!next_epoch(c))
    return ckpt_abort(c, "out of memory for the target table");
  return CKPT_ACT_TARGETS_ALL;
}

enum ckpt_action ckpt_on_raise(struct ckpt *c, size_t rank, uint64_t ggid, uint64_t target)
{
  int changed, told;
  size_t index;

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (c->phase != CKPT_PHASE_CONVERGE)
    return ckpt_abort(c, "rank %zu sent RAISE outside the convergence phase", rank);
  /* A rank that raises is about to enter a collective: it is running, whatever it
   * said before, until it answers the epoch that carries its raise. */
  count_status(c, &c->ranks[rank], -1);
  c->ranks[rank].state = CKPT_RANK_RUNNING;
  count_status(c, &c->ranks[rank], 1);
  /* A group nobody reported, at 0 (a rank made it while converging and joined it): 0 is
   * every rank's target until told otherwise, so it needs no epoch. */
  bool nothing_to_tell = target == 0 && find_target(c, ggid) == c->ntargets;
  changed = raise_target(c, ggid, target, nothing_to_tell ? c->epoch : c->epoch + 1, &index);
  if (nothing_to_tell && changed >= 0)
    return add_member(c, index, rank) ? CKPT_ACT_NONE
                                      : ckpt_abort(c, "out of memory for the target table");
  told = changed < 0 ? -1 : join(c, index, rank, target);
  if (told < 0)
    return ckpt_abort(c, "out of memory for the target table");
  if (changed == 0 && told == 0)
    return CKPT_ACT_NONE; /* someone raised it as far already: nothing to tell */
  c->raises += (uint64_t)changed;
  if (!next_epoch(c))
    return ckpt_abort(c, "out of memory for the target table");
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
  return all_current(c) && c->now_running == 0 && c->now_blocked > 0 &&
         (c->now_parked > 0 || c->now_blocked_held > 0);
}

bool ckpt_waits_on_done(const struct ckpt *c)
{
  return all_current(c) && c->now_running == 0 && c->now_parked == 0 && c->now_blocked > 0 &&
         c->now_done > 0;
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

    if (r->state != CKPT_RANK_PARKED && !(r->state == CKPT_RANK_BLOCKED && r->held))
      continue;
    size_t index;

    rc = raise_target(c, r->park_ggid, r->park_seq + 1, c->epoch + 1, &index);
    if (rc < 0)
      return ckpt_abort(c, "out of memory for the target table");
    raised += (size_t)rc;
  }
  if (!raised)
    return CKPT_ACT_NONE;
  c->releases++;
  if (!next_epoch(c))
    return ckpt_abort(c, "out of memory for the target table");
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

/* A rank parks only at a group it has joined, and its link reports every group it joined
 * before such a status (with RAISE); taking the park as a join too keeps a rank that did not
 * from being released at, or parked below, a target it never got. A group nobody reported
 * is new to the table at the rank's own seq, which nobody needs telling. Returns 1 when a
 * new epoch must tell something, 0 if not, -1 when out of memory. */
static int park_join(struct ckpt *c, size_t rank, const struct ckpt_park *at)
{
  size_t index = find_target(c, at->ggid);
  bool known = index < c->ntargets;
  int changed = raise_target(c, at->ggid, at->seq, known ? c->epoch + 1 : c->epoch, &index);

  if (changed < 0)
    return -1;
  if (!known)
    return add_member(c, index, rank) ? 0 : -1;
  int told = join(c, index, rank, at->seq);
  return told < 0 ? -1 : (changed || told);
}

/* After a status that says where the rank (a thread of it) waits, at (NULL: nowhere): it
 * joins that group; waiting below a target it was never sent, its status cannot count, and a
 * new epoch tells it. */
static enum ckpt_action after_joining(struct ckpt *c, size_t rank, const struct ckpt_park *at)
{
  int told = at ? park_join(c, rank, at) : 0;
  if (told < 0)
    return ckpt_abort(c, "out of memory for the target table");
  if (told == 0)
    return after_status(c);
  if (!next_epoch(c))
    return ckpt_abort(c, "out of memory for the target table");
  return CKPT_ACT_TARGETS_CHANGED;
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
  r->held = false;
  r->epoch = epoch;
  r->park_ggid = at ? at->ggid : 0;
  r->park_seq = at ? at->seq : 0;
  count_status(c, r, 1);
  return after_joining(c, rank, at);
}

static enum ckpt_action on_running(struct ckpt *c, size_t rank, uint64_t epoch, bool blocked,
                                   const struct ckpt_park *held)
{
  struct ckpt_rank *r = &c->ranks[rank];

  if (aborted(c))
    return CKPT_ACT_NONE;
  if (check_status(c, rank, "RUNNING", epoch) != CKPT_ACT_NONE)
    return CKPT_ACT_ABORT;
  count_status(c, r, -1);
  r->state = blocked ? CKPT_RANK_BLOCKED : CKPT_RANK_RUNNING;
  r->held = held != NULL;
  r->park_ggid = held ? held->ggid : 0;
  r->park_seq = held ? held->seq : 0;
  r->epoch = epoch;
  count_status(c, r, 1);
  /* A held thread may wait at a group its rank joined after its SEQ and never named (it
   * names those before a PARKED, not before this): it joins here, as a parked rank does,
   * or a release would raise a target the rank is never sent. */
  return after_joining(c, rank, held);
}

enum ckpt_action ckpt_on_running(struct ckpt *c, size_t rank, uint64_t epoch, bool blocked)
{
  return on_running(c, rank, epoch, blocked, NULL);
}

enum ckpt_action ckpt_on_blocked_held(struct ckpt *c, size_t rank, uint64_t epoch,
                                      const struct ckpt_park *at)
{
  return on_running(c, rank, epoch, true, at);
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
