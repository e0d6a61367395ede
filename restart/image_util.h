/* Helpers shared by the image writer and reader: whole transfers, the page
 * tests and the content checksum. */
#ifndef MANA_IMAGE_UTIL_H
#define MANA_IMAGE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <xxhash.h>

#include "image_format.h"

/* Move all of iov[0..cnt) to/from the file at `off` (EINTR and short transfers retried; the
 * iovecs are consumed). A read that meets the end of the file fails with ENODATA. */
int img_pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off);
int img_preadv_all(int fd, struct iovec *iov, int cnt, uint64_t off);
int img_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int img_pread_all(int fd, void *buf, size_t len, uint64_t off);

bool img_page_is_zero(const void *page);

/* The content checksum of a region: XXH3_64bits of the sequence, in ascending order, of the
 * pairs (u64 page number in the region, u64 XXH3_64bits of the page's 4096 bytes) for every
 * page that is not all zero. Untouched and zero pages contribute nothing, so the cost follows
 * the saved data, not the size of the address range, and the value does not depend on how
 * the writer chose to store the pages. */
static inline void img_content_add_hash(XXH3_state_t *st, uint64_t page_no, uint64_t page_hash)
{
  uint64_t pair[2] = {page_no, page_hash};
  XXH3_64bits_update(st, pair, sizeof(pair));
}

static inline void img_content_add_page(XXH3_state_t *st, uint64_t page_no, const void *page)
{
  img_content_add_hash(st, page_no, XXH3_64bits(page, IMG_PAGE));
}

/* XXH3_64bits of a page of zeros. From a page hash table alone (version 2), a page with
 * this hash counts as a zero page for the content checksum: the writer stores zero pages
 * only as filler, and a non-zero page with this hash is a 2^-64 event. */
uint64_t img_zero_page_hash(void);

/* Adds every non-zero page of [base, base + npages pages), numbered from first_page. */
void img_content_add_pages(XXH3_state_t *st, uint64_t first_page, const void *base,
                           uint64_t npages);

static inline uint64_t img_align_up(uint64_t v, uint64_t a)
{
  return (v + a - 1) & ~(a - 1);
}

/* Copies a C string into a fixed NUL-padded field, cutting it if needed. */
void img_set_string(char *field, size_t fieldlen, const char *s);

#endif
