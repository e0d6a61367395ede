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
 * sent again to the main thread.  A real-time signal queued several times comes back once,
 * without its value, but for the signal of an application's POSIX timer, which comes back as
 * that timer sends it (state_posix_timers.c). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "image.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mana/signals.h"
#include "park.h"
#include "state.h"
#include "mana/fail.h"

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
  return mana_app_cannot_block | (1ull << 31) | (1ull << 32);
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

static int capture(char *err, size_t errlen)
{
  (void)err, (void)errlen;
  uint32_t n = 0;
  const struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    const struct mana_thread_record *t = &area->threads[i];
    if (t->state != MANA_THREAD_PARKED)
      continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%u/status", t->tid);
    uint64_t set = read_set(path, "SigPnd:");
    if (set)
      saved[n++] = (struct saved_pending){t->tid, 0, set};
  }
  uint64_t shared = read_set("/proc/self/status", "ShdPnd:");
  if (shared)
    saved[n++] = (struct saved_pending){0, 0, shared};
  n_saved = n;
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_PENDING_SIGNALS, saved, n_saved * sizeof(saved[0])) != 0) {
    return mana_fail(err, errlen, 0, "pending signals: %s", mana_image_writer_error(w));
  }
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_pending *saved;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_PENDING_SIGNALS, (const void **)&saved, &len) != 0 ||
      len % sizeof(*saved) != 0) {
    return mana_fail(err, errlen, 0, "pending signals missing or malformed in the image");
  }
  /* The records came back with the window; they still carry the old thread ids. */
  struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++)
    area->threads[i].pending_signals = 0;
  for (size_t k = 0; k < len / sizeof(*saved); k++)
    for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
      struct mana_thread_record *t = &area->threads[i];
      if (t->state == MANA_THREAD_PARKED &&
          (saved[k].tid ? t->tid == saved[k].tid : t->is_main != 0)) {
        t->pending_signals |= saved[k].signals & ~mana_own();
        break;
      }
    }
  return 0;
}

const struct mana_state_ops mana_state_pending = {"pending signals", dump, restore, capture, NULL};
