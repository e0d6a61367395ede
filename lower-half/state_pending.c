/* Signals pending on the parked threads: kernel state that no memory image holds.
 *
 * A thread may be parked with a signal generated for it but not delivered: blocked by its own
 * mask (glibc's raise() blocks everything, sends, and unblocks; a thread parked just before
 * the unblock holds its signal pending), or sent while it waited in the park handler.  A
 * restarted process would lose it: the program's handler would never run for it
 * (signal_masks' digest changed once in about fifty restarts).  The checkpoint thread reads
 * each parked thread's pending set from /proc; a restarted thread sends each one to itself
 * again before its own mask is back (mana_park_self), so it is delivered when the program
 * would have taken it.  Signals pending on the whole process (blocked by every thread) are
 * sent again to the main thread, each instance with its siginfo (the value sigqueue sent, the
 * sender): the checkpoint thread takes them off the process's queue with sigtimedwait while
 * every application thread is parked, and the main thread queues them again, in their order,
 * as it is released (the kernel lets a process queue itself a signal with a kill's siginfo
 * only from the thread whose id is the process id), while the other threads released with it
 * wait for that (mana_state_pending_wait_requeued); without a parked main thread they stay
 * where they are.
 * Before, a signal queued twice came back once and without its value, and a program that
 * passes values through a signalfd read 0.  On a thread, a real-time signal queued several
 * times still comes back once, without its value, but for the signal of an application's
 * POSIX timer, which comes back as that timer sends it (state_posix_timers.c). */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "image.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mana/signals.h"
#include "park.h"
#include "state.h"
#include "mana/fail.h"
#include "mana/raw_syscall.h"

struct saved_pending {
  uint32_t tid; /* the thread's id when it parked; 0: pending on the whole process */
  uint32_t pad;
  uint64_t signals; /* bit N-1 for signal N */
};

/* Left out: mana's own signals (SIGSYS, the park signal, the checkpoint signal: a restart
 * must not ask for a checkpoint again), and glibc's internal 32 and 33 (thread cancellation
 * and the set*id broadcast), whose handlers act on an operation of the old process. */
static uint64_t mana_own(void)
{
  return mana_app_managed_signals() | (1ull << 31) | (1ull << 32);
}

/* The hexadecimal set after `key` in a /proc status file, or 0 (also when unreadable). */
static uint64_t read_set(const char *path, const char *key)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  char line[256];
  unsigned long long set = 0;
  size_t klen = strlen(key);
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, key, klen) == 0 && sscanf(line + klen, "%llx", &set) == 1)
      break;
  fclose(f);
  return (uint64_t)set & ~mana_own();
}

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct saved_pending saved[MANA_MAX_THREADS + 1];
static uint32_t n_saved;

/* The instances pending on the whole process, in their order (MANA_BLOB_PENDING_SIGINFO). */
static siginfo_t *shared;
static uint32_t n_shared, shared_cap;

/* Room for one more; 0, or -1 without memory. */
static int shared_room(void)
{
  if (n_shared < shared_cap)
    return 0;
  uint32_t cap = shared_cap ? 2 * shared_cap : 16;
  siginfo_t *more = realloc(shared, cap * sizeof(*more));
  if (!more)
    return -1;
  shared = more;
  shared_cap = cap;
  return 0;
}

/* The signals POSIX timers send (/proc/self/timers): left on the queue, where the kernel keeps
 * a timer's own entry, which it re-arms from when the signal is taken; queued again as a plain
 * signal, the timer's next expiry would queue a second one. */
static uint64_t timer_signals(void)
{
  FILE *f = fopen("/proc/self/timers", "re");
  char line[128];
  uint64_t set = 0;
  int sig;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "signal: %d/", &sig) == 1 && sig >= 1 && sig <= 64)
      set |= 1ull << (sig - 1);
  if (f)
    fclose(f);
  return set;
}

static void capture_shared(uint64_t set)
{
  set &= ~timer_signals();
  sigset_t want;
  sigemptyset(&want);
  for (int sig = 1; sig <= 64; sig++)
    if (set & (1ull << (sig - 1)))
      sigaddset(&want, sig);
  const struct timespec none = {0, 0};
  n_shared = 0;
  /* Without memory for one more, the rest stay queued: there for the resumed process, not
   * in the image. */
  while (shared_room() == 0 && sigtimedwait(&want, &shared[n_shared], &none) > 0)
    n_shared++;
}

static int capture(char *err, size_t errlen)
{
  (void)err, (void)errlen;
  uint32_t n = 0;
  int main_parked = 0;
  const struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    const struct mana_thread_record *t = &area->threads[i];
    if (t->state != MANA_THREAD_PARKED)
      continue;
    main_parked |= t->is_main != 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%u/status", t->tid);
    uint64_t set = read_set(path, "SigPnd:");
    if (set)
      saved[n++] = (struct saved_pending){t->tid, 0, set};
  }
  uint64_t on_process = read_set("/proc/self/status", "ShdPnd:");
  if (on_process)
    saved[n++] = (struct saved_pending){0, 0, on_process};
  n_saved = n;
  n_shared = 0;
  if (on_process && main_parked)
    capture_shared(on_process);
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_PENDING_SIGNALS, saved, n_saved * sizeof(saved[0])) != 0) {
    return mana_fail(err, errlen, 0, "pending signals: %s", mana_image_writer_error(w));
  }
  if (n_shared &&
      mana_image_add_blob(w, MANA_BLOB_PENDING_SIGINFO, shared, n_shared * sizeof(shared[0])) != 0)
    return mana_fail(err, errlen, 0, "the signals pending on the process: %s",
                     mana_image_writer_error(w));
  return 0;
}

/* The signals that come back with their siginfo. */
static uint64_t restore_shared(struct mana_image_reader *r)
{
  const siginfo_t *got;
  size_t len;
  uint64_t sent = 0;
  n_shared = 0;
  if (mana_image_blob(r, MANA_BLOB_PENDING_SIGINFO, (const void **)&got, &len) != 0)
    return 0; /* none, or an image from before they were saved */
  for (size_t i = 0; i < len / sizeof(*got) && shared_room() == 0; i++) {
    int sig = got[i].si_signo;
    if (sig < 1 || sig > 64 || ((1ull << (sig - 1)) & mana_own()))
      continue;
    shared[n_shared++] = got[i];
    sent |= 1ull << (sig - 1);
  }
  return sent;
}

void mana_state_pending_requeue(uint32_t pid, uint32_t tid)
{
  uint32_t n = __atomic_load_n(&n_shared, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; i++)
    if (tid)
      mana_raw_syscall4(SYS_rt_tgsigqueueinfo, pid, tid, shared[i].si_signo, (long)&shared[i]);
    else
      mana_raw_syscall4(SYS_rt_sigqueueinfo, pid, shared[i].si_signo, (long)&shared[i], 0);
  __atomic_store_n(&n_shared, 0, __ATOMIC_RELEASE);
  mana_raw_syscall4(SYS_futex, (long)&n_shared, FUTEX_WAKE, 0x7fffffff, 0);
}

void mana_state_pending_wait_requeued(void)
{
  uint32_t n;
  while ((n = __atomic_load_n(&n_shared, __ATOMIC_ACQUIRE)) != 0)
    mana_raw_syscall4(SYS_futex, (long)&n_shared, FUTEX_WAIT, n, 0);
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_pending *saved;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_PENDING_SIGNALS, (const void **)&saved, &len) != 0 ||
      len % sizeof(*saved) != 0) {
    return mana_fail(err, errlen, 0, "pending signals missing or malformed in the image");
  }
  uint64_t with_info = restore_shared(r);
  /* The records came back with the window; they still carry the old thread ids. */
  struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++)
    area->threads[i].pending_signals = 0;
  for (size_t k = 0; k < len / sizeof(*saved); k++)
    for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
      struct mana_thread_record *t = &area->threads[i];
      if (t->state == MANA_THREAD_PARKED &&
          (saved[k].tid ? t->tid == saved[k].tid : t->is_main != 0)) {
        t->pending_signals |= saved[k].signals & ~mana_own() & (saved[k].tid ? ~0ull : ~with_info);
        break;
      }
    }
  return 0;
}

const struct mana_state_ops mana_state_pending = {"pending signals", dump, restore, capture, NULL};
