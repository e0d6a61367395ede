/* coord_store_sweep: removing generations of the checkpoint directory (coord_store.h) that
 * can never be committed.
 *
 * Only the process that holds DIR/.mana/lock may commit, so whoever holds that lock may
 * remove a gen-N without MANIFEST: the coordinator at start, and a rank whose coordinator
 * died in the middle of a checkpoint (the kernel released the dead coordinator's lock; a
 * new coordinator that holds it sweeps for itself).  Plain libc, no global state: linked
 * into the rank's checkpoint thread through the client library. */
#ifndef MANA_COORD_STORE_SWEEP_H
#define MANA_COORD_STORE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_layout.h"

/* rm -r PATH without following symbolic links; 0 or -1 with errno. */
int store_remove_tree(const char *path);

/* Removes DIR/gen-N: renamed away first (".aborted-N-PID"), so a rank still writing into it
 * can no longer create files there, then removed.  0; 1 when it was gone already; -1 with
 * err (errno kept). */
int store_discard_gen(const char *dir, uint64_t gen, char *err, size_t errlen);

/* Told of each leftover: its path, and 0 or the errno that kept it from being removed. */
typedef void (*store_sweep_note)(void *arg, const char *path, int err);

/* Removes from DIR the generation directories without a MANIFEST other than keep, and the
 * leftovers of aborted attempts.  The caller holds DIR's lock. */
void store_sweep_incomplete(const char *dir, uint64_t keep, store_sweep_note note, void *arg);

/* The sweep above for a process that does not hold the lock: it takes DIR/.mana/lock
 * without waiting, sweeps (keeping the generation LATEST names) and lets go.  Returns 1 when
 * it swept, 0 when a live coordinator holds the lock or DIR has no lock file or LATEST
 * cannot be read (nothing is touched then). */
int store_sweep_orphaned(const char *dir, store_sweep_note note, void *arg);

#endif
