/* The collective clock in the stub (docs/checkpoint-protocol.md 1.11): every collective
 * call (blocking, non-blocking, persistent initialization, neighbourhood, communicator
 * constructors) counts one on its communicator's id before it enters MPI; during a checkpoint
 * the same entry decides whether to go on, raise a target or wait.  The checkpoint thread
 * drives the other side through MANA_BOUNDARY->stub_cc.
 *
 * Two kinds of thread run this code: application threads (upper-half thread pointer) and the
 * lower half's checkpoint thread (lower-half thread pointer).  Nothing here may therefore use
 * thread-local state or the upper half's libc: memory comes from mmap (served inside the
 * window by mana's seccomp filter), locking and signal masks from raw system calls.
 *
 * Several application threads may be inside collective wrappers at once (MPI_THREAD_MULTIPLE,
 * on different communicators as MPI requires): each has its own window word and waiting place
 * in its MPI thread slot (mana/mpi_threads.h).  The checkpoint thread's handshake waits for
 * every slot's window, and a thread that must grow the table of groups makes the same
 * handshake first, so no other thread counts into a table that is moving. */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "cc_algorithm.h"
#include "mana/raw_syscall.h"
#include "stub.h"
#include "stub_lock.h"

uint64_t mana_comm_cc_id(MPI_Comm comm);
uint64_t mana_file_cc_id(MPI_File fh);
uint64_t mana_win_cc_id(MPI_Win win);

static struct cc_state cc;
static int cc_ready;
static int cc_init_failed;
static volatile uint32_t cc_lock_word;
static int have_membarrier = -1; /* -1 unknown, 0 no (the fast path fences), 1 yes */
/* Nonzero while a thread grows the table of groups: the fast path stays off it. */
static volatile uint32_t cc_fast_off;

/* Bumped (under the lock) whenever a waiting thread must decide again: targets applied, a
 * checkpoint begun or ended.  Never reset: the clock's own epoch restarts at 1 with every
 * checkpoint, so a thread that slept through the end of one checkpoint and the start of the
 * next would see "its" epoch again and wait forever. */
static volatile uint64_t cc_news;

/* Application threads inside an MPI call that may wait for another rank's program (an RMA
 * lock waiting for its grant: window_sync.c).  Such a rank is never done (cc_status_op).  A
 * thread is counted by the gate's decision that lets it in, never before: counted on its way
 * to the gate, it turned a rank that had reported done into a blocked one at the same epoch,
 * although the gate was about to park it, and that status could cross DRAIN (the coordinator
 * then aborts the generation: seen once in restart.trigger.rma_lock_contention.3ranks). */
static volatile int peer_waits;

/* RAISEs queued by the application thread, sent by the checkpoint thread before its next
 * STATUS.  A rank raises at most once per group per epoch, so a small ring suffices; if it
 * ever fills, the clock is marked broken (the checkpoint is then refused, never unsafe). */
#define RAISE_RING 256
static struct {
  uint64_t ggid, target;
} raise_ring[RAISE_RING];
static volatile uint32_t raise_head, raise_tail; /* under the lock */

/* A collective MPI refused was taken off a count the pending checkpoint's targets may rest on
 * (mana_cc_failed): the checkpoint thread refuses the checkpoint unless the ranks meet the
 * targets with collectives MPI started (boundary.h, spoiled).  Under the lock; cleared when a
 * checkpoint begins or ends. */
static int cc_spoiled;

/* ---- memory, lock, signals: no TLS ---- */

static void *cc_mmap(void *ctx, size_t size)
{
  (void)ctx;
  long p = mana_raw_syscall6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p < 0 && p > -4096 ? NULL : (void *)p;
}

static void cc_munmap(void *ctx, void *p, size_t size)
{
  (void)ctx;
  mana_raw_syscall4(SYS_munmap, (long)p, (long)size, 0, 0);
}

static void lock(void)
{
  while (__atomic_exchange_n(&cc_lock_word, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&cc_lock_word, __ATOMIC_RELAXED))
      mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
}

static void unlock(void)
{
  __atomic_store_n(&cc_lock_word, 0, __ATOMIC_RELEASE);
}

/* An application thread must not be parked while it holds the lock: the checkpoint thread
 * needs it to finish the checkpoint. */
static void park_signal_block(int block)
{
  uint64_t set = 1ull << (MANA_PARK_SIGNAL - 1);
  MANA_BOUNDARY->lh->svc.sigprocmask_raw(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void app_lock(void)
{
  park_signal_block(1);
  lock();
}

static void app_unlock(void)
{
  unlock();
  park_signal_block(0);
}

static int ensure_ready(void)
{
  if (__builtin_expect(cc_ready, 1))
    return 0;
  if (cc_init_failed)
    return -1;
  struct cc_alloc a = {cc_mmap, cc_munmap, NULL};
  if (cc_init(&cc, 64, &a) != 0) {
    cc_init_failed = 1;
    return -1;
  }
  cc_ready = 1;
  return 0;
}

static int membarrier_ready(void);

static void barrier_for_windows(void)
{
  if (membarrier_ready())
    mana_raw_syscall4(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0, 0);
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Waits until no application thread but `self` is between its window and its decision. */
static void wait_for_windows(const struct mana_mpi_thread *self)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint32_t n = __atomic_load_n(&a->n_used, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; i++)
    while (&a->slot[i] != self && __atomic_load_n(&a->slot[i].cc_window, __ATOMIC_ACQUIRE) == 1)
      mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
}

/* Registering a group may grow the table the fast path reads without the lock.  Called with
 * the lock held, by an application thread (`self`). */
static int register_guarded(struct mana_mpi_thread *self, uint64_t id)
{
  if (cc_is_member(&cc, id))
    return 0;
  __atomic_store_n(&cc_fast_off, 1, __ATOMIC_SEQ_CST);
  barrier_for_windows();
  wait_for_windows(self);
  int rc = cc_register(&cc, id);
  __atomic_store_n(&cc_fast_off, 0, __ATOMIC_RELEASE);
  return rc;
}

/* Forgetting a group moves entries of the table the fast path reads without the lock. */
void mana_cc_forget_id(uint64_t id)
{
  struct mana_mpi_thread *self = mana_self_thread;
  if (!id || !self)
    return;
  app_lock();
  if (ensure_ready() == 0 && cc.phase == CC_IDLE && cc_is_member(&cc, id)) {
    __atomic_store_n(&cc_fast_off, 1, __ATOMIC_SEQ_CST);
    barrier_for_windows();
    wait_for_windows(self);
    cc_forget(&cc, id);
    __atomic_store_n(&cc_fast_off, 0, __ATOMIC_RELEASE);
  }
  app_unlock();
}

/* ---- application side ---- */

/* The id the clock counts a communicator on: equal on every member and after restart.
 * Cached: MPI_COMM_WORLD's and MPI_COMM_SELF's here, a created communicator's in its slot. */
static uint64_t world_id, self_id;

static __attribute__((noinline)) uint64_t comm_id_slow(MPI_Comm comm, struct mana_slot *s)
{
  if (comm == MPI_COMM_WORLD)
    return world_id ? world_id : (world_id = mana_comm_cc_id(comm));
  if (comm == MPI_COMM_SELF)
    return self_id ? self_id : (self_id = mana_comm_cc_id(comm));
  uint64_t id = mana_comm_cc_id(comm);
  if (s)
    s->aux = id;
  return id;
}

static inline uint64_t comm_id(MPI_Comm comm)
{
  if (comm == MPI_COMM_WORLD && world_id)
    return world_id;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  if (s && s->aux)
    return s->aux;
  return comm_id_slow(comm, s);
}

static void queue_raise(uint64_t ggid, uint64_t target)
{
  uint32_t next = (raise_head + 1) % RAISE_RING;
  if (next == raise_tail) {
    cc.broken = true;
    return;
  }
  raise_ring[raise_head].ggid = ggid;
  raise_ring[raise_head].target = target;
  raise_head = next;
}

/* Waits outside the lock until the checkpoint thread applied new targets or ended the
 * checkpoint, keeping this rank's MPI progress going: a peer may wait for a message this rank
 * is still pushing out.  Parkable: the window is closed and the signal unblocked. */
static void wait_for_news(uint64_t news)
{
  struct timespec pause = {0, 200000};
  while (__atomic_load_n(&cc_news, __ATOMIC_ACQUIRE) == news) {
    int flag;
    MANA_LH_CALL(MPI_Iprobe, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    nanosleep(&pause, NULL);
  }
}

/* The fast path failed: decide under the lock.  The window is 0 while the thread waits for
 * the lock (a thread growing the table holds it and waits for windows at 1); deciding, it
 * holds the lock, which is all the checkpoint thread's snapshot needs.  Kept out of line: inlined,
 * its registers made every collective's fast path save and restore six of them. */
static __attribute__((noinline, cold)) void enter_slow(struct mana_mpi_thread *t, uint64_t id,
                                                       int constructor, int peer)
{
  enum cc_decision d = CC_PROCEED;
  uint64_t to = 0;
  t->cc_window = 0;
  app_lock();
  t->cc_window = 1;
  if (ensure_ready() != 0) {
    if (peer)
      __atomic_add_fetch(&peer_waits, 1, __ATOMIC_SEQ_CST);
    t->cc_window = 2;
    app_unlock();
    return;
  }
  /* A group this thread has not counted on yet may grow the table: register it behind the
   * handshake, so the decision below never has to. */
  if (!cc_is_member(&cc, id) && register_guarded(t, id) != 0)
    cc.broken = true;
  for (;;) {
    d = constructor ? cc_on_constructor_entry(&cc, id, &to) : cc_on_collective_entry(&cc, id, &to);
    if (d == CC_PROCEED || d == CC_RAISE)
      break;
    uint64_t news = cc_news;
    t->cc_window = 0;
    if (d == CC_PARK) {
      t->waiting_seq = cc_seq(&cc, id);
      t->waiting_ggid = id;
    }
    app_unlock();
    wait_for_news(news);
    app_lock();
    t->waiting_ggid = 0;
    t->cc_window = 1;
  }
  /* MPI_COMM_SELF's group is this rank alone (the passive-target locks count there,
   * window_sync.c): no other rank's target depends on it, so a raise there is this rank's
   * business.  Telling the coordinator cost a round of every rank per MPI_Win_lock and
   * MPI_Win_unlock while a checkpoint converged (MPICH's rma/test4 with 400 of them took more
   * than 240 s to reach its safe point). */
  if (d == CC_RAISE && id != comm_id(MPI_COMM_SELF))
    queue_raise(id, to);
  /* Counted below a target during a checkpoint: no target rests on this count. */
  t->cc_count_seen = d == CC_RAISE || cc.phase == CC_IDLE;
  if (peer) /* under the lock the status snapshot takes */
    __atomic_add_fetch(&peer_waits, 1, __ATOMIC_SEQ_CST);
  t->cc_window = 2;
  app_unlock();
}

/* Before a collective enters MPI.  The fast path (no checkpoint pending, group in its home
 * slot) costs the window stores and a table hit.  `peer`: the call may wait for another
 * rank's program (peer_waits), a constant everywhere. */
static inline __attribute__((always_inline)) void enter_id(uint64_t id, int constructor, int peer)
{
  if (!id)
    return; /* no record: stub_can_checkpoint refuses this process anyway */
  struct mana_mpi_thread *t = mana_self_thread;
  if (__builtin_expect(!t, 0))
    t = mana_thread_attach();
  t->cc_window = 1;
  t->cc_ggid = id;
  t->cc_count_seen = 1;
  if (__builtin_expect(have_membarrier == 1, 1))
    __asm__ volatile("" ::: "memory"); /* the other side's membarrier orders us */
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!constructor && __builtin_expect(cc_ready, 1) && !cc_fast_off && cc_tick_fast(&cc, id)) {
    /* Counted while the window is still 1: a checkpoint that begins now waits for the window
     * (cc_begin_op), so its first status sees the count. */
    if (peer)
      __atomic_add_fetch(&peer_waits, 1, __ATOMIC_SEQ_CST);
    t->cc_window = 2;
    return;
  }
  enter_slow(t, id, constructor, peer);
}

void mana_cc_enter(MPI_Comm comm, int constructor)
{
  enter_id(comm_id(comm), constructor, 0);
}

/* Constructors over groups count on an id their caller computed (comm.c). */
void mana_cc_enter_id(uint64_t id, int constructor)
{
  enter_id(id, constructor, 0);
}

/* MPI_Init makes MPI_COMM_WORLD and MPI_COMM_SELF: until both are registered the rank is
 * "constructing" (1.7), so it cannot look done while a target of MPI_COMM_WORLD it has not
 * counted on yet waits in the foreign table (a peer may already be inside a collective on
 * it: it would never be "all met" otherwise).  No checkpoint can begin before MPI_Init has
 * connected the rank to the coordinator. */
void mana_cc_init_enter(void)
{
  app_lock();
  if (ensure_ready() == 0)
    cc.constructing++;
  app_unlock();
}

void mana_cc_init_leave(int initialized)
{
  uint64_t world = initialized ? comm_id(MPI_COMM_WORLD) : 0;
  uint64_t self = initialized ? comm_id(MPI_COMM_SELF) : 0;
  app_lock();
  if (ensure_ready() == 0 &&
      ((self && cc_register(&cc, self) != 0) || cc_constructor_done(&cc, world) != 0))
    cc.broken = true;
  app_unlock();
}

/* Collective file operations count on the file's communicator. */
void mana_cc_enter_file(MPI_File fh)
{
  enter_id(mana_file_cc_id(fh), 0, 0);
}

/* Fences and MPI_Win_free count on the window's own communicator. */
void mana_cc_enter_win(MPI_Win win)
{
  enter_id(mana_win_cc_id(win), 0, 0);
}

/* Counted by the decision that lets the thread in (enter_id): a rank cannot report done, then
 * enter the call unseen, nor look blocked while the gate is about to park it. */
void mana_cc_peer_gate_enter(void)
{
  enter_id(comm_id(MPI_COMM_SELF), 0, 1);
}

void mana_cc_peer_gate_leave(void)
{
  mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);
  __atomic_sub_fetch(&peer_waits, 1, __ATOMIC_SEQ_CST);
}

/* mana_cc_leave (stub.h) of a constructor, after the collective returned to the stub and the
 * new communicator's record exists: `child` is it, or MPI_COMM_NULL. */
void mana_cc_leave_made(enum mana_cc_call call, MPI_Comm child)
{
  mana_cc_leave_made_id(call, child != MPI_COMM_NULL ? comm_id(child) : 0);
}

void mana_cc_leave_made_id(enum mana_cc_call call, uint64_t id)
{
  struct mana_mpi_thread *t = mana_self_thread;
  app_lock();
  if (ensure_ready() == 0) {
    if (id && !cc_is_member(&cc, id) && register_guarded(t, id) != 0)
      cc.broken = true;
    if (call == MANA_CC_CONSTRUCTOR)
      cc_constructor_done(&cc, id);
  }
  app_unlock();
  if (t)
    t->cc_window = 0;
}

/* Error classes of MPICH's argument checks, which run before a collective starts anything:
 * MPI refused the call.  Counted, it would leave this rank's count one above what MPI started
 * for the rest of the run (MPICH's errors/coll/noalias: only the root of an MPI_Reduce whose
 * buffers alias fails, and it makes the reduce again, which the other rank made once). */
static int refused_before_starting(int rc)
{
  int cls = MPI_ERR_OTHER;
  if (MANA_LH_CALL_NOPARK(MPI_Error_class, rc, &cls) != MPI_SUCCESS)
    return 0;
  switch (cls) {
  case MPI_ERR_BUFFER:
  case MPI_ERR_COUNT:
  case MPI_ERR_TYPE:
  case MPI_ERR_TAG:
  case MPI_ERR_COMM:
  case MPI_ERR_RANK:
  case MPI_ERR_ROOT:
  case MPI_ERR_GROUP:
  case MPI_ERR_OP:
  case MPI_ERR_TOPOLOGY:
  case MPI_ERR_DIMS:
  case MPI_ERR_ARG:
  case MPI_ERR_INFO:
    return 1;
  default:
    return 0;
  }
}

void mana_cc_failed(int rc)
{
  struct mana_mpi_thread *t = mana_self_thread;
  if (!t || t->cc_window != 2 || !t->cc_ggid || !refused_before_starting(rc))
    return;
  app_lock();
  if (ensure_ready() == 0 && cc_untick(&cc, t->cc_ggid) == 0 && cc.phase != CC_IDLE) {
    /* Taken back below a target this rank did not set, it leaves the rank one collective
     * short, which its program makes next like every member's; set by this count, the target
     * may wait for a collective that never comes. */
    if (t->cc_count_seen)
      cc_spoiled = 1;
    cc_news++; /* threads waiting at an entry decide again */
  }
  app_unlock();
}

/* ---- checkpoint thread side (MANA_BOUNDARY->stub_cc) ---- */

static size_t copy_text(char *dst, size_t len, const char *src)
{
  size_t i = 0;
  while (len && src[i] && i + 1 < len) {
    dst[i] = src[i];
    i++;
  }
  if (len)
    dst[i] = '\0';
  return i;
}

static int membarrier_ready(void)
{
  if (have_membarrier < 0)
    have_membarrier =
        mana_raw_syscall4(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0) == 0;
  return have_membarrier;
}

static int cc_begin_op(char *reason, size_t len)
{
  lock();
  int rc = ensure_ready();
  if (rc == 0)
    rc = cc_begin(&cc);
  cc_spoiled = 0;
  cc_news++;
  unlock();
  if (rc != 0) {
    copy_text(reason, len,
              cc_init_failed || cc.broken
                  ? "the collective clock ran out of memory: its counts are incomplete"
                  : "a checkpoint is already in progress on this rank");
    return -1;
  }
  /* Every application thread has now either seen the new phase (its fast path fails and it
   * takes the lock) or its window word 1 is visible; wait for those to decide. */
  barrier_for_windows();
  wait_for_windows(NULL);
  return 0;
}

static int cc_next_op(uint64_t *cursor, uint64_t *ggid, uint64_t *seq)
{
  lock();
  int more = cc_next(&cc, cursor, ggid, seq);
  unlock();
  return more;
}

static int cc_set_target_op(uint64_t ggid, uint64_t target)
{
  lock();
  int rc = cc_set_target(&cc, ggid, target);
  unlock();
  return rc;
}

static void raise_emit(void *ctx, uint64_t ggid, uint64_t target)
{
  (void)ctx;
  queue_raise(ggid, target);
}

static void cc_targets_done_op(uint64_t epoch)
{
  lock();
  cc_targets_done(&cc, epoch, raise_emit, NULL);
  cc_news++;
  unlock();
}

static int cc_pop_raise_op(uint64_t *ggid, uint64_t *target)
{
  int got = 0;
  lock();
  if (raise_tail != raise_head) {
    *ggid = raise_ring[raise_tail].ggid;
    *target = raise_ring[raise_tail].target;
    raise_tail = (raise_tail + 1) % RAISE_RING;
    got = 1;
  }
  unlock();
  return got;
}

/* Where the rank stands, from its threads: one waiting at a collective entry (parked there,
 * when every target is met), one inside MPI or about to enter a counted collective (blocked,
 * while a target is unmet).  With all targets met, a thread can wait at an entry only because
 * they are met, so the rank is parked there; with a target unmet, a waiting thread is about to
 * decide again, and what holds the rank back is a thread inside MPI, if any. */
static enum cc_where rank_where(uint64_t *ggid, uint64_t *seq)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint32_t n = __atomic_load_n(&a->n_used, __ATOMIC_ACQUIRE);
  int waiting = 0, inside = 0;
  for (uint32_t i = 0; i < n; i++) {
    const struct mana_mpi_thread *t = &a->slot[i];
    if (!t->upper_fs)
      continue;
    if (t->waiting_ggid && !waiting) {
      waiting = 1;
      *ggid = t->waiting_ggid;
      *seq = t->waiting_seq;
    }
    if (t->in_lower > 0 || t->cc_window == 2)
      inside = 1;
  }
  if (cc_all_targets_met(&cc))
    return waiting ? CC_AT_ENTRY : CC_AT_WORK;
  return inside ? CC_AT_WAIT : waiting ? CC_AT_ENTRY : CC_AT_WORK;
}

static enum cc_status cc_status_op(uint64_t *ggid, uint64_t *seq)
{
  lock();
  enum cc_where where = rank_where(ggid, seq);
  enum cc_status st = cc_status(&cc, where);
  if (st == CC_ST_DONE && __atomic_load_n(&peer_waits, __ATOMIC_SEQ_CST))
    st = CC_ST_BLOCKED; /* may wait for a parked rank: the stall rule must see it */
  if (cc.broken)
    st = CC_ST_RUNNING; /* never done: the checkpoint cannot be safe */
  unlock();
  return st;
}

static int cc_awaited_op(void)
{
  lock();
  int awaited = cc_ready && cc_awaits_joining(&cc);
  unlock();
  return awaited;
}

static void cc_end_op(void)
{
  lock();
  if (cc_ready)
    cc_end(&cc);
  cc_spoiled = 0;
  raise_head = raise_tail = 0;
  cc_news++;
  unlock();
}

static int cc_spoiled_op(void)
{
  lock();
  int spoiled = cc_spoiled;
  unlock();
  return spoiled;
}

static int cc_still_met_op(void)
{
  lock();
  int met = cc_ready && cc_all_targets_met(&cc);
  unlock();
  return met;
}

static const struct mana_stub_cc stub_cc = {
    .begin = cc_begin_op,
    .next = cc_next_op,
    .set_target = cc_set_target_op,
    .targets_done = cc_targets_done_op,
    .pop_raise = cc_pop_raise_op,
    .status = cc_status_op,
    .awaited = cc_awaited_op,
    .end = cc_end_op,
    .spoiled = cc_spoiled_op,
    .still_met = cc_still_met_op,
};

void mana_cc_register(void)
{
  MANA_BOUNDARY->stub_cc = &stub_cc;
  membarrier_ready();
}

/* A restarted process: no thread can hold the lock (threads never park holding it, and the
 * checkpoint thread that may have held it is gone); the checkpoint that wrote the image is
 * over, and no thread is waiting at an entry yet (a parked waiter re-checks when resumed). */
void mana_cc_after_restart(void)
{
  cc_lock_word = 0;
  mana_stub_lock = (struct mana_stub_lock){0, 0, 0};
  have_membarrier = -1; /* a new process must register again */
  membarrier_ready();
  cc_end_op();
}
