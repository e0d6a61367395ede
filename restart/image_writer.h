/* The writer's state, shared by image_writer.c (file, blobs, commit) and
 * image_writer_region.c (memory regions). Not part of the public API. */
#ifndef MANA_IMAGE_WRITER_H
#define MANA_IMAGE_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <xxhash.h>

#include "image.h"
#include "image_format.h"
#include "image_io.h"
#include "image_scan.h"

#define IMG_DEFAULT_RUN_BUDGET (1u << 20)

struct mana_image_writer {
  int fd;
  int dirfd;
  char final_name[PATH_MAX];
  char tmp_name[PATH_MAX];
  struct img_header hdr;
  struct img_region *regions;
  size_t nregions, regions_cap;
  struct img_run *runs;
  size_t nruns, runs_cap, run_budget;
  struct img_blob *blobs;
  size_t nblobs, blobs_cap;
  struct img_scan scan;
  struct img_io *io;
  XXH3_state_t *content;
  struct mana_image_stats stats;
  bool failed;
  bool renamed;            /* commit got as far as the rename */
  char err[512];
};

/* Records the writer's first error (the message names the temporary file) and returns -1
 * with errno = errnum. Later errors keep the first message. */
int img_writer_fail(struct mana_image_writer *w, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Makes room for `need` elements of `elem` bytes in *arr (capacity doubling). */
int img_grow(void **arr, size_t *cap, size_t need, size_t elem);

#endif
