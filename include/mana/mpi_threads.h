/* The application's threads that call MPI, each with a lower-half thread pointer of its own.
 *
 * Code of the lower half (MPICH, UCX, their libc) finds its thread-local state through FS.  An
 * application thread that crosses into the lower half must therefore run there on a lower-half
 * thread pointer, and two application threads inside MPI at once (MPI_THREAD_MULTIPLE) must
 * not share one: MPICH's recursive locks, its per-thread error state and errno would be mixed
 * up between them.  Every thread that calls MPI gets a slot here on its first call; the lower
 * half gives the slot the thread pointer of a thread of its own that was made for that purpose
 * and never runs (lower-half/mpi_threads.c, "holders").  The application's main thread has
 * slot 0 and holder 0, whose thread pointer the lower half's main thread (the same kernel
 * thread) also runs on from its start.
 *
 * The table lives in the window's control area, so it is part of the image: each slot keeps
 * its owner across a restart, and the restarted lower half gives every slot a fresh holder.
 * The per-thread words the checkpoint machinery reads (inside the lower half, in a callback,
 * the collective clock's window, where the thread waits at a collective entry) live in the
 * slot too. */
#ifndef MANA_MPI_THREADS_H
#define MANA_MPI_THREADS_H

#include <stdint.h>

#include "mana/boundary.h"
#include "mana/park.h"

#define MANA_MPI_THREADS_AREA (MANA_PARK_AREA + MANA_PARK_AREA_SIZE)
#define MANA_MPI_THREADS_AREA_SIZE 0x8000
#define MANA_MAX_MPI_THREADS 255

struct mana_mpi_thread {
  /* The owner's upper-half thread pointer; 0 while the slot is free. */
  volatile uint64_t upper_fs;
  /* The lower-half thread pointer it runs MPI on; 0 until the lower half gave one. */
  volatile uint64_t lower_fs;
  /* Crossings into the lower half in progress (a callback may call MPI again). */
  volatile uint32_t in_lower;
  /* Application callbacks in progress inside MPI (user ops, error handlers, ...). */
  volatile uint32_t in_callback;
  /* The collective clock's window word (docs/checkpoint-protocol.md 1.11): 0 outside a
   * collective wrapper, 1 deciding whether to count, 2 counted and not yet inside MPI. */
  volatile uint32_t cc_window;
  /* The LDT selector whose base is lower_fs, loaded to enter the lower half; 0: write lower_fs
   * with wrfsbase instead (lower-half/fs_selector.c).  Set before lower_fs. */
  volatile uint32_t lower_sel;
  /* Where the thread waits at a collective entry, parked (0: it does not). */
  volatile uint64_t waiting_ggid, waiting_seq;
  /* The group the thread's last collective was counted on, and whether a target may rest on
   * that count: it was taken while no checkpoint was pending (the SEQ table of the next one
   * holds it) or raised a target (wrappers/collective_clock.c, mana_cc_failed). */
  uint64_t cc_ggid;
  uint64_t cc_count_seen;
};

struct mana_mpi_threads {
  volatile uint32_t n_used; /* slots [0, n_used) have been handed out at least once */
  volatile uint32_t lock;   /* taken by threads claiming a slot */
  uint32_t pad[14];
  struct mana_mpi_thread slot[MANA_MAX_MPI_THREADS];
  /* The slot a thread of mana's own (the checkpoint thread draining) uses while MPICH runs an
   * application callback on it: its lower-half thread pointer, the parked main thread's upper
   * one (wrappers/callbacks.c).  Outside slot[]: no lookup by the application's threads sees it. */
  struct mana_mpi_thread service;
};

_Static_assert(sizeof(struct mana_mpi_thread) == 64, "one slot per cache line");
_Static_assert(sizeof(struct mana_mpi_threads) <= MANA_MPI_THREADS_AREA_SIZE,
               "MPI thread area too small");

#define MANA_MPI_THREADS ((struct mana_mpi_threads *)MANA_MPI_THREADS_AREA)

/* The slot whose lower-half thread pointer is `fs`, or NULL: how code running inside the lower
 * half (a callback from MPI, the park signal handler) finds the application thread it runs
 * for.  No TLS, no libc. */
static inline struct mana_mpi_thread *mana_mpi_thread_of_lower(uint64_t fs)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint32_t n = __atomic_load_n(&a->n_used, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; i++)
    if (a->slot[i].lower_fs == fs && a->slot[i].upper_fs)
      return &a->slot[i];
  return NULL;
}

/* The slot owned by the upper-half thread pointer `fs`, or NULL. */
static inline struct mana_mpi_thread *mana_mpi_thread_of_upper(uint64_t fs)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint32_t n = __atomic_load_n(&a->n_used, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; i++)
    if (a->slot[i].upper_fs == fs)
      return &a->slot[i];
  return NULL;
}

#endif
