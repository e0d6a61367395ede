/* The reader's state, shared by image_reader.c (opening, tables, blobs),
 * image_reader_check.c (validation) and image_restore.c (region contents). Not public. */
#ifndef MANA_IMAGE_READER_H
#define MANA_IMAGE_READER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "image.h"
#include "image_format.h"
#include "image_io.h"

#define IMG_VERIFY_BATCH (4u << 20) /* verify reads through a buffer: keep it small */

/* A region's present pages in page order, each piece from one run or one ref (version 2):
 * where a page's expected hash is in the page hash table. */
struct img_seg {
  uint64_t first_page, page_count;
  uint64_t hash_index; /* of first_page */
  int64_t ref;         /* index in the ref table, or -1: a run of this image */
};

/* An older image an incremental one refers to, opened on first use. */
struct img_base_open {
  uint64_t generation;
  struct mana_image_reader *r;
};

struct mana_image_reader {
  int fd;
  int direct_fd; /* O_DIRECT twin of fd, or -1; handed to io when that is made */
  char name[PATH_MAX];
  uint64_t file_size; /* as found by fstat */
  struct img_header hdr;
  struct img_region *regions;
  struct img_run *runs;
  struct img_blob *blobs;
  struct img_ref *refs;  /* version 2 (empty for version 1) */
  uint64_t *page_hashes; /* version 2 */
  struct img_seg *segs;  /* version 2: every region's pieces, region after region */
  size_t *region_seg;    /* version 2: region i's pieces are segs[region_seg[i]..[i+1]) */
  uint64_t ref_pages;    /* pages in refs */
  uint64_t oldest;       /* oldest generation referred to (own if none) */
  uint64_t huge_min;     /* mana_image_set_huge_pages */
  mana_image_resolve_fn *resolve;
  void *resolve_arg;
  struct img_base_open *bases;
  size_t nbases;
  unsigned char *blob_data;      /* every blob's bytes, back to back */
  const void **blob_ptr;         /* blob i's bytes in blob_data */
  struct img_io *io;             /* made on first use by restore/verify */
  struct img_prefault *prefault; /* made with io; NULL without memory */
  XXH3_state_t *content;
  void *bounce; /* verify reads into this: two batches of IMG_VERIFY_BATCH */
};

/* Validation in the order the data is trusted: header, then the sections' places, then the
 * tables' checksums, then the entries. Each returns -1 with one message in err. */
int img_check_header(const struct mana_image_reader *r, char *err, size_t errlen);
int img_check_sections(const struct mana_image_reader *r, char *err, size_t errlen);
int img_check_table(const struct mana_image_reader *r, const char *what,
                    const struct img_section *s, const void *table, char *err, size_t errlen);
int img_check_regions(const struct mana_image_reader *r, char *err, size_t errlen);
int img_check_blobs(const struct mana_image_reader *r, char *err, size_t errlen);
/* Version 2: the refs against the regions and runs, the page hash table's length, every
 * region's content checksum against the table; builds segs. */
int img_check_refs(struct mana_image_reader *r, char *err, size_t errlen);

/* The piece of region i holding page `page`, searching from *cursor (updated). NULL if the
 * page is not present. */
const struct img_seg *img_seg_find(const struct mana_image_reader *r, size_t region, uint64_t page,
                                   size_t *cursor);

/* The image of `generation` that ref k points into, opened through the resolver and checked
 * against the ref (rank, generation, digest, the pages inside its data area). */
int img_base_for_ref(struct mana_image_reader *r, const struct img_ref *ref, size_t k,
                     struct mana_image_reader **base, char *err, size_t errlen);

#endif
