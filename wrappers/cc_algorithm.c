/* The collective-clock safe-point algorithm: one rank's state machine (the coordinator's is
 * coordinator/coord_ckpt.c).
 * The rules and the reasons for them are in docs/checkpoint-protocol.md; the comments here
 * say why each piece of code is shaped the way it is. */
#include "cc_algorithm.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- memory ------------- */

static void *cc_mem_alloc(const struct cc_alloc *a, size_t size)
{
  return a->alloc ? a->alloc(a->ctx, size) : malloc(size);
}

static void cc_mem_free(const struct cc_alloc *a, void *p, size_t size)
{
  if (!p)
    return;
  if (a->free)
    a->free(a->ctx, p, size);
  else
    free(p);
}

/* ---------------------------------------------------------------- hash table --------- */

#define CC_MIN_CAPACITY 16u

static uint64_t table_capacity(const struct cc_table *t)
{
  return t->slots ? t->mask + 1 : 0;
}

static int table_alloc(struct cc_table *t, uint64_t capacity, const struct cc_alloc *a)
{
  struct cc_slot *slots = cc_mem_alloc(a, capacity * sizeof *slots);
  if (!slots)
    return -1;
  memset(slots, 0, capacity * sizeof *slots);
  t->slots = slots;
  t->mask = capacity - 1;
  t->count = 0;
  return 0;
}

/* Room for `expected` groups at most half full, so probe sequences stay short. */
static int table_init(struct cc_table *t, size_t expected, const struct cc_alloc *a)
{
  uint64_t capacity = CC_MIN_CAPACITY;
  while (capacity < 2 * (uint64_t)expected)
    capacity <<= 1;
  return table_alloc(t, capacity, a);
}

static void table_free(struct cc_table *t, const struct cc_alloc *a)
{
  cc_mem_free(a, t->slots, table_capacity(t) * sizeof *t->slots);
  memset(t, 0, sizeof *t);
}

static struct cc_slot *table_find(const struct cc_table *t, uint64_t ggid)
{
  if (ggid == 0)
    return NULL;
  for (struct cc_slot *s = cc_table_home(t, ggid);; s = &t->slots[(s - t->slots + 1) & t->mask]) {
    if (s->ggid == ggid)
      return s;
    if (s->ggid == 0)
      return NULL;
  }
}

/* The empty slot where ggid (known to be absent) goes. */
static struct cc_slot *table_free_slot(const struct cc_table *t, uint64_t ggid)
{
  struct cc_slot *s = cc_table_home(t, ggid);
  while (s->ggid != 0)
    s = &t->slots[(s - t->slots + 1) & t->mask];
  return s;
}

/* Doubles the table.  The old array is freed only after every entry moved. */
static int table_grow(struct cc_table *t, const struct cc_alloc *a)
{
  struct cc_table bigger;
  if (table_alloc(&bigger, 2 * table_capacity(t), a) != 0)
    return -1;
  for (uint64_t i = 0; i < table_capacity(t); i++)
    if (t->slots[i].ggid != 0)
      *table_free_slot(&bigger, t->slots[i].ggid) = t->slots[i];
  bigger.count = t->count;
  table_free(t, a);
  *t = bigger;
  return 0;
}

/* The slot of ggid, inserted with zero seq and target if absent; NULL when out of memory. */
static struct cc_slot *table_insert(struct cc_table *t, uint64_t ggid, const struct cc_alloc *a)
{
  struct cc_slot *s = table_find(t, ggid);
  if (s)
    return s;
  if (2 * (t->count + 1) > table_capacity(t) && table_grow(t, a) != 0)
    return NULL;
  s = table_free_slot(t, ggid);
  *s = (struct cc_slot){.ggid = ggid};
  t->count++;
  return s;
}

/* Is home index h cyclically in (hole, j]?  Then the entry at j may not move to hole. */
static bool home_between(uint64_t hole, uint64_t h, uint64_t j)
{
  return hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
}

/* Removal with backward shift: linear probing needs no tombstones if every later entry of
 * the cluster that may legally fill the hole moves into it. */
static void table_remove(struct cc_table *t, struct cc_slot *s)
{
  uint64_t hole = (uint64_t)(s - t->slots);
  for (uint64_t j = (hole + 1) & t->mask; t->slots[j].ggid != 0; j = (j + 1) & t->mask) {
    uint64_t h = (uint64_t)(cc_table_home(t, t->slots[j].ggid) - t->slots);
    if (!home_between(hole, h, j)) {
      t->slots[hole] = t->slots[j];
      hole = j;
    }
  }
  t->slots[hole] = (struct cc_slot){0};
  t->count--;
}

static void table_clear(struct cc_table *t)
{
  memset(t->slots, 0, table_capacity(t) * sizeof *t->slots);
  t->count = 0;
}

static bool table_next(const struct cc_table *t, uint64_t *cursor, struct cc_slot **out)
{
  for (; *cursor < table_capacity(t); (*cursor)++) {
    if (t->slots[*cursor].ggid != 0) {
      *out = &t->slots[(*cursor)++];
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------------- group ids ---------- */

/* A 64-bit bijective finalizer (xor-shift-multiply): every input bit affects every output
 * bit, so sums of mixed values behave like sums of random numbers. */
static uint64_t mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* Nonzero: 0 marks an empty table slot. */
static uint64_t nonzero(uint64_t id)
{
  return id ? id : 0x6d616e6167676964ull;
}

uint64_t cc_group_id(const int *world_ranks, size_t n)
{
  /* Sums are order-independent and need neither a sort nor a copy (a world of a million
   * ranks hashes in one pass).  Two sums of independent mixes give 128 bits of state, so
   * two different member sets collide only by chance, about 2^-64 per pair. */
  uint64_t a = 0, b = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t h = mix64((uint64_t)(uint32_t)world_ranks[i] + 0x9e3779b97f4a7c15ull);
    a += h;
    b += mix64(h ^ 0xd6e8feb86659fd93ull);
  }
  uint64_t size = mix64((uint64_t)n ^ 0xa0761d6478bd642full);
  return nonzero(mix64(a ^ mix64(b + size)));
}

uint64_t cc_id_mix(uint64_t ggid, uint64_t salt)
{
  return nonzero(mix64(ggid ^ mix64(salt + 0xe7037ed1a0b428dbull)));
}

/* ---------------------------------------------------------------- one rank ----------- */

/* The fast path reads the phase without the lock (an atomic load, so the race is defined). */
static void set_phase(struct cc_state *st, enum cc_phase phase)
{
  __atomic_store_n(&st->phase, phase, __ATOMIC_RELAXED);
}

/* Every change of a member's seq or target goes through here, so `unmet` (the number of
 * member groups with seq < target) is exact and cc_all_targets_met is O(1). */
static void member_set(struct cc_state *st, struct cc_slot *s, uint64_t seq, uint64_t target)
{
  st->unmet -= s->seq < s->target;
  s->seq = seq;
  s->target = target;
  st->unmet += seq < target;
}

int cc_init(struct cc_state *st, size_t capacity, const struct cc_alloc *alloc)
{
  memset(st, 0, sizeof *st);
  if (alloc)
    st->alloc = *alloc;
  if (table_init(&st->groups, capacity, &st->alloc) != 0)
    return -1;
  if (table_init(&st->foreign, 0, &st->alloc) != 0) {
    table_free(&st->groups, &st->alloc);
    return -1;
  }
  set_phase(st, CC_IDLE);
  return 0;
}

void cc_destroy(struct cc_state *st)
{
  table_free(&st->groups, &st->alloc);
  table_free(&st->foreign, &st->alloc);
}

/* The member slot of ggid, created if needed.  A target that arrived before this rank
 * joined the group (it was still inside the constructor when the table went out) moves in
 * from the foreign table. */
static struct cc_slot *member_slot(struct cc_state *st, uint64_t ggid)
{
  struct cc_slot *s = table_find(&st->groups, ggid);
  if (s)
    return s;
  s = table_insert(&st->groups, ggid, &st->alloc);
  if (!s) {
    st->broken = true;
    return NULL;
  }
  struct cc_slot *f = table_find(&st->foreign, ggid);
  if (f) {
    member_set(st, s, 0, f->target);
    table_remove(&st->foreign, f);
  }
  return s;
}

int cc_register(struct cc_state *st, uint64_t ggid)
{
  return ggid != 0 && member_slot(st, ggid) ? 0 : -1;
}

int cc_restore(struct cc_state *st, uint64_t ggid, uint64_t seq)
{
  struct cc_slot *s = ggid ? member_slot(st, ggid) : NULL;
  if (!s)
    return -1;
  member_set(st, s, seq, s->target);
  return 0;
}

int cc_tick_slow(struct cc_state *st, uint64_t ggid)
{
  struct cc_slot *s = member_slot(st, ggid);
  if (!s)
    return -1;
  member_set(st, s, s->seq + 1, s->target);
  return 0;
}

int cc_untick(struct cc_state *st, uint64_t ggid)
{
  struct cc_slot *s = table_find(&st->groups, ggid);
  if (!s || s->seq == 0)
    return -1;
  member_set(st, s, s->seq - 1, s->target);
  return 0;
}

int cc_forget(struct cc_state *st, uint64_t ggid)
{
  struct cc_slot *s = table_find(&st->groups, ggid);
  if (st->phase != CC_IDLE || !s)
    return -1;
  table_remove(&st->groups, s);
  return 0;
}

uint64_t cc_seq(const struct cc_state *st, uint64_t ggid)
{
  const struct cc_slot *s = table_find(&st->groups, ggid);
  return s ? s->seq : 0;
}

uint64_t cc_target(const struct cc_state *st, uint64_t ggid)
{
  const struct cc_slot *s = table_find(&st->groups, ggid);
  if (!s)
    s = table_find(&st->foreign, ggid);
  return s ? s->target : 0;
}

bool cc_awaits_joining(const struct cc_state *st)
{
  uint64_t cursor = 0;
  struct cc_slot *s;
  while (table_next(&st->foreign, &cursor, &s))
    if (s->target > 0)
      return true;
  return false;
}

bool cc_is_member(const struct cc_state *st, uint64_t ggid)
{
  return table_find(&st->groups, ggid) != NULL;
}

int cc_begin(struct cc_state *st)
{
  if (st->phase != CC_IDLE || st->broken)
    return -1;
  set_phase(st, CC_AWAIT_TARGETS);
  st->epoch = 0;
  return 0;
}

bool cc_next(const struct cc_state *st, uint64_t *cursor, uint64_t *ggid, uint64_t *seq)
{
  struct cc_slot *s;
  if (!table_next(&st->groups, cursor, &s))
    return false;
  *ggid = s->ggid;
  *seq = s->seq;
  return true;
}

int cc_set_target(struct cc_state *st, uint64_t ggid, uint64_t target)
{
  if (st->phase == CC_IDLE || ggid == 0)
    return 0; /* a late message of a checkpoint that is over */
  struct cc_slot *s = table_find(&st->groups, ggid);
  if (s) {
    if (target > s->target)
      member_set(st, s, s->seq, target);
    return 0;
  }
  /* Not (yet) a member: keep it, this rank may be inside the constructor of that group. */
  s = table_insert(&st->foreign, ggid, &st->alloc);
  if (!s) {
    st->broken = true;
    return -1;
  }
  if (target > s->target)
    s->target = target;
  return 0;
}

size_t cc_targets_done(struct cc_state *st, uint64_t epoch, cc_raise_fn *emit, void *ctx)
{
  if (st->phase == CC_IDLE)
    return 0;
  set_phase(st, CC_CONVERGE);
  if (epoch > st->epoch)
    st->epoch = epoch;
  /* A tick the SEQ snapshot missed leaves seq > target: the rank is already past (maybe
   * inside) a collective nobody else was asked to start, so everyone must be. */
  size_t raises = 0;
  uint64_t cursor = 0;
  struct cc_slot *s;
  while (table_next(&st->groups, &cursor, &s)) {
    if (s->seq > s->target) {
      member_set(st, s, s->seq, s->seq);
      raises++;
      if (emit)
        emit(ctx, s->ggid, s->seq);
    }
  }
  return raises;
}

bool cc_all_targets_met(const struct cc_state *st)
{
  switch (st->phase) {
  case CC_IDLE:
    return true;
  case CC_AWAIT_TARGETS:
    return false;
  case CC_CONVERGE:
    break;
  }
  return !st->broken && st->unmet == 0 && st->constructing == 0;
}

enum cc_decision cc_on_collective_entry(struct cc_state *st, uint64_t ggid, uint64_t *raise_to)
{
  struct cc_slot *s = member_slot(st, ggid);
  if (!s)
    return CC_PROCEED; /* broken: uncounted, and this rank can no longer be "done" */
  if (st->phase == CC_IDLE) {
    member_set(st, s, s->seq + 1, s->target);
    return CC_PROCEED;
  }
  if (st->phase == CC_AWAIT_TARGETS)
    return CC_WAIT;
  if (s->seq < s->target) {
    member_set(st, s, s->seq + 1, s->target);
    return CC_PROCEED;
  }
  /* Every target met: park here, even while another thread of this rank is inside a
   * constructor.  The rank does not look done until that constructor returns (its status
   * says so), so no safe point is declared meanwhile; raising here instead made threads
   * that take turns in constructors raise each other forever (MPICH's threads/comm/
   * dup_leak_test: four threads, each duplicating and freeing its own communicator). */
  if (!st->broken && st->unmet == 0)
    return CC_PARK;
  /* This group's target is met but another is not: the rank must pass this collective to
   * reach it, so every member must start it too. */
  member_set(st, s, s->seq + 1, s->seq + 1);
  if (raise_to)
    *raise_to = s->seq;
  return CC_RAISE;
}

enum cc_decision cc_on_constructor_entry(struct cc_state *st, uint64_t parent, uint64_t *raise_to)
{
  enum cc_decision d = cc_on_collective_entry(st, parent, raise_to);
  if (d == CC_PROCEED || d == CC_RAISE)
    st->constructing++;
  return d;
}

int cc_constructor_done(struct cc_state *st, uint64_t child)
{
  /* Register before leaving the constructor, so there is no moment at which this rank looks
   * done while a target of its new group is still waiting in the foreign table. */
  int rc = child ? cc_register(st, child) : 0;
  if (st->constructing > 0)
    st->constructing--;
  return rc;
}

enum cc_status cc_status(const struct cc_state *st, enum cc_where where)
{
  if (!cc_all_targets_met(st))
    return where == CC_AT_WAIT ? CC_ST_BLOCKED : CC_ST_RUNNING;
  return where == CC_AT_ENTRY ? CC_ST_PARKED : CC_ST_DONE;
}

void cc_end(struct cc_state *st)
{
  uint64_t cursor = 0;
  struct cc_slot *s;
  while (table_next(&st->groups, &cursor, &s))
    s->target = 0;
  table_clear(&st->foreign);
  st->unmet = 0;
  st->epoch = 0;
  set_phase(st, CC_IDLE);
  /* `constructing` stays: it describes a call in progress, which may outlive this
   * checkpoint and matter to the next one. */
}
