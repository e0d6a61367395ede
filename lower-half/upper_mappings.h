/* The upper half's mappings as /proc/self/maps lists them now: every mapping inside the window
 * and in the boundary's extra ranges (a non-PIE application's segments). */
#ifndef MANA_UPPER_MAPPINGS_H
#define MANA_UPPER_MAPPINGS_H

#include <stddef.h>
#include <stdint.h>

struct mana_mapping {
  uint64_t start, end;
  uint64_t offset; /* in the file */
  uint32_t prot;   /* PROT_* */
  int shared, file_backed;
  uint64_t dev, inode;  /* the file's, as /proc/self/maps gives them */
  uint32_t fork_advice; /* mana_upper_mappings_each_advised only: MANA_ADVISED_* */
  char path[4096];      /* "" for anonymous memory */
};

/* What the application asked a child's copy of a mapping to be (madvise). */
#define MANA_ADVISED_DONTFORK 1u   /* MADV_DONTFORK: not there */
#define MANA_ADVISED_WIPEONFORK 2u /* MADV_WIPEONFORK: zeros */

/* Calls fn for each upper-half mapping in address order until fn returns non-zero (returned).
 * -1 with err set when /proc/self/maps cannot be read. */
int mana_upper_mappings_each(int (*fn)(const struct mana_mapping *m, void *arg), void *arg,
                             char *err, size_t errlen);

/* The same from /proc/self/smaps, with fork_advice filled from each mapping's VmFlags: slower
 * (the kernel walks the page tables to count pages), for when madvise asked for it. */
int mana_upper_mappings_each_advised(int (*fn)(const struct mana_mapping *m, void *arg), void *arg,
                                     char *err, size_t errlen);

/* The same for a state kind's capture: fn gets a 256-byte buffer for the reason it fails,
 * which becomes err. */
int mana_upper_mappings_capture(int (*fn)(const struct mana_mapping *m, void *why), char *err,
                                size_t errlen);

#endif
