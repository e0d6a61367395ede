/* Process-wide address-space preparation of the lower half, done once before the upper half
 * exists: a deterministic layout, the brk wall and the window reservation. */
#ifndef MANA_ADDRESS_SPACE_H
#define MANA_ADDRESS_SPACE_H

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"

/* Names (comma-separated) of the variables mana_lh added to its own environment; they are
 * removed again from the upper half's. */
#define MANA_LH_ENV_ADDED "MANA_LH_ENV_ADDED"

/* Re-executes the program once, with ASLR off and the lower half's library settings in its
 * environment.  Returns only in the re-executed image, or if no re-exec was needed or possible. */
void mana_prepare_process(char **argv);

/* Maps one PROT_NONE page just above the current program break, so neither libc's malloc can
 * grow the break that both would otherwise share. */
int mana_build_brk_wall(void);

/* Reserves the whole window PROT_NONE and maps the boundary page at its start. */
int mana_reserve_window(void);

/* Leaves a reservation of mana's out of core dumps (MADV_DONTDUMP).  The kernel leaves out
 * ranges never touched anyway, but gdb's gcore cannot tell them apart and writes the window's
 * terabyte of address space as zeros.  Not for the application's own PROT_NONE ranges (a
 * malloc arena's tail): the pages it later makes accessible would inherit the flag.  A raw
 * system call: the SIGSYS handler calls it on the upper half's thread pointer. */
static inline void mana_exclude_from_cores(uint64_t addr, uint64_t len)
{
  mana_raw_syscall4(SYS_madvise, (long)addr, (long)len, MADV_DONTDUMP, 0);
}

/* The same for every range the window allocator holds free: at launch, the whole window but
 * its control area; at restart, once the allocator's state is back from the image (the
 * application's reservations are not free there, and stay in cores). */
void mana_window_exclude_free_from_cores(void);

#endif
