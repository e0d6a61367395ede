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

struct mana_image_reader {
  int fd;
  int direct_fd; /* O_DIRECT twin of fd, or -1; handed to io when that is made */
  char name[PATH_MAX];
  uint64_t file_size; /* as found by fstat */
  struct img_header hdr;
  struct img_region *regions;
  struct img_run *runs;
  struct img_blob *blobs;
  unsigned char *blob_data; /* every blob's bytes, back to back */
  const void **blob_ptr;    /* blob i's bytes in blob_data */
  struct img_io *io;        /* made on first use by restore/verify */
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

#endif
