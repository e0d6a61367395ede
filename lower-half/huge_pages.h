/* Transparent huge pages for the application's large anonymous mappings, when forked writers
 * write the checkpoints.
 *
 * A forked writer costs the application one fork(), and fork copies the page tables: for
 * 1 GiB of 4 KiB pages 262,144 entries, 7 to 21 ms on our VMs, most of a checkpoint's pause.
 * Backed by 2 MiB pages the same gigabyte is 512 entries (0.3 to 0.8 ms). Since Linux 5.8 a
 * write to a huge page shared with the writer copies only the 4 KiB written, so the
 * application's copy-on-write cost after the fork does not grow. The cost is the usual one of
 * huge pages: a mapping touched sparsely may hold more memory. Hence only with forked writers
 * (MANA_FORKED_WRITERS=1, which mana_launch exports) unless MANA_HUGE_PAGES says otherwise
 * (0: never, 1: also without forked writers), and only where the kernel's THP setting allows
 * madvise (transparent_hugepage/enabled "madvise" or "always"). */
#ifndef MANA_HUGE_PAGES_H
#define MANA_HUGE_PAGES_H

#include <stdbool.h>
#include <stdint.h>

#define MANA_HUGE_PAGE (2ul << 20)

/* Reads the setting from the environment; before the upper half runs. */
void mana_huge_pages_init(void);

/* Whether a mapping of len bytes with these mmap flags gets huge pages (then the window gives
 * it a 2 MiB-aligned address, and mana_huge_pages_advise is called on it). Signal-safe. */
bool mana_huge_pages_for(uint64_t len, long flags);

/* MADV_HUGEPAGE on [addr, addr + len), by raw syscall (the seccomp handler calls it with the
 * upper half's TLS); a kernel that refuses leaves 4 KiB pages, which is harmless. */
void mana_huge_pages_advise(uint64_t addr, uint64_t len);

/* The smallest anonymous region a restart maps with huge pages, 0 when off
 * (mana_image_set_huge_pages). */
uint64_t mana_huge_pages_min(void);

/* After a forked writer, and after a restart (which reads the memory back into 4 KiB pages):
 * starts a thread of the given nice value that maps the application's fully present 2 MiB
 * ranges back into huge pages, so that the next fork stays cheap (huge_pages_collapse.c).
 * Nothing when huge pages are off or the kernel cannot collapse.  Checkpoint thread only, like
 * _stop (a restart calls it before any checkpoint thread exists). */
void mana_huge_pages_recollapse_start(int nice_value);

/* Tells that thread to stop when a checkpoint begins, without waiting: it would compete with
 * the checkpoint.  It ends within one 2 MiB range; the next _start reaps it. */
void mana_huge_pages_recollapse_stop(void);

#endif
