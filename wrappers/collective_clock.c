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
 * One thread at a time may be inside a collective wrapper (MPI_THREAD_MULTIPLE programs that
 * run collectives on several threads at once are not covered by the window handshake: see
 * the protocol document). */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "cc_algorithm.h"
#include "mana/raw_syscall.h"
#include "stub.h"

uint64_t mana_comm_cc_id(MPI_Comm comm);
uint64_t mana_file_cc_id(MPI_File fh);
uint64_t mana_win_cc_id(MPI_Win win);

static struct cc_state cc;
static int cc_ready;
static int cc_init_failed;
static volatile uint32_t cc_lock_word;
static int have_membarrier = -1;
static volatile int cc_concurrent; /* seen: collectives on two threads at once */ /* -1 unknown, 0 no (the fast path fences), 1 yes */

/* Bumped (under the lock) whenever a waiting thread must decide again: targets applied, a
 * checkpoint begun or ended.  Never reset: the clock's own epoch restarts at 1 with every
 * checkpoint, so a thread that slept through the end of one checkpoint and the start of the
 * next would see "its" epoch again and wait forever. */
static volatile uint64_t cc_news;

/* Application threads inside an MPI call that may wait for another rank's program (an RMA
 * lock waiting for its grant: window_sync.c).  Such a rank is never done (cc_status_op). */
static volatile int peer_waits;

/* Where the application's MPI thread waits at a collective entry (0: not waiting). */
static volatile uint64_t waiting_ggid, waiting_seq;

/* RAISEs queued by the application thread, sent by the checkpoint thread before its next
 * STATUS.  A rank raises at most once per group per epoch, so a small ring suffices; if it
 * ever fills, the clock is marked broken (the checkpoint is then refused, never unsafe). */
#define RAISE_RING 256
static struct {
  uint64_t ggid, target;
} raise_ring[RAISE_RING];
static volatile uint32_t raise_head, raise_tail; /* under the lock */

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

static uint64_t thread_pointer(void)
{
  uint64_t tp;
  __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
  return tp;
}

/* ---- application side ---- */

/* The id the clock counts a communicator on: equal on every member and after restart. */
static uint64_t comm_id(MPI_Comm comm)
{
  static uint64_t world_id, self_id;
  if (comm == MPI_COMM_WORLD)
    return world_id ? world_id : (world_id = mana_comm_cc_id(comm));
  if (comm == MPI_COMM_SELF)
    return self_id ? self_id : (self_id = mana_comm_cc_id(comm));
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  if (s && s->aux)
    return s->aux;
  uint64_t id = mana_comm_cc_id(comm);
  if (s)
    s->aux = id;
  return id;
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
    MANA_LH_CALL(MPI_Iprobe, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                 MPI_STATUS_IGNORE);
    nanosleep(&pause, NULL);
  }
}

static void enter_slow(uint64_t id, int constructor)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  enum cc_decision d;
  uint64_t to = 0;
  app_lock();
  if (ensure_ready() != 0) {
    b->cc_window = 2;
    app_unlock();
    return;
  }
  for (;;) {
    d = constructor ? cc_on_constructor_entry(&cc, id, &to) : cc_on_collective_entry(&cc, id, &to);
    if (d == CC_PROCEED || d == CC_RAISE)
      break;
    uint64_t news = cc_news;
    b->cc_window = 0;
    if (d == CC_PARK) {
      waiting_seq = cc_seq(&cc, id);
      waiting_ggid = id;
    }
    app_unlock();
    wait_for_news(news);
    app_lock();
    waiting_ggid = 0;
    b->cc_window = 1;
  }
  if (d == CC_RAISE)
    queue_raise(id, to);
  b->cc_window = 2;
  app_unlock();
}

/* Before a collective enters MPI.  The fast path (no checkpoint pending, group in its home
 * slot) costs the window stores and a table hit. */
static void enter_id(uint64_t id, int constructor)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  if (!id)
    return; /* no record: stub_can_checkpoint refuses this process anyway */
  uint64_t tp = thread_pointer();
  if (__builtin_expect(b->cc_window != 0, 0) && b->cc_window_fs != tp)
    cc_concurrent = 1; /* two threads in collectives at once: the handshake cannot cover it */
  b->cc_window_fs = tp;
  b->cc_window = 1;
  if (__builtin_expect(have_membarrier == 1, 1))
    __asm__ volatile("" ::: "memory"); /* the checkpoint thread's membarrier orders us */
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!constructor && __builtin_expect(cc_ready, 1) && cc_tick_fast(&cc, id)) {
    b->cc_window = 2;
    return;
  }
  enter_slow(id, constructor);
}

void mana_cc_enter(MPI_Comm comm, int constructor)
{
  enter_id(comm_id(comm), constructor);
}

/* Collective file operations count on the file's communicator. */
void mana_cc_enter_file(MPI_File fh)
{
  enter_id(mana_file_cc_id(fh), 0);
}

/* Fences and MPI_Win_free count on the window's own communicator. */
void mana_cc_enter_win(MPI_Win win)
{
  enter_id(mana_win_cc_id(win), 0);
}

void mana_cc_peer_wait(int delta)
{
  __atomic_add_fetch(&peer_waits, delta, __ATOMIC_SEQ_CST);
}

/* After the collective returned to the stub (and, for a constructor, after the new
 * communicator's record exists: `child` is it, or MPI_COMM_NULL). */
void mana_cc_leave(int kind, MPI_Comm child)
{
  if (kind) {
    uint64_t id = child != MPI_COMM_NULL ? comm_id(child) : 0;
    app_lock();
    if (ensure_ready() == 0) {
      if (kind == 1)
        cc_constructor_done(&cc, id);
      else if (id && cc_register(&cc, id) != 0)
        cc.broken = true;
    }
    app_unlock();
  }
  MANA_BOUNDARY->cc_window = 0;
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
  struct mana_boundary *b = MANA_BOUNDARY;
  lock();
  int concurrent = cc_concurrent;
  int rc = concurrent ? -1 : ensure_ready();
  if (rc == 0)
    rc = cc_begin(&cc);
  cc_news++;
  unlock();
  if (rc != 0) {
    copy_text(reason, len,
              concurrent ? "the application calls collectives on several threads at once "
                              "(MPI_THREAD_MULTIPLE): mana cannot find a safe point for that yet"
              : cc_init_failed || cc.broken
                  ? "the collective clock ran out of memory: its counts are incomplete"
                  : "a checkpoint is already in progress on this rank");
    return -1;
  }
  /* Every application thread has now either seen the new phase (its fast path fails and it
   * takes the lock) or its window word 1 is visible; wait for those to decide. */
  if (membarrier_ready())
    mana_raw_syscall4(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0, 0);
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  while (__atomic_load_n(&b->cc_window, __ATOMIC_ACQUIRE) == 1)
    mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
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

static int cc_status_op(uint64_t *ggid, uint64_t *seq)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  enum cc_where where = CC_AT_WORK;
  lock();
  if (waiting_ggid) {
    where = CC_AT_ENTRY;
    *ggid = waiting_ggid;
    *seq = waiting_seq;
  } else if (b->caller_upper_fs != 0 || b->cc_window == 2) {
    where = CC_AT_WAIT; /* inside MPI, or about to enter a counted collective */
  }
  int st = (int)cc_status(&cc, where);
  if (st == CC_ST_DONE && __atomic_load_n(&peer_waits, __ATOMIC_SEQ_CST))
    st = CC_ST_BLOCKED; /* may wait for a parked rank: the stall rule must see it */
  if (cc.broken)
    st = CC_ST_RUNNING; /* never done: the checkpoint cannot be safe */
  unlock();
  return st;
}

static void cc_end_op(void)
{
  lock();
  if (cc_ready)
    cc_end(&cc);
  raise_head = raise_tail = 0;
  cc_news++;
  unlock();
}

static const struct mana_stub_cc stub_cc = {
    .begin = cc_begin_op,
    .next = cc_next_op,
    .set_target = cc_set_target_op,
    .targets_done = cc_targets_done_op,
    .pop_raise = cc_pop_raise_op,
    .status = cc_status_op,
    .end = cc_end_op,
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
  have_membarrier = -1; /* a new process must register again */
  membarrier_ready();
  cc_end_op();
}
