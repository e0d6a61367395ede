/* The collective clock's peer gate (wrappers/collective_clock.c, docs/checkpoint-protocol.md
 * 3.3) against a fake lower half: a boundary page and thread slots at the window's address,
 * this process's own thread pointer as both halves'.  The test's main thread plays the
 * checkpoint thread through MANA_BOUNDARY->stub_cc; a second thread plays an application
 * thread entering MPI_Win_lock's gate.
 *
 * The invariant: from the status a rank reports at one epoch, a thread on its way to the gate
 * cannot turn "done" into "blocked" (the gate is about to park it: such a status crossed DRAIN
 * and the coordinator aborted the generation), while a thread the gate let in keeps the rank
 * from ever being "done". */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "mana/cc_status.h"
#include "mana/park.h"
#include "fake_boundary.h"
#include "stub.h"

#define SELF_ID 0x5e1full
#define WORLD_ID 0x3011dull

/* ---- the fake lower half, and what collective_clock.c needs from the rest of the stub ---- */

struct mana_table mana_tables[MANA_KIND_COUNT];
static struct mana_lh_table table;

uint64_t mana_comm_cc_id(MPI_Comm comm)
{
  return comm == MPI_COMM_SELF ? SELF_ID : WORLD_ID;
}

uint64_t mana_file_cc_id(MPI_File fh)
{
  (void)fh;
  return 0;
}

uint64_t mana_win_cc_id(MPI_Win win)
{
  (void)win;
  return 0;
}

void mana_park_point(void)
{
}

__thread struct mana_mpi_thread *mana_self_thread;

struct mana_mpi_thread *mana_thread_attach(void)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint32_t i = __atomic_fetch_add(&a->n_used, 1, __ATOMIC_ACQ_REL);
  struct mana_mpi_thread *t = &a->slot[i];
  t->upper_fs = t->lower_fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  return mana_self_thread = t;
}

static int f_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  (void)source, (void)tag, (void)comm, (void)status;
  *flag = 0;
  return MPI_SUCCESS;
}

/* The gate thread's first step on its slow path is to block the park signal (app_lock): the
 * status the checkpoint thread would report at that moment is taken here. */
static __thread int is_gate_thread;
static int probe_armed;
static enum cc_status status_on_the_way = CC_ST_NONE;

static long f_sigprocmask_raw(int how, const uint64_t *set, uint64_t *old)
{
  (void)set, (void)old;
  if (is_gate_thread && how == SIG_BLOCK &&
      __atomic_exchange_n(&probe_armed, 0, __ATOMIC_ACQ_REL)) {
    uint64_t ggid = 0, seq = 0;
    status_on_the_way = MANA_BOUNDARY->stub_cc->status(&ggid, &seq);
  }
  return 0;
}

static void boundary_up(void)
{
  table.MPI_Iprobe = f_iprobe;
  table.svc.sigprocmask_raw = f_sigprocmask_raw;
  fake_boundary_up(&table);
  mana_cc_register();
  mana_thread_attach(); /* the checkpoint thread's stand-in needs no slot, but holds slot 0 */
}

TestSuite(stub_peer_gate, .init = boundary_up, .timeout = 60);

/* ---- the checkpoint thread's side ---- */

/* A checkpoint that sets every group's target to its count: every target is met at epoch 1. */
static void checkpoint_with_targets_met(void)
{
  const struct mana_stub_cc *cc = MANA_BOUNDARY->stub_cc;
  char reason[128] = "";
  cr_assert_eq(cc->begin(reason, sizeof(reason)), 0, "begin: %s", reason);
  uint64_t cursor = 0, ggid, seq;
  while (cc->next(&cursor, &ggid, &seq))
    cr_assert_eq(cc->set_target(ggid, seq), 0);
  cc->targets_done(1);
}

static enum cc_status status_now(uint64_t *ggid)
{
  uint64_t seq = 0;
  *ggid = 0;
  return MANA_BOUNDARY->stub_cc->status(ggid, &seq);
}

/* Polls for `want` for up to 20 s (a loaded machine), failing with the last status seen. */
static void await_status(enum cc_status want, const char *what)
{
  uint64_t ggid;
  enum cc_status st = CC_ST_NONE;
  for (int i = 0; i < 20000; i++) {
    st = status_now(&ggid);
    if (st == want)
      return;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  cr_assert_fail("%s: status %d, expected %d after 20 s", what, (int)st, (int)want);
}

/* ---- the application thread ---- */

static int gate_stage; /* 1 inside the lock call, 2 told to leave it, 3 left */

static void *gate_thread(void *arg)
{
  (void)arg;
  is_gate_thread = 1;
  mana_cc_peer_gate_enter();
  __atomic_store_n(&gate_stage, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&gate_stage, __ATOMIC_ACQUIRE) != 2)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  mana_cc_peer_gate_leave();
  __atomic_store_n(&gate_stage, 3, __ATOMIC_RELEASE);
  return NULL;
}

static void await_stage(int stage)
{
  for (int i = 0; i < 20000 && __atomic_load_n(&gate_stage, __ATOMIC_ACQUIRE) != stage; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  cr_assert_eq(__atomic_load_n(&gate_stage, __ATOMIC_ACQUIRE), stage,
               "the gate thread did not reach stage %d within 20 s", stage);
}

Test(stub_peer_gate, done_stays_done_until_the_gate_lets_a_thread_in)
{
  const struct mana_stub_cc *cc = MANA_BOUNDARY->stub_cc;
  uint64_t ggid;

  /* Outside a checkpoint the gate lets the thread in at once (and registers MPI_COMM_SELF). */
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, gate_thread, NULL), 0);
  await_stage(1);
  __atomic_store_n(&gate_stage, 2, __ATOMIC_RELEASE);
  await_stage(3);
  pthread_join(th, NULL);

  /* A checkpoint with every target met, no thread in MPI: done. */
  checkpoint_with_targets_met();
  cr_assert_eq(status_now(&ggid), CC_ST_DONE, "no thread anywhere: the rank is done");

  /* A thread on its way into the gate: still done at that moment; then parked at the gate. */
  gate_stage = 0;
  __atomic_store_n(&probe_armed, 1, __ATOMIC_RELEASE);
  cr_assert_eq(pthread_create(&th, NULL, gate_thread, NULL), 0);
  await_status(CC_ST_PARKED, "the thread at the gate");
  cr_assert_eq(status_now(&ggid), CC_ST_PARKED);
  cr_assert_eq(ggid, SELF_ID, "parked at MPI_COMM_SELF's entry, got %#llx",
               (unsigned long long)ggid);
  cr_assert_eq(__atomic_load_n(&probe_armed, __ATOMIC_ACQUIRE), 0,
               "the gate thread never took the slow path");
  cr_assert_eq(status_on_the_way, CC_ST_DONE,
               "a thread on its way to the gate made the done rank report %d (blocked is %d): "
               "that status can cross DRAIN",
               (int)status_on_the_way, (int)CC_ST_BLOCKED);
  cr_assert_eq(gate_stage, 0, "the gate let the thread in during the checkpoint");

  /* The checkpoint ends: the thread goes in, and from then on no checkpoint finds it done. */
  cc->end();
  await_stage(1);
  checkpoint_with_targets_met();
  cr_assert_eq(status_now(&ggid), CC_ST_BLOCKED,
               "a thread inside the lock call (it may wait for a parked peer): never done");
  cc->end();

  /* It leaves: done again. */
  __atomic_store_n(&gate_stage, 2, __ATOMIC_RELEASE);
  await_stage(3);
  pthread_join(th, NULL);
  checkpoint_with_targets_met();
  cr_assert_eq(status_now(&ggid), CC_ST_DONE, "the thread left the lock call");
  cc->end();
}
