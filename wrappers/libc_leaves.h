/* The C library's leaf functions, published for the park handler (see libc_leaves.c). */
#ifndef MANA_LIBC_LEAVES_H
#define MANA_LIBC_LEAVES_H

#include <stdint.h>

/* Lists in the park area (mana/park.h) where this process's loader resolved memset, memcpy and
 * the other leaf functions, with their objects' .eh_frame_hdr.  Upper half, at load. */
void mana_libc_leaves_publish(void);

/* The .eh_frame_hdr of the loaded object whose code holds `code`; 0 if none. */
uint64_t mana_eh_frame_hdr_of(uint64_t code);

#endif
