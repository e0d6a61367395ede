/* The upper-half window: one fixed range of address space that holds every page of the upper
 * half, reserved PROT_NONE at start so neither the kernel nor the lower half can place anything
 * there.  The allocator hands out page ranges inside it; a range the upper half unmaps goes back
 * to the allocator and stays reserved.
 *
 * The allocator runs inside the SIGSYS handler on any thread, so it uses no libc, no TLS and no
 * heap: a fixed array of free extents under a spinlock. */
#ifndef MANA_UPPER_WINDOW_H
#define MANA_UPPER_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#define MANA_WINDOW_MAX_EXTENTS 8192

struct mana_extent {
  uint64_t start, end;
};

struct mana_window {
  uint64_t base, end;
  volatile int lock;
  uint32_t n_free;
  struct mana_extent free[MANA_WINDOW_MAX_EXTENTS]; /* sorted, disjoint, non-adjacent */
};

/* Initializes `w` to manage [base, end) with everything free. */
void mana_window_init(struct mana_window *w, uint64_t base, uint64_t end);
/* Returns the start of `len` bytes (rounded up to pages) aligned to `align` (a power of two,
 * at least a page), lowest address first; 0 when the window is full. */
uint64_t mana_window_alloc(struct mana_window *w, uint64_t len, uint64_t align);
/* Takes exactly [start, start+len) if it is entirely free; returns 0 on success. */
int mana_window_claim(struct mana_window *w, uint64_t start, uint64_t len);
/* Gives [start, start+len) back; freeing a range that is partly free is harmless. */
void mana_window_free(struct mana_window *w, uint64_t start, uint64_t len);
uint64_t mana_window_free_bytes(struct mana_window *w);
int mana_window_contains(const struct mana_window *w, uint64_t start, uint64_t len);

/* The process-wide window of mana_lh. */
extern struct mana_window mana_the_window;

#endif
