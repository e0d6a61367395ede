/* Which pages of a range hold data: /proc/self/pagemap read in big chunks. */
#ifndef MANA_IMAGE_SCAN_H
#define MANA_IMAGE_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#define IMG_SCAN_CHUNK_PAGES 65536u /* one pagemap read covers 256 MiB (a 512 KiB buffer) */

struct img_scan {
  int pagemap_fd;    /* -1: no pagemap; every page is taken as holding data */
  uint64_t *entries; /* IMG_SCAN_CHUNK_PAGES pagemap entries */
};

/* Opens /proc/self/pagemap; without it (no /proc) the scan still works, only slower. Returns
 * -1 only when memory for the buffer is missing. */
int img_scan_init(struct img_scan *s);
void img_scan_fini(struct img_scan *s);

/* Fills s->entries for npages (<= IMG_SCAN_CHUNK_PAGES) pages from addr. */
int img_scan_read(struct img_scan *s, uint64_t addr, uint64_t npages);

/* Whether entry i of the last img_scan_read says the page may hold data: mapped in the page
 * table (present) or swapped out. */
static inline bool img_scan_has_data(const struct img_scan *s, uint64_t i)
{
  const uint64_t present = 1ull << 63, swapped = 1ull << 62;
  return (s->entries[i] & (present | swapped)) != 0;
}

#endif
