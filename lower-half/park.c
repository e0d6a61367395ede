/* Parking the upper half's threads (see mana/park.h).
 *
 * The checkpoint thread sets park_requested and signals every thread of the process.  The
 * handler sorts them by thread pointer: a thread on a window TCB is running upper-half code and
 * parks right in the handler, whose signal frame keeps its complete register state; a thread on
 * the lower half's borrowed TCB is inside an MPI call and parks when the call returns to the
 * stub (the stub checks park_requested after every call, and blocking calls return early when
 * it is set); any other thread belongs to the lower half (UCX, mana's own) and goes on.  A
 * thread interrupted inside the upper half's C library is declined and signalled again a
 * moment later, unless it waits in a system call (park_libc.c: it may hold a lock of libc's
 * that a restarted process needs before the thread runs again); so is one interrupted inside
 * the stub's code on its own thread pointer, which may already be past its call's last park
 * check.
 *
 * mana_park_self runs on the parking thread with the upper half's thread pointer, so it uses no
 * TLS and no libc: raw system calls only. */
#define _GNU_SOURCE
#include "park.h"

#include "clock_calls.h"
#include "interrupted_calls.h"
#include "interrupted_waits.h"
#include "mpi_threads.h"
#include "park_libc.h"
#include "sigsys.h"
#include "state.h"
#include "timed_waits.h"

#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "mana/fs_switch.h"
#include "mana/raw_syscall.h"
#include "mana/mpi_threads.h"
#include "mana/park.h"
#include "mana/signals.h"
#include "mana/fail.h"
#include "mana/fault.h"

/* The bounds of this executable's code (the linker defines them). */
extern char __executable_start[], etext[];

/* Round bookkeeping, deliberately outside the window (see mana/park.h). */
static volatile uint32_t release_word; /* futex: changes when parked threads may go on */
static volatile uint32_t parked;       /* threads parked in this round */
static volatile uint32_t not_upper;    /* signalled threads that are the lower half's own */
/* Which they are: a round counts a thread that settled otherwise (quiet, exited) only if it is
 * not among them, so every one must be kept (as many as a round can signal). */
#define MAX_SIGNALLED 4096
static volatile uint32_t not_upper_tids[MAX_SIGNALLED], not_upper_listed;
/* Threads the handler declined (inside the upper libc, park_libc.c; on their way out of a
 * wrapper; before an application's signal handler), to be signalled again; a slot holds a
 * thread id or 0.  Declines overall, and the last thread declined, for the timeout's message. */
enum { MAX_DECLINED = 64 };
static volatile uint32_t declined_tids[MAX_DECLINED];
static volatile uint32_t declines, last_declined, declined_lost;

static void futex_wait(volatile uint32_t *word, uint32_t expected)
{
  mana_raw_syscall4(SYS_futex, (long)word, FUTEX_WAIT, expected, 0);
}

static void futex_wake_all(volatile uint32_t *word)
{
  mana_raw_syscall4(SYS_futex, (long)word, FUTEX_WAKE, 0x7fffffff, 0);
}

static uint32_t raw_gettid(void)
{
  return (uint32_t)mana_raw_syscall4(SYS_gettid, 0, 0, 0, 0);
}

static int in_window(uint64_t addr)
{
  return addr >= MANA_WINDOW_BASE && addr < MANA_WINDOW_END;
}

static struct mana_thread_record *record_for(uint32_t tid)
{
  struct mana_park_area *area = MANA_PARK;
  struct mana_thread_record *free_slot = NULL;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    struct mana_thread_record *r = &area->threads[i];
    if (r->state != MANA_THREAD_FREE && r->tid == tid)
      return r;
    if (!free_slot && r->state == MANA_THREAD_FREE)
      free_slot = r;
  }
  if (free_slot) {
    /* Claim it atomically: two threads may park at once. */
    uint32_t expected = MANA_THREAD_FREE;
    if (!__atomic_compare_exchange_n(&free_slot->state, &expected, MANA_THREAD_RUNNING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return record_for(tid);
    free_slot->tid = tid;
    __atomic_add_fetch(&area->n_records, 1, __ATOMIC_RELAXED);
  }
  return free_slot;
}

static int record_parked(uint32_t tid)
{
  const struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++)
    if (area->threads[i].state == MANA_THREAD_PARKED && area->threads[i].tid == tid)
      return 1;
  return 0;
}

void mana_park_self(int in_signal_handler_arg)
{
  volatile int in_signal_handler = in_signal_handler_arg;
  struct mana_boundary *b = MANA_BOUNDARY;
  struct mana_park_area *area = MANA_PARK;
  /* A thread parking at a park point blocks every signal it can while parked, as the park
   * signal's handler does: the park signal, or parked twice over its image would hold the
   * inner park, and the outer one would wait for a release that a restarted process never
   * sends; and the application's signals, or their handlers would run on a parked thread and
   * change its memory while the image is written (a POSIX timer's handler counting ticks made
   * a page's checksum wrong).  They stay pending, and are taken once the thread's mask is back
   * (state_pending.c saves them for a restart). */
  uint64_t saved_mask = 0;
  if (!in_signal_handler) {
    uint64_t parked_mask = ~(uint64_t)MANA_SIGNALS_NEVER_BLOCKED;
    mana_raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&parked_mask, (long)&saved_mask, 8);
  }
  uint32_t tid = raw_gettid();
  /* volatile: it must be re-read from the stack after a resume in a restarted process */
  struct mana_thread_record *volatile r = record_for(tid);
  if (!r) {
    if (!in_signal_handler)
      mana_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved_mask, 0, 8);
    return; /* more threads than records: cannot park this one; the checkpoint times out */
  }
  uint32_t release = release_word;
  r->upper_fs = mana_get_fs((int)b->have_fsgsbase);
  r->in_signal_handler = (uint32_t)in_signal_handler;
  r->is_main = tid == area->main_tid_at_start;
  if (!in_signal_handler)
    r->sigmask = saved_mask;
  if (mana_context_save(&r->ctx) == 0) {
    r->state = MANA_THREAD_PARKED;
    __atomic_add_fetch(&parked, 1, __ATOMIC_RELEASE);
    futex_wake_all(&parked);
    while (release_word == release)
      futex_wait(&release_word, release);
    if (r->is_main)
      mana_state_pending_requeue((uint32_t)mana_raw_syscall4(SYS_getpid, 0, 0, 0, 0), 0);
    else
      mana_state_pending_wait_requeued();
    r->state = MANA_THREAD_RUNNING;
    if (!in_signal_handler)
      mana_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&r->sigmask, 0, 8);
    return;
  }
  /* Resumed in a restarted process: new kernel thread id, same everything else. */
  r->tid = raw_gettid();
  r->state = MANA_THREAD_RUNNING;
  /* Its pending signals, again: every signal is still blocked here, so they wait for the mask
   * the thread had (restored below or by the signal frame), as they did before. */
  uint32_t pid = (uint32_t)mana_raw_syscall4(SYS_getpid, 0, 0, 0, 0);
  if (r->is_main)
    mana_state_pending_requeue(pid, r->tid);
  for (int sig = 1; sig <= 64; sig++) {
    siginfo_t timer_info;
    if (!(r->pending_signals & (1ull << (sig - 1))))
      continue;
    if (mana_posix_timer_siginfo(sig, &timer_info))
      mana_raw_syscall4(SYS_rt_tgsigqueueinfo, pid, r->tid, sig, (long)&timer_info);
    else
      mana_raw_syscall4(SYS_tgkill, pid, r->tid, sig, 0);
  }
  r->pending_signals = 0;
  if (!in_signal_handler) {
    r->sigmask = mana_sigsys_restarted_mask(r->sigmask, r->upper_fs);
    mana_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&r->sigmask, 0, 8);
  }
  if (b->restart_resume)
    b->restart_resume((void *)r);
}

/* Not woken for: the declined thread is signalled again at the next of the checkpoint
 * thread's 1 ms rounds, long enough to leave most of libc's functions. */
static void note_declined(uint32_t tid)
{
  __atomic_add_fetch(&declines, 1, __ATOMIC_RELAXED);
  last_declined = tid;
  for (uint32_t i = 0; i < MAX_DECLINED; i++) {
    uint32_t expected = 0;
    if (declined_tids[i] == tid || __atomic_compare_exchange_n(&declined_tids[i], &expected, tid, 0,
                                                               __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return;
  }
  declined_lost = 1;
}

static void park_on_signal(void *uc_)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t fs = mana_get_fs((int)b->have_fsgsbase);
  uint64_t ip = (uint64_t)((ucontext_t *)uc_)->uc_mcontext.gregs[REG_RIP];
  if (!b->park_requested)
    return;
  if (ip >= b->stub_signal_dispatch_lo && ip < b->stub_signal_dispatch_hi && in_window(fs)) {
    /* Between a signal and the application's handler on its own thread pointer, not inside
     * MPI: a moment later it runs the handler or what the signal interrupted. */
    const struct mana_mpi_thread *t = mana_mpi_thread_of_upper(fs);
    if (!t || !t->in_callback) {
      note_declined(raw_gettid());
      return;
    }
  }
  if (ip >= b->stub_text_lo && ip < b->stub_text_hi) {
    /* Inside a wrapper: it parks at its next return from the lower half.  On the upper half's
     * thread pointer it may instead be past its last check, on its way back to an application
     * that then computes for longer than a park waits: signalled again in a moment, until it
     * is somewhere it parks (a callback's wrapper parks when its MPI call returns). */
    const struct mana_mpi_thread *t = in_window(fs) ? mana_mpi_thread_of_upper(fs) : NULL;
    if (in_window(fs) && (!t || !t->in_callback))
      note_declined(raw_gettid());
    return;
  }
  if (ip >= (uint64_t)(uintptr_t)__executable_start && ip < (uint64_t)(uintptr_t)etext)
    return; /* in mana_lh's own code on the upper half's thread pointer: on its way into
               mana_park_self, which must not be entered twice */
  if (fs == b->lower_fs || mana_mpi_thread_of_lower(fs))
    return; /* inside an MPI call: parks when the call returns to the stub */
  const struct mana_mpi_thread *t = mana_mpi_thread_of_upper(fs);
  if (t && t->in_callback)
    return; /* in a callback inside an MPI call: parks when the call returns to the stub */
  if (t && t->cc_window == 2)
    return; /* counted a collective the other members may be inside: parks on its way out */
  if (!in_window(fs)) {
    /* The id is listed before the count grows, so no round counts the thread twice. */
    uint32_t n = __atomic_fetch_add(&not_upper_listed, 1, __ATOMIC_ACQ_REL);
    if (n < MAX_SIGNALLED)
      __atomic_store_n(&not_upper_tids[n], raw_gettid(), __ATOMIC_RELEASE);
    __atomic_add_fetch(&not_upper, 1, __ATOMIC_RELEASE);
    futex_wake_all(&parked);
    return;
  }
  const greg_t *gregs = ((ucontext_t *)uc_)->uc_mcontext.gregs;
  struct mana_park_regs regs = {ip, (uint64_t)gregs[REG_RAX], (uint64_t)gregs[REG_RSP],
                                (uint64_t)gregs[REG_RBP]};
  if (!mana_park_libc_may_park(&regs)) {
    note_declined(raw_gettid());
    return; /* signalled again in a moment (mana_park_all) */
  }
  /* volatile: read back from the stack after a resume in a restarted process */
  volatile uint32_t restarts = b->restarted;
  mana_park_self(1);
  if (b->restarted != restarts) { /* the mask the handler's return puts back */
    ucontext_t *uc = uc_;
    uint64_t mask;
    __builtin_memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
    mask = mana_sigsys_restarted_mask(mask, fs);
    __builtin_memcpy(&uc->uc_sigmask, &mask, sizeof(mask));
  }
}

static void on_park_signal(int sig, siginfo_t *info, void *uc_)
{
  (void)sig;
  (void)info;
  /* Only the application's own waits (lower-half threads and MPI's calls keep EINTR, which
   * they expect); found before parking: after a restart this frame is all that is left. */
  uint64_t ip = (uint64_t)((ucontext_t *)uc_)->uc_mcontext.gregs[REG_RIP];
  long wait_nr = in_window(ip) ? mana_interrupted_wait_of(uc_) : 0;
  park_on_signal(uc_);
  mana_clock_sleep_rewind(uc_);
  mana_timed_wait_rewind(uc_);
  mana_interrupted_call_settle(uc_);
  mana_interrupted_wait_settle(uc_, wait_nr);
}

int mana_park_install(int signo)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_park_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  /* Nothing else runs on a thread while it parks, but SIGSYS and the fault signals stay open:
   * a thread resumed after a restart runs the stub's restart hook inside this handler, and the
   * hook allocates (mana/signals.h). */
  mana_sigset_block_all(&sa.sa_mask);
  if (sigaction(signo, &sa, NULL) != 0) {
    fprintf(stderr, "mana_lh: cannot install the park signal handler (signal %d): %s\n", signo,
            strerror(errno));
    return -1;
  }
  MANA_PARK->main_tid_at_start = (uint32_t)gettid();
  /* Where glibc keeps the kernel thread id in its struct pthread (the upper half runs the same
   * glibc): found by looking, not assumed, so a glibc update cannot silently break restart.
   * The main thread runs on holder 0's descriptor, which holds holder 0's id. */
  const uint32_t *self = (const uint32_t *)(uintptr_t)pthread_self();
  pid_t holder = mana_mpi_threads_main_holder_tid();
  uint32_t tid = (uint32_t)(holder ? holder : gettid());
  MANA_PARK->tid_offset = 0;
  for (uint32_t off = 0x100; off < 0x1000; off += 4)
    if (self[off / 4] == tid) {
      MANA_PARK->tid_offset = off;
      break;
    }
  if (!MANA_PARK->tid_offset) {
    fprintf(stderr, "mana_lh: cannot find the thread id in glibc's thread descriptor\n");
    return -1;
  }
  return 0;
}

/* Signals one thread, noting first the wait it is in (interrupted_waits.c). */
static int signal_thread(pid_t tid, int signo)
{
  mana_interrupted_waits_note(tid);
  return (int)syscall(SYS_tgkill, getpid(), tid, signo);
}

/* Signals every thread not yet signalled in this round; returns how many were signalled. */
static int signal_threads(int signo, pid_t self, pid_t *seen, int *n_seen, int max_seen)
{
  DIR *dir = opendir("/proc/self/task");
  if (!dir)
    return -1;
  int signalled = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    pid_t tid = (pid_t)atoi(e->d_name);
    if (tid <= 0 || tid == self || mana_mpi_threads_is_quiet(tid))
      continue;
    int known = 0;
    for (int i = 0; i < *n_seen; i++)
      known |= seen[i] == tid;
    if (known || *n_seen == max_seen)
      continue;
    seen[(*n_seen)++] = tid;
    if (signal_thread(tid, signo) == 0)
      signalled++;
  }
  closedir(dir);
  return signalled;
}

static int lower_half_thread(uint32_t tid)
{
  uint32_t listed = __atomic_load_n(&not_upper_listed, __ATOMIC_ACQUIRE);
  for (uint32_t k = 0; k < listed && k < MAX_SIGNALLED; k++)
    if (__atomic_load_n(&not_upper_tids[k], __ATOMIC_ACQUIRE) == tid)
      return 1;
  return 0;
}

/* Signalled threads that will never run the handler and have nothing to park:
 * - those that exited before it ran (an application's worker returning, a lower-half helper
 *   finishing): the signal died with them;
 * - lower-half threads that made themselves quiet after they were signalled (a holder of
 *   mpi_threads.c is visible in /proc/self/task from its clone on, but blocks every signal and
 *   says it is quiet only a moment later, so a round that began in between signalled it and
 *   would have waited for it until the timeout).
 * A thread that parked or reported itself as the lower half's is not counted again. */
static uint32_t settled_unparked(const pid_t *seen, int n_seen)
{
  uint32_t settled = 0;
  for (int i = 0; i < n_seen; i++) {
    if (record_parked((uint32_t)seen[i]) || lower_half_thread((uint32_t)seen[i]))
      continue;
    if (mana_mpi_threads_is_quiet(seen[i]) ||
        (syscall(SYS_tgkill, getpid(), seen[i], 0) != 0 && errno == ESRCH))
      settled++;
  }
  return settled;
}

/* For the timeout's message: the signalled threads that have not parked and still exist, with
 * their state and whether they block the park signal (from /proc, as a user would look). */
static void describe_unparked(const pid_t *seen, int n_seen, char *err, size_t errlen, int at)
{
  int listed = 0;
  for (int i = 0; i < n_seen && listed < 3 && at > 0 && (size_t)at < errlen; i++) {
    if (lower_half_thread((uint32_t)seen[i]) || record_parked((uint32_t)seen[i]) ||
        mana_mpi_threads_is_quiet(seen[i]))
      continue;
    char path[64], line[256], state[32] = "?", name[32] = "?";
    unsigned long long blocked = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)seen[i]);
    FILE *f = fopen(path, "re");
    if (!f)
      continue; /* gone: exited after it was signalled */
    while (fgets(line, sizeof(line), f)) {
      if (sscanf(line, "State: %31[^\n]", state) == 1 || sscanf(line, "Name: %31s", name) == 1)
        continue;
      sscanf(line, "SigBlk: %llx", &blocked);
    }
    fclose(f);
    at += snprintf(err + at, errlen - (size_t)at, "%s thread %d (%s): %s%s", listed ? ";" : ":",
                   (int)seen[i], name, state,
                   blocked & (1ull << (MANA_PARK_SIGNAL - 1)) ? ", blocks the park signal" : "");
    listed++;
  }
}

/* Signals the declined threads again.  Threads lost from a full table are found among every
 * thread not parked yet, signalled again every `sweep` rounds. */
static void signal_declined(int signo, const pid_t *seen, int n_seen, int sweep)
{
  for (uint32_t i = 0; i < MAX_DECLINED; i++) {
    uint32_t tid = __atomic_exchange_n(&declined_tids[i], 0, __ATOMIC_ACQUIRE);
    if (tid && !record_parked(tid)) /* parked since: the signal would wait for the release */
      signal_thread((pid_t)tid, signo);
  }
  if (!sweep || !__atomic_exchange_n(&declined_lost, 0, __ATOMIC_ACQ_REL))
    return;
  for (int i = 0; i < n_seen; i++)
    if (!record_parked((uint32_t)seen[i]) && !lower_half_thread((uint32_t)seen[i]))
      signal_thread(seen[i], signo);
}

/* MANA_FAULT=park-slow-rounds: each round pauses 200 ms after its listing, where a thread
 * created and a thread parked meanwhile would be miscounted.  The first round that finds no
 * new thread says so on stderr, so that a test can create one while the rounds are slow
 * (tests/integration/thread_in_park.sh). */
static void slow_round(int announce)
{
  if (announce)
    fprintf(stderr, "mana_lh: MANA_FAULT=park-slow-rounds: pid %d parking, rounds pause 200 ms\n",
            (int)getpid());
  struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
}

static int64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mana_park_all(int signo, int timeout_ms, char *err, size_t errlen)
{
  struct mana_park_area *area = MANA_PARK;
  static pid_t seen[MAX_SIGNALLED];
  int n_seen = 0, signalled = 0;
  uint32_t rounds = 0;
  parked = 0;
  not_upper = not_upper_listed = 0;
  memset((void *)not_upper_tids, 0, sizeof(not_upper_tids));
  declines = declined_lost = 0;
  mana_interrupted_waits_reset();
  for (uint32_t i = 0; i < MAX_DECLINED; i++)
    declined_tids[i] = 0;
  if (mana_park_libc_scan() != 0) {
    return mana_fail(err, errlen, errno, "cannot read /proc/self/maps");
  }
  /* Records of threads that have exited since the last round would otherwise pile up. */
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++)
    area->threads[i].state = MANA_THREAD_FREE;
  area->n_records = 0;
  __atomic_store_n(&MANA_BOUNDARY->park_requested, 1, __ATOMIC_SEQ_CST);
  int64_t deadline = now_ms() + timeout_ms;
  int slow_rounds = mana_fault("park-slow-rounds", -1), announced = 0;
  for (;;) {
    /* Counted before the threads are listed, not after: a thread that creates another and
     * parks after the listing (from a callback, or declined in libc's pthread_create) would
     * otherwise complete the count while its new thread, never listed and never signalled,
     * runs on during the dump. Every thread counted here stopped creating threads before the
     * listing, so the listing shows all that they created. */
    uint32_t done =
        __atomic_load_n(&parked, __ATOMIC_ACQUIRE) + __atomic_load_n(&not_upper, __ATOMIC_ACQUIRE);
    if (done < (uint32_t)signalled)
      done += settled_unparked(seen, n_seen);
    /* Threads the application created since the last pass are signalled too. */
    int more = signal_threads(signo, gettid(), seen, &n_seen, MAX_SIGNALLED);
    if (more < 0) {
      return mana_fail(err, errlen, errno, "cannot list /proc/self/task");
    }
    signalled += more;
    signal_declined(signo, seen, n_seen, ++rounds % 16 == 0);
    if (slow_rounds)
      slow_round(more == 0 && !announced++);
    if (more == 0 && done >= (uint32_t)signalled)
      return 0;
    if (now_ms() > deadline) {
      int at = snprintf(err, errlen,
                        "%u of %d threads parked within %d ms (a thread may be blocked inside "
                        "MPI or a system call mana cannot interrupt)",
                        done, signalled, timeout_ms);
      uint32_t own = __atomic_load_n(&MANA_BOUNDARY->in_mpi_own_wait, __ATOMIC_SEQ_CST);
      if (own && at > 0 && (size_t)at < errlen)
        at += snprintf(err + at, errlen - (size_t)at,
                       "; %u thread(s) wait inside MPI for a non-blocking collective file "
                       "operation (MPI_File_i*_all), which only MPI's own wait completes and "
                       "mana cannot interrupt",
                       own);
      uint32_t nd = __atomic_load_n(&declines, __ATOMIC_RELAXED);
      if (nd && at > 0 && (size_t)at < errlen)
        at += snprintf(err + at, errlen - (size_t)at,
                       "; threads were found %u time(s) where they could not park yet: "
                       "inside the C library's code, where a parked thread could hold a lock "
                       "the restart needs, or in mana's MPI library (last: thread %u)",
                       nd, last_declined);
      describe_unparked(seen, n_seen, err, errlen, at);
      return -1;
    }
    struct timespec ts = {0, 1000000};
    mana_raw_syscall4(SYS_futex, (long)&parked, FUTEX_WAIT, parked, (long)&ts);
  }
}

void mana_park_release(void)
{
  __atomic_store_n(&MANA_BOUNDARY->park_requested, 0, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&release_word, 1, __ATOMIC_RELEASE);
  futex_wake_all(&release_word);
}
