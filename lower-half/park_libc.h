/* Where the upper half's C library runs: a thread must not park inside it (see park_libc.c). */
#ifndef MANA_LH_PARK_LIBC_H
#define MANA_LH_PARK_LIBC_H

#include <stdint.h>

/* Reads the code ranges of the upper half's libc and dynamic loader from /proc/self/maps.
 * Called by the checkpoint thread before it signals; 0, or -1 when the maps cannot be read. */
int mana_park_libc_scan(void);
/* Async-signal-safe: whether a thread interrupted at `ip` with `rax` in its registers may park
 * there.  Not inside the upper libc's code, unless it waits in a system call (it holds no lock
 * of libc's that is not also held by a thread blocked there natively). */
int mana_park_libc_may_park(uint64_t ip, uint64_t rax);

#endif
