/* coord_ckpt: the coordinator's view of one checkpoint generation, as a pure state machine.
 *
 * No sockets, files or clocks: the coordinator feeds it what the ranks said and carries out
 * the action it returns (send TARGETS, DRAIN, commit, abort). That keeps the parts that
 * decide correctness - the target table, the epoch, the termination test, the stall release,
 * the order of the phases - testable on their own (tests/unit/test_coord_ckpt.c). The rules
 * are those of the collective clock (wrappers/cc_algorithm.h, whose rank side runs in the
 * engine):
 *
 *   SEQ       CKPT sent; every rank sends its collective-clock table (SEQ). When all have:
 *             target[g] = max over ranks of seq[g], epoch 1, TARGETS to every rank: to each
 *             the targets of the groups it is a member of.
 *   CONVERGE  ranks run to their targets. Each answers every epoch with its status:
 *             RUNNING (a target unmet), RUNNING blocked=1 (unmet, waiting inside MPI),
 *             PARKED at a collective (all met, waiting at the entry of a collective on
 *             ggid with SEQ seq) or PARKED elsewhere (all met, not at a collective).
 *             A RAISE that increases a target starts a new epoch at once: the change goes
 *             to the group's members (every rank gets a TARGETS, empty or not). A RAISE also
 *             makes its rank a member of the group: a rank that joined a group after its SEQ
 *             says so with a RAISE of its SEQ there, and if the target is above it, a new
 *             epoch carries the target to that rank. Stalled (all answered the current epoch, none RUNNING, some
 *             blocked, some parked at a collective) for a grace period: the coordinator
 *             releases the parked ranks (target = their seq + 1), a new epoch. Terminated
 *             (every rank PARKED at the current epoch): DRAIN to every rank.
 *   SUSPEND   ranks park every application thread and answer SUSPENDED; when every rank
 *             has: GO to every rank.  A rank that cannot park refuses or fails instead, and
 *             the generation aborts before any rank touched the network: the drain is
 *             collective, so it starts everywhere or nowhere.
 *   WRITE     ranks drain and write; when every rank is WRITTEN: commit.
 *   COMMIT    the coordinator writes MANIFEST and LATEST, then sends COMMITTED.
 *   ABORT     a rank refused, failed, broke the protocol or went away: ABORT to all.
 */
#ifndef MANA_COORD_CKPT_H
#define MANA_COORD_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_proto.h"

#define CKPT_REASON_MAX 512
#define CKPT_FILE_MAX 128 /* image file name, NUL included */
#define CKPT_XXH_MAX 64   /* hex digits of the image checksum */

enum ckpt_phase {
  CKPT_PHASE_SEQ,
  CKPT_PHASE_CONVERGE,
  CKPT_PHASE_SUSPEND,
  CKPT_PHASE_WRITE,
  CKPT_PHASE_COMMIT,
  CKPT_PHASE_ABORT
};

/* What one rank last told us (or was told) in this generation. */
enum ckpt_rank_state {
  CKPT_RANK_ASKED,      /* CKPT sent, SEQ not complete */
  CKPT_RANK_SEQ,        /* SEQ complete, waiting for the others */
  CKPT_RANK_RUNNING,    /* a target unmet, making progress (also: no answer yet) */
  CKPT_RANK_BLOCKED,    /* a target unmet, waiting inside MPI */
  CKPT_RANK_PARKED,     /* all targets met, at the entry of a collective (park_*) */
  CKPT_RANK_DONE,       /* all targets met, not at a collective */
  CKPT_RANK_SUSPENDING, /* DRAIN sent */
  CKPT_RANK_SUSPENDED,  /* SUSPENDED received */
  CKPT_RANK_DRAINING,   /* GO sent */
  CKPT_RANK_WRITING,    /* PROGRESS received */
  CKPT_RANK_WRITTEN     /* image written and synced */
};

enum ckpt_action {
  CKPT_ACT_NONE,
  CKPT_ACT_TARGETS_ALL,     /* epoch 1: TARGETS to every rank (ckpt_next_rank_target) */
  CKPT_ACT_TARGETS_CHANGED, /* a new epoch: TARGETS to every rank (ckpt_next_rank_target) */
  CKPT_ACT_DRAIN,           /* send DRAIN to every rank */
  CKPT_ACT_GO,              /* every rank SUSPENDED: send GO to every rank */
  CKPT_ACT_COMMIT,          /* every rank WRITTEN: commit */
  CKPT_ACT_ABORT            /* abort with ckpt.reason */
};

struct ckpt_rank {
  enum ckpt_rank_state state;
  uint64_t epoch;     /* epoch of its last status (0: none, or not given) */
  uint64_t park_ggid; /* CKPT_RANK_PARKED, or BLOCKED and held: the collective it (a thread
                         of it) waits at ... */
  uint64_t park_seq;  /* ... and its SEQ there */
  bool held;          /* CKPT_RANK_BLOCKED: another of its threads waits at park_ggid */
  uint64_t bytes;
  char file[CKPT_FILE_MAX];
  char xxh[CKPT_XXH_MAX + 1];
  uint64_t oldest; /* WRITTEN: the oldest generation its image refers to (gen: none older) */
  size_t groups;   /* its first ckpt_member + 1 (0: none) */
  size_t sends;    /* its first ckpt_send of epoch sends_epoch + 1 (0: none) */
  uint64_t sends_epoch;
};

struct ckpt_target {
  uint64_t ggid;
  uint64_t value;
  uint64_t epoch; /* the epoch that published its current value */
  size_t members; /* its first ckpt_member + 1 (0: none) */
};

/* A rank is a member of a group (it reported it in SEQ, RAISE or PARKED). Each member is on
 * two lists: its group's, walked when the target changes, and its rank's, walked for epoch 1. */
struct ckpt_member {
  size_t target, rank;
  size_t next_in_target, next_in_rank; /* index + 1, 0: the end */
};

/* One entry of one rank's TARGETS at the current epoch. */
struct ckpt_send {
  size_t target;
  size_t next; /* index + 1, 0: the end */
};

/* A change waiting for the next epoch: a target for all its members (rank SIZE_MAX) or for
 * one rank that joined its group. */
struct ckpt_change {
  size_t target, rank;
};

struct ckpt {
  uint64_t gen;
  uint64_t base; /* the committed generation CKPT named as base=, 0: a full image */
  size_t size;
  enum ckpt_phase phase;
  uint64_t epoch;          /* 0 until the first TARGETS */
  struct ckpt_rank *ranks; /* size entries */
  size_t seq_done;         /* ranks whose SEQ table is complete */
  size_t suspended;        /* ranks SUSPENDED */
  size_t written;          /* ranks WRITTEN */
  /* In order of first report; target_slots hashes ggid to index + 1 (0: free slot). Who gets
   * which target is kept per group and per rank, so that no step walks every group for every
   * rank: at 65,536 ranks with a communicator per node, that was 67 million entries. */
  struct ckpt_target *targets;
  size_t ntargets, cap;
  size_t *target_slots, target_mask;
  struct ckpt_member *members;
  size_t nmembers, members_cap;
  struct ckpt_send *sends; /* the current epoch's, every rank's lists */
  size_t nsends, sends_cap;
  struct ckpt_change *changes; /* for the next epoch */
  size_t nchanges, changes_cap;
  uint64_t raises, releases; /* statistics: targets raised by RAISE / by stall release */
  /* The ranks whose last status answers the current epoch, and how many of them are running,
   * blocked, parked at a collective or done: the termination and stall tests read these
   * instead of every rank, which after every status would be quadratic in the ranks. */
  size_t now_answered, now_running, now_blocked, now_parked, now_done;
  size_t now_blocked_held; /* of now_blocked: ranks with a thread held at a collective */
  /* Image file names reported so far, hashed (rank + 1 per slot, 0 free): a second rank
   * reporting a file already written is found without a scan of every rank. */
  size_t *file_slots, file_mask;
  char reason[CKPT_REASON_MAX];
};

/* Where a parked rank waits: the entry of a collective on ggid, its SEQ there being seq. */
struct ckpt_park {
  uint64_t ggid;
  uint64_t seq;
};

/* A generation for size ranks, in phase SEQ. Returns NULL when out of memory. */
struct ckpt *ckpt_new(uint64_t gen, size_t size);
void ckpt_free(struct ckpt *c);

/* Events. rank < size always (the caller checked it). Protocol violations abort. */
enum ckpt_action ckpt_on_seq(struct ckpt *c, size_t rank, const struct coord_entry *seq,
                             size_t count, bool more);
/* target[ggid] = max(target[ggid], target), and rank is a member of ggid from now on. */
enum ckpt_action ckpt_on_raise(struct ckpt *c, size_t rank, uint64_t ggid, uint64_t target);
/* All targets met at epoch; at says where it waits, NULL when not at a collective. A rank
 * parked at a group it never reported joins it, as with RAISE of its seq there. */
enum ckpt_action ckpt_on_parked(struct ckpt *c, size_t rank, uint64_t epoch,
                                const struct ckpt_park *at);
/* A target unmet; epoch 0 when the rank did not say which epoch it answers. */
enum ckpt_action ckpt_on_running(struct ckpt *c, size_t rank, uint64_t epoch, bool blocked);
/* Blocked (a thread waits inside MPI) while another of its threads waits at the entry of a
 * collective, at: under MPI_THREAD_MULTIPLE a rank is both, and what its blocked thread, or
 * another rank's, waits for may be the held one. */
enum ckpt_action ckpt_on_blocked_held(struct ckpt *c, size_t rank, uint64_t epoch,
                                      const struct ckpt_park *at);
/* Every application thread of the rank is parked: it waits for GO to drain. */
enum ckpt_action ckpt_on_suspended(struct ckpt *c, size_t rank);
enum ckpt_action ckpt_on_progress(struct ckpt *c, size_t rank, uint64_t bytes);
/* oldest: the oldest generation the image refers to (an incremental image reads pages from
 * older generations' images), 0 when the rank did not say: the generation itself. Anything
 * but gen itself or a generation no newer than base is a protocol violation: the images
 * between base and gen were never committed. */
enum ckpt_action ckpt_on_written(struct ckpt *c, size_t rank, uint64_t bytes, const char *file,
                                 const char *xxh, uint64_t oldest);
enum ckpt_action ckpt_on_failed(struct ckpt *c, size_t rank, const char *reason);
enum ckpt_action ckpt_on_refuse(struct ckpt *c, size_t rank, const char *reason);
enum ckpt_action ckpt_on_disconnect(struct ckpt *c, size_t rank);
/* Anything else that ends the generation (a request to stop, a commit that failed). */
enum ckpt_action ckpt_abort(struct ckpt *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Targets published at epoch >= since (0: all), in the order their groups were first
 * reported: start with *cursor = 0; false at the end. The whole table: what a rank is sent
 * is ckpt_next_rank_target's. */
bool ckpt_next_target(const struct ckpt *c, uint64_t since, size_t *cursor,
                      struct coord_entry *out);

/* The entries of rank's TARGETS at the current epoch: at epoch 1 the target of every group
 * it is a member of; later, the targets of its groups that changed at this epoch and those of
 * groups it joined that it must learn. Each group at most once, in no particular order. Valid
 * until the next event; start with *cursor = 0, false at the end. */
bool ckpt_next_rank_target(const struct ckpt *c, size_t rank, size_t *cursor,
                           struct coord_entry *out);

/* The termination test: in CONVERGE, every rank PARKED or DONE at the current epoch. */
bool ckpt_converged(const struct ckpt *c);

/* The stall test: in CONVERGE, every rank answered the current epoch, none is RUNNING, some
 * rank is BLOCKED and some is PARKED at a collective, or BLOCKED with a thread held at one (it
 * may owe the blocked one a message it sends only after that collective). */
bool ckpt_stalled(const struct ckpt *c);

/* In CONVERGE, every rank answered the current epoch, none is RUNNING or PARKED, some is
 * BLOCKED and the others are DONE: only a done rank's own progress can move the blocked ones
 * (an RMA lock it holds, a message it has yet to send).  The coordinator then tells the ranks
 * (NUDGE), so that a rank held by the test trigger goes on instead of waiting for its limit. */
bool ckpt_waits_on_done(const struct ckpt *c);

/* Lets every rank PARKED at a collective, and every BLOCKED rank's thread held at one, pass
 * it (target = its seq + 1) and starts a new epoch: CKPT_ACT_TARGETS_CHANGED, or CKPT_ACT_NONE when nothing changed. Safe at any time;
 * the coordinator calls it when a stall has lasted a grace period. */
enum ckpt_action ckpt_release(struct ckpt *c);

/* The target of ggid, or false when the table has no such group. */
bool ckpt_target(const struct ckpt *c, uint64_t ggid, uint64_t *target);

/* The oldest generation the committed images refer to: the minimum of the ranks' oldest,
 * the generation itself when none refers to an older one. */
uint64_t ckpt_needs(const struct ckpt *c);

/* Bytes reported so far (PROGRESS and WRITTEN) over all ranks. */
uint64_t ckpt_bytes(const struct ckpt *c);

/* How a message's gen= relates to the generation in progress (c may be NULL) given the
 * newest generation ever started: CURRENT goes to the state machine, STALE (an older or
 * abandoned generation) is ignored, FUTURE is a protocol error. */
enum ckpt_gen_match { CKPT_GEN_CURRENT, CKPT_GEN_STALE, CKPT_GEN_FUTURE };
enum ckpt_gen_match ckpt_match_gen(const struct ckpt *c, uint64_t newest_started, uint64_t gen);

/* Image names are plain file names: [A-Za-z0-9._-], not starting with '.', at most
 * CKPT_FILE_MAX - 1 bytes, not MANIFEST. Checksums are 8 to 64 lowercase hex digits. */
bool ckpt_valid_file_name(const char *name);
bool ckpt_valid_xxh(const char *xxh);

const char *ckpt_phase_name(enum ckpt_phase phase);
const char *ckpt_rank_state_name(enum ckpt_rank_state state);

#endif
