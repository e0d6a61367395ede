/* The collective-clock (CC) safe-point algorithm, as pure state machines.
 *
 * A checkpoint may not start while any rank is inside a collective that some member has not
 * entered.  Each rank counts the collectives it starts per group (SEQ); on a checkpoint
 * request the coordinator computes TARGET[g] = max over members of SEQ[g]; every rank then
 * runs until SEQ[g] == TARGET[g] for all its groups and parks at the entry of its next
 * collective.  docs/checkpoint-protocol.md states the rules, the messages, the assumptions
 * and why the result is safe and terminates.
 *
 * One rank's machine lives here (struct cc_state: its SEQ/TARGET table and its decisions),
 * with no MPI, no I/O, no clocks and no globals; the coordinator's side (target table, epochs,
 * termination and stall tests) is mana_coordinator's coordinator/coord_ckpt.c, and
 * tests/unit/test_cc_sim.c runs the two together.  The caller moves the messages.  The
 * machine is not thread-safe: the stub serializes the
 * application threads and the checkpoint thread as described in the protocol document, and
 * only the fast path (cc_tick_fast) may run without the lock.
 *
 * A group id (ggid) is a nonzero 64-bit value that every member computes alike, normally
 * cc_group_id() of the members' world ranks.  0 is never a valid ggid. */
#ifndef MANA_CC_ALGORITHM_H
#define MANA_CC_ALGORITHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mana/cc_status.h"

/* Linked into the stub libmpich.so.12, which exports with default visibility: names this short
 * must neither leave the library nor be interposed by an application's own cc_init. */
#pragma GCC visibility push(hidden)

/* Memory for the tables.  The stub passes an allocator that stays in the upper half's window
 * (its libc's malloc does); NULL members mean the C library's malloc/free. */
struct cc_alloc {
  void *(*alloc)(void *ctx, size_t size); /* zeroing not required */
  void (*free)(void *ctx, void *p, size_t size);
  void *ctx;
};

/* One open-addressing slot: key 0 means empty. */
struct cc_slot {
  uint64_t ggid;
  uint64_t seq;    /* rank: collectives started; coordinator: epoch of the last change */
  uint64_t target; /* 0 while no checkpoint is pending */
};

/* Linear probing, power-of-two capacity, at most half full; never shrinks except by rebuild. */
struct cc_table {
  struct cc_slot *slots;
  uint64_t mask; /* capacity - 1 */
  uint64_t count;
};

/* ---------------------------------------------------------------- group ids ---------- */

/* The id of the group whose members have these world ranks.  Order-independent: the same
 * member set in any order gives the same id (an intercommunicator's two sides list their
 * groups in opposite orders; a split with reversed keys has the same members).  Depends on
 * nothing but the values, so it is the same on every rank and after every restart.  Never 0.
 * n == 0 gives a fixed id of the empty group. */
uint64_t cc_group_id(const int *world_ranks, size_t n);

/* A derived id, for callers that want several counters for one member set (for instance one
 * per communicator: see "Communicators that share a member set" in the protocol document). */
uint64_t cc_id_mix(uint64_t ggid, uint64_t salt);

/* ---------------------------------------------------------------- one rank ----------- */

enum cc_phase {
  CC_IDLE,          /* no checkpoint: every collective proceeds */
  CC_AWAIT_TARGETS, /* cc_begin done, targets not yet in: collectives wait at their entry */
  CC_CONVERGE       /* targets known: the rules below apply */
};

struct cc_state {
  struct cc_table groups;  /* groups this rank belongs to */
  struct cc_table foreign; /* targets of groups it does not (yet) belong to */
  enum cc_phase phase;
  uint64_t epoch;        /* newest TARGETS epoch applied */
  uint64_t unmet;        /* member groups with seq < target */
  uint32_t constructing; /* inside a blocking communicator constructor */
  bool broken;           /* a table could not grow: counts are incomplete, so this rank
                              refuses checkpoints (cc_begin fails) and never reports done */
  struct cc_alloc alloc;
};

enum cc_decision {
  CC_PROCEED, /* counted (SEQ++): enter MPI */
  CC_RAISE,   /* counted, and this rank raised the group's target: send RAISE first */
  CC_PARK,    /* not counted: all targets met; report PARKED and wait for new targets */
  CC_WAIT     /* not counted: targets not known yet; wait for them (nothing to report) */
};

/* Where the application thread is when the status is computed: running (computing, or in
 * MPI calls that return), waiting in MPI (a blocking point-to-point or wait loop, or inside a
 * blocking collective), or held at a collective entry by CC_PARK. */
enum cc_where { CC_AT_WORK, CC_AT_WAIT, CC_AT_ENTRY };

/* capacity: expected number of groups (rounded up; the table grows as needed).
 * Returns 0, or -1 when out of memory. */
int cc_init(struct cc_state *st, size_t capacity, const struct cc_alloc *alloc);
void cc_destroy(struct cc_state *st);

/* Makes this rank a member of ggid (SEQ 0 if new).  Called when a communicator is created,
 * before any collective on it.  A target already received for ggid applies from now on.
 * Returns 0, or -1 when out of memory. */
int cc_register(struct cc_state *st, uint64_t ggid);

/* Restores a member's SEQ (restart: the table read back from the image). */
int cc_restore(struct cc_state *st, uint64_t ggid, uint64_t seq);

/* Counts one collective on ggid in any phase, registering the group if it is new (and
 * picking up a target that waited for it).  The caller holds the lock.  Returns 0, or -1 when
 * out of memory (the state is then broken). */
int cc_tick_slow(struct cc_state *st, uint64_t ggid);

/* Takes back one collective counted on ggid, which MPI refused before it communicated (an
 * argument error: MPICH checks arguments before it starts anything), so that SEQ counts the
 * collectives MPI started.  During a checkpoint a target may already rest on the count taken
 * back: the caller then refuses that checkpoint (docs/checkpoint-protocol.md, "Collectives
 * MPI refused").  The caller holds the lock.  Returns 0, or -1 (not a member, SEQ 0). */
int cc_untick(struct cc_state *st, uint64_t ggid);

/* Drops member group ggid, whose count no member will need again (a persistent collective
 * request freed: its starts are behind the free, which its communicator counts).  Only while
 * no checkpoint is pending, when no target rests on it; the caller keeps the fast path out of
 * the table meanwhile (it may move entries).  Returns 0, or -1 (a checkpoint is pending, or
 * not a member): the group then stays. */
int cc_forget(struct cc_state *st, uint64_t ggid);

static inline struct cc_slot *cc_table_home(const struct cc_table *t, uint64_t ggid)
{
  /* Fibonacci hashing spreads ids that are not already mixed (tests, derived ids). */
  return &t->slots[((ggid * 0x9e3779b97f4a7c15ull) >> 32) & t->mask];
}

/* The fast path: one collective started on ggid while no checkpoint is pending.  A hit in
 * the home slot costs a multiply, three loads, two compares and an increment.  False when it
 * did not count: a checkpoint is pending, or the group is new or not in its home slot; the
 * caller then takes the lock and asks cc_on_collective_entry (or cc_tick_slow).  The phase is
 * read without the lock on purpose: docs/checkpoint-protocol.md ("Sharing the state between
 * threads") says why a stale read is harmless. */
static inline bool cc_tick_fast(struct cc_state *st, uint64_t ggid)
{
  struct cc_slot *s = cc_table_home(&st->groups, ggid);
  /* Relaxed: the ordering comes from the window word and membarrier, not from this load. */
  if (__builtin_expect(s->ggid == ggid && __atomic_load_n(&st->phase, __ATOMIC_RELAXED) == CC_IDLE,
                       1)) {
    s->seq++;
    return true;
  }
  return false;
}

/* Counts one collective on ggid whatever the phase (registering it if new).  For
 * single-threaded callers and the slow path.  Returns 0, or -1 when out of memory. */
static inline int cc_tick(struct cc_state *st, uint64_t ggid)
{
  return cc_tick_fast(st, ggid) ? 0 : cc_tick_slow(st, ggid);
}

uint64_t cc_seq(const struct cc_state *st, uint64_t ggid);    /* 0 if not a member */
uint64_t cc_target(const struct cc_state *st, uint64_t ggid); /* member or foreign */
/* Another rank has started a collective on a group this rank has not joined yet (its target
 * waits in the foreign table): this rank is on its way into that group's constructor. */
bool cc_awaits_joining(const struct cc_state *st);
bool cc_is_member(const struct cc_state *st, uint64_t ggid);

/* A checkpoint request arrived: from now on collectives wait for targets.  The caller then
 * sends the SEQ table (cc_next).  Returns -1 if a checkpoint is already pending or the state
 * is broken (the caller refuses the checkpoint). */
int cc_begin(struct cc_state *st);

/* Iterates over the member groups: start with *cursor = 0; false at the end. */
bool cc_next(const struct cc_state *st, uint64_t *cursor, uint64_t *ggid, uint64_t *seq);

/* One entry of a TARGETS message: target[ggid] = max(target[ggid], target).  Unknown ggids are
 * kept aside (this rank may join the group later, see cc_register).  Ignored while idle.
 * Returns 0, or -1 when out of memory. */
int cc_set_target(struct cc_state *st, uint64_t ggid, uint64_t target);

/* A raise this rank must report before anything else: it has already counted past the target
 * (possible only if the SEQ snapshot missed a tick: a defence, the stub's protocol prevents
 * it). */
typedef void cc_raise_fn(void *ctx, uint64_t ggid, uint64_t target);

/* The TARGETS message of this epoch is fully applied.  The first one ends CC_AWAIT_TARGETS.
 * Every member group whose SEQ exceeds its target raises it to SEQ and is passed to emit
 * (may be NULL).  Returns the number of raises. */
size_t cc_targets_done(struct cc_state *st, uint64_t epoch, cc_raise_fn *emit, void *ctx);

/* The decision at the entry of a collective (or a non-blocking initiation, or an MPI_Start of
 * a persistent collective) on ggid.  On CC_RAISE, *raise_to is the new target: queue a RAISE
 * on the coordinator channel before the rank enters MPI and before its next STATUS (the
 * channel is FIFO, so no acknowledgement is needed).  CC_PARK and CC_WAIT change nothing:
 * ask again after new targets.
 * An unregistered ggid is registered first; if that runs out of memory the state is broken
 * (see cc_state.broken) and the collective proceeds uncounted. */
enum cc_decision cc_on_collective_entry(struct cc_state *st, uint64_t ggid, uint64_t *raise_to);

/* The same for a blocking communicator constructor on parent: after a counted decision the
 * rank is "constructing" and cannot be done until cc_constructor_done, because the new
 * communicator's group may already carry a target (other members may be inside its first
 * collective). */
enum cc_decision cc_on_constructor_entry(struct cc_state *st, uint64_t parent, uint64_t *raise_to);
/* The constructor returned: registers child (0: this rank got no communicator). */
int cc_constructor_done(struct cc_state *st, uint64_t child);

/* True when no checkpoint is pending, or every member group has SEQ >= TARGET and no
 * constructor is in progress.  False while targets are awaited. */
bool cc_all_targets_met(const struct cc_state *st);

/* The status to report, given where the application thread is. */
enum cc_status cc_status(const struct cc_state *st, enum cc_where where);

/* The checkpoint is over (written or aborted): targets and foreign entries are dropped, SEQ
 * stays.  Collectives proceed again. */
void cc_end(struct cc_state *st);

#pragma GCC visibility pop

#endif
