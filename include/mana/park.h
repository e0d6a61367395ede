/* Parking the upper half's threads for a checkpoint, and resuming them (also in a restarted
 * process).
 *
 * The records live in the window's control area, right after the boundary page, so they are
 * part of every image: a thread's saved context, its thread pointer and where glibc keeps its
 * kernel thread id are exactly what a restart needs to recreate it. */
#ifndef MANA_PARK_H
#define MANA_PARK_H

#include <stdint.h>

#include "mana/boundary.h"
#include "mana/thread_context.h"

#define MANA_PARK_AREA (MANA_WINDOW_BASE + 0x1000)
#define MANA_PARK_AREA_SIZE 0x10000
#define MANA_MAX_THREADS 512
#define MANA_MAX_LIBC_LEAVES 16
#define MANA_MAX_APP_MASKS 64

enum mana_thread_state {
  MANA_THREAD_FREE = 0,
  MANA_THREAD_RUNNING,
  MANA_THREAD_PARKED,
};

struct mana_thread_record {
  uint32_t tid; /* kernel thread id when it parked */
  uint32_t state;
  uint64_t upper_fs; /* its thread pointer in the upper half (glibc: its struct pthread) */
  uint64_t sigmask;  /* blocked signals, for threads parked outside a signal handler */
  uint32_t in_signal_handler;
  uint32_t is_main;
  struct mana_context ctx;
  /* Signals pending on it at the checkpoint, filled at restart (lower-half/state_pending.c);
   * the thread sends them to itself again as it resumes. */
  uint64_t pending_signals;
};

/* Only what stays still while an image is written lives here; the counters a parking round
 * updates (including late signals reaching lower-half threads) are lower-half memory. */
struct mana_park_area {
  uint32_t main_tid_at_start;
  uint32_t tid_offset; /* offset of the kernel tid in glibc's struct pthread */
  uint32_t n_records;
  struct mana_thread_record threads[MANA_MAX_THREADS];
  /* The code of the upper half's libc and dynamic loader, found by file name at launch and
   * kept here: a restarted process maps it back as anonymous memory (lower-half/park_libc.c). */
  uint32_t n_libc_code;
  struct {
    uint64_t lo, hi;
  } libc_code[8];
  /* Functions of that libc that take no lock and call nothing (memset, memcpy, ...), where an
   * application can spend seconds (lower-half/park_libc.c).  The stub fills entry (where the
   * upper half's loader resolved the function) and eh_frame_hdr (its object's); the lower half
   * finds the code it covers and its frame description (fde) at its next round. */
  uint32_t n_libc_leaves;
  struct mana_libc_leaf {
    uint64_t entry, eh_frame_hdr;
    uint64_t lo, hi, fde;
  } libc_leaves[MANA_MAX_LIBC_LEAVES];
  /* The signals an application thread asked to block among those whose blocking mana decides
   * (SIGSYS and the park signal kept open, the checkpoint signal kept blocked:
   * mana/signals.h), so that asking for its mask tells it what it set (lower-half/sigsys.c).
   * By upper-half thread pointer, which a restart keeps; an entry is claimed by the first such
   * request and never given back (glibc sets a new thread's whole mask first, so a reused
   * thread pointer starts afresh). */
  struct mana_app_mask {
    uint64_t upper_fs, blocked;
  } app_masks[MANA_MAX_APP_MASKS];
  /* The checkpoint signal every application thread blocks (mana/signals.h), as a mask; in a
   * restarted process, until the threads resume, the one of the run that wrote the image. */
  uint64_t kept_blocked, kept_blocked_before;
};

_Static_assert(sizeof(struct mana_park_area) <= MANA_PARK_AREA_SIZE, "park area too small");

#define MANA_PARK ((struct mana_park_area *)MANA_PARK_AREA)

#endif
