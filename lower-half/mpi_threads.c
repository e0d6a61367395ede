/* Lower-half thread pointers for the application's MPI-calling threads (mana/mpi_threads.h).
 *
 * A slot's thread pointer belongs to a "holder": a lower-half thread made only for it, which
 * blocks every signal and waits forever, so the application thread that borrows its thread
 * pointer is the only one ever to run on it.  Holders are made by a factory thread, because the
 * application thread asking for one has no lower-half thread pointer yet and may not run the
 * lower half's libc: it posts the slot number with raw system calls and waits.
 *
 * Holders are never signalled by the parking machinery (their signals are blocked, so a park
 * signal would stay pending and the round would wait for it): park.c skips their ids. */
#define _GNU_SOURCE
#include "mpi_threads.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs_selector.h"
#include "mana/fs_switch.h"
#include "mana/mpi_threads.h"
#include "mana/raw_syscall.h"
#include "mana/signals.h"
#include "mana/fail.h"

#define HOLDER_STACK (128 * 1024)

/* Ids of the threads the parking machinery must leave alone (holders, the factory). */
static volatile pid_t quiet_tids[MANA_MAX_MPI_THREADS + 1];
static volatile uint32_t n_quiet;

/* The request channel between application threads and the factory: one request at a time
 * (the stub holds the table's lock while it asks). */
static volatile uint32_t request_word, done_word, request_slot;
static int factory_running;

static void futex_wait(volatile uint32_t *word, uint32_t expected)
{
  mana_raw_syscall4(SYS_futex, (long)word, FUTEX_WAIT, expected, 0);
}

static void futex_wake(volatile uint32_t *word)
{
  mana_raw_syscall4(SYS_futex, (long)word, FUTEX_WAKE, 0x7fffffff, 0);
}

static void note_quiet(pid_t tid)
{
  uint32_t i = __atomic_fetch_add(&n_quiet, 1, __ATOMIC_ACQ_REL);
  if (i < sizeof(quiet_tids) / sizeof(quiet_tids[0]))
    quiet_tids[i] = tid;
}

int mana_mpi_threads_is_quiet(pid_t tid)
{
  uint32_t n = __atomic_load_n(&n_quiet, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n && i < sizeof(quiet_tids) / sizeof(quiet_tids[0]); i++)
    if (quiet_tids[i] == tid)
      return 1;
  return 0;
}

struct holder_start {
  volatile uint64_t fs;
  volatile pid_t tid;
  volatile uint32_t ready;
};

static void block_signals(void)
{
  sigset_t all;
  mana_sigset_block_all(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
}

/* Testing aid (MANA_TEST_HOLDER_QUIET_DELAY_MS=N): a new holder waits N ms between blocking its
 * signals and saying it is quiet, so that a park round begun meanwhile signals it, as one
 * does now and then by chance (tests/programs/mt_new_threads.c). */
static long holder_quiet_delay_ms;

static void *holder_main(void *arg)
{
  struct holder_start *h = arg;
  static volatile uint32_t never;
  block_signals();
  if (holder_quiet_delay_ms > 0) {
    struct timespec ts = {holder_quiet_delay_ms / 1000, (holder_quiet_delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  h->tid = gettid();
  note_quiet(h->tid);
  h->fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
  futex_wake(&h->ready);
  for (;;)
    futex_wait(&never, 0);
  return NULL;
}

/* A new holder for `slot`, and the selector a crossing to it loads (*sel, 0 for wrfsbase); its
 * thread pointer, or 0 with a message.  Its stack, and with it its thread control block, is
 * below 4 GiB when that can be had (fs_selector.c); it is never freed, as holders never end. */
static uint64_t make_holder(uint32_t slot, uint32_t *sel, pid_t *tid)
{
  struct holder_start h = {0, 0, 0};
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  void *stack = mana_fs_low_stack(HOLDER_STACK);
  if (stack)
    pthread_attr_setstack(&attr, stack, HOLDER_STACK);
  else
    pthread_attr_setstacksize(&attr, HOLDER_STACK);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, holder_main, &h);
  pthread_attr_destroy(&attr);
  *sel = 0;
  if (rc != 0) {
    fprintf(stderr, "mana_lh: cannot make a lower-half thread for MPI thread slot %u: %s\n", slot,
            strerror(rc));
    if (stack)
      munmap(stack, HOLDER_STACK);
    return 0;
  }
  while (!__atomic_load_n(&h.ready, __ATOMIC_ACQUIRE))
    futex_wait(&h.ready, 0);
  *sel = mana_fs_selector_for(slot, h.fs);
  if (tid)
    *tid = h.tid;
  return h.fs;
}

/* Gives `slot` a fresh holder: the selector first, so that a thread that sees the thread
 * pointer also sees how to enter with it. */
static uint64_t give_holder(struct mana_mpi_thread *s, uint32_t slot)
{
  uint32_t sel;
  uint64_t fs = make_holder(slot, &sel, NULL);
  s->lower_sel = sel;
  __atomic_store_n(&s->lower_fs, fs, __ATOMIC_RELEASE);
  return fs;
}

/* Holder 0, whose thread pointer the lower half's main thread runs on from the first call of
 * mana_mpi_threads_main_fs, and its selector. */
static uint64_t main_fs;
static uint32_t main_sel;
static pid_t main_holder_tid;

pid_t mana_mpi_threads_main_holder_tid(void)
{
  return main_fs ? main_holder_tid : 0;
}

uint64_t mana_mpi_threads_main_fs(void)
{
  int fsgs = (int)MANA_BOUNDARY->have_fsgsbase;
  if (main_fs)
    return main_fs;
  uint64_t fs = make_holder(0, &main_sel, &main_holder_tid);
  if (!fs)
    return mana_get_fs(fsgs); /* reported; slot 0 then enters with wrfsbase */
  /* Same stack guard and pointer guard (pthread_create copies them from this thread), so the
   * functions now on the stack return through their checks. */
  mana_set_fs(fsgs, fs);
  main_fs = fs;
  return fs;
}

static volatile uint32_t factory_ready;

static void *factory_main(void *arg)
{
  (void)arg;
  block_signals();
  note_quiet(gettid());
  __atomic_store_n(&factory_ready, 1, __ATOMIC_RELEASE);
  futex_wake(&factory_ready);
  uint32_t seen = request_word;
  for (;;) {
    while (request_word == seen)
      futex_wait(&request_word, seen);
    seen = request_word;
    uint32_t slot = request_slot;
    if (slot < MANA_MAX_MPI_THREADS)
      give_holder(&MANA_MPI_THREADS->slot[slot], slot);
    __atomic_add_fetch(&done_word, 1, __ATOMIC_RELEASE);
    futex_wake(&done_word);
  }
  return NULL;
}

int mana_mpi_threads_start(void)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  a->slot[0].lower_sel = MANA_BOUNDARY->lower_fs == main_fs ? main_sel : 0;
  a->slot[0].lower_fs = MANA_BOUNDARY->lower_fs;
  if (factory_running)
    return 0;
  const char *delay = getenv("MANA_TEST_HOLDER_QUIET_DELAY_MS");
  holder_quiet_delay_ms = delay ? atol(delay) : 0;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, factory_main, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    fprintf(stderr, "mana_lh: cannot start the MPI thread factory: %s\n", strerror(rc));
    return -1;
  }
  factory_running = 1;
  /* Parking skips it only once it is known as quiet: it blocks the park signal. */
  while (!__atomic_load_n(&factory_ready, __ATOMIC_ACQUIRE))
    futex_wait(&factory_ready, 0);
  return 0;
}

uint64_t mana_mpi_thread_lower_fs(uint32_t slot)
{
  uint32_t done = __atomic_load_n(&done_word, __ATOMIC_ACQUIRE);
  request_slot = slot;
  __atomic_add_fetch(&request_word, 1, __ATOMIC_RELEASE);
  futex_wake(&request_word);
  while (__atomic_load_n(&done_word, __ATOMIC_ACQUIRE) == done)
    futex_wait(&done_word, done);
  return MANA_MPI_THREADS->slot[slot].lower_fs;
}

int mana_mpi_threads_restore(char *err, size_t errlen)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  a->lock = 0; /* no thread runs yet; one may have parked holding it while it claimed a slot */
  if (mana_mpi_threads_start() != 0) {
    return mana_fail(err, errlen, 0, "cannot start the MPI thread factory");
  }
  for (uint32_t i = 1; i < a->n_used && i < MANA_MAX_MPI_THREADS; i++) {
    struct mana_mpi_thread *s = &a->slot[i];
    /* A free slot gets its holder again when a thread claims it. */
    s->lower_sel = 0;
    s->lower_fs = 0;
    if (s->upper_fs && !give_holder(s, i)) {
      return mana_fail(err, errlen, 0, "cannot give MPI thread slot %u a lower-half thread", i);
    }
  }
  return 0;
}
