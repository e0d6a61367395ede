/* Where the upper half's C library runs: a thread must not park inside it (see park_libc.c). */
#ifndef MANA_LH_PARK_LIBC_H
#define MANA_LH_PARK_LIBC_H

#include <stdint.h>

/* Reads the code ranges of the upper half's libc and dynamic loader from /proc/self/maps.
 * Called by the checkpoint thread before it signals; 0, or -1 when the maps cannot be read. */
int mana_park_libc_scan(void);
/* Finds the code and frame description of each function the stub listed as a leaf of the
 * upper libc (mana/park.h) that has none yet; part of mana_park_libc_scan.  Returns how many
 * leaves can be parked in. */
uint32_t mana_park_libc_find_leaves(void);

/* What the park handler tells from an interrupted thread's registers. */
struct mana_park_regs {
  uint64_t ip, ax, sp, bp;
};

/* Async-signal-safe: whether a thread interrupted with these registers may park there.  Not
 * inside the upper libc's code, unless it waits in a system call (it holds no lock of libc's
 * that is not also held by a thread blocked there natively) or runs a leaf function that code
 * outside libc called (it holds no lock of libc's at all). */
int mana_park_libc_may_park(const struct mana_park_regs *r);

#endif
