/* The stub's bookkeeping under MPI_THREAD_MULTIPLE.
 *
 * Handle tables, records, the drain's counters and buffered messages are shared by every
 * application thread.  A program that got MPI_THREAD_MULTIPLE may create, free and complete
 * objects on several threads at once, so changes to them take one recursive lock; at any other
 * thread level the application calls MPI from one thread at a time and the lock costs one
 * predictable branch.  The lock is never held across a call that waits for other ranks (it
 * would deadlock with a peer's thread that needs this rank's other thread to progress), and a
 * thread holding it never parks (mana_park_point), so the checkpoint thread, which takes it
 * too when the drain changes handles, always gets it.  Owners are told apart by their thread
 * pointer, which works on the checkpoint thread as well (no TLS read). */
#ifndef MANA_STUB_LOCK_H
#define MANA_STUB_LOCK_H

#include <stdint.h>
#include <sys/syscall.h>

#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/raw_syscall.h"

/* Set once MPI is initialized at MPI_THREAD_MULTIPLE (init.c); never cleared. */
extern int mana_threads_concurrent;

struct mana_stub_lock {
  volatile uint32_t word;
  uint32_t depth;
  volatile uint64_t owner; /* thread pointer of the holder */
};
extern struct mana_stub_lock mana_stub_lock;

static inline uint64_t mana_stub_lock_self(void)
{
  return mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
}

/* The lock proper, for MPI_THREAD_MULTIPLE (stub_lock.c). */
void mana_stub_lock_take_multiple(void);
void mana_stub_lock_give_multiple(void);

/* Inline to the flag test, which is all most programs pay: compiled as calls, the two cost a
 * call and a return each around every handle made or retired. */
static inline __attribute__((always_inline)) void mana_stub_lock_take(void)
{
  if (__builtin_expect(mana_threads_concurrent, 0))
    mana_stub_lock_take_multiple();
}

static inline __attribute__((always_inline)) void mana_stub_lock_give(void)
{
  if (__builtin_expect(mana_threads_concurrent, 0))
    mana_stub_lock_give_multiple();
}

/* 1 if the calling thread holds the lock (it must not park). */
static inline int mana_stub_lock_held(void)
{
  return mana_threads_concurrent && mana_stub_lock.owner == mana_stub_lock_self();
}

/* A counter several threads may bump at once (the drain's message counts). */
static inline void mana_counter_add(uint64_t *c, int64_t d)
{
  if (__builtin_expect(!mana_threads_concurrent, 1))
    *c += (uint64_t)d;
  else
    __atomic_fetch_add(c, (uint64_t)d, __ATOMIC_RELAXED);
}

#endif
