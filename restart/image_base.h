/* The base of an incremental image as its writer sees it: for every present page of the
 * base image, by address, the hash the base recorded and the image that stores the page.
 * Not part of the public API. */
#ifndef MANA_IMAGE_BASE_H
#define MANA_IMAGE_BASE_H

#include <stddef.h>
#include <stdint.h>

struct mana_image_reader;

/* Pages [addr, addr + page_count pages) stored back to back at `offset` in the image of
 * `generation` whose digest is `digest`; their hashes are hashes[0..page_count). */
struct img_base_seg {
  uint64_t addr, page_count;
  uint64_t generation, offset, digest;
  const uint64_t *hashes;
};

struct img_base_index {
  struct img_base_seg *segs; /* ascending addresses, not overlapping */
  size_t nsegs;
  size_t cursor; /* the last piece found: the writer walks addresses upwards */
};

/* Builds the index of `base` (which must stay open while the index is used). 0, or -1 with
 * errno ENOMEM. */
int img_base_index_build(struct img_base_index *ix, const struct mana_image_reader *base);
void img_base_index_free(struct img_base_index *ix);

/* The piece holding the page at `addr`, or NULL when the base has no data there. */
const struct img_base_seg *img_base_find(struct img_base_index *ix, uint64_t addr);

#endif
