/* The writer's state, shared by image_writer.c (file, blobs, commit) and
 * image_writer_region.c (memory regions). Not part of the public API. */
#ifndef MANA_IMAGE_WRITER_H
#define MANA_IMAGE_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <xxhash.h>

#include "image.h"
#include "image_base.h"
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
  struct img_ref *refs;
  size_t nrefs, refs_cap;
  uint64_t *hashes; /* the page hash table so far */
  size_t nhashes, hashes_cap;
  bool incremental; /* base is set */
  struct img_base_index base;
  struct img_scan scan;
  struct img_io *io;
  XXH3_state_t *content;
  struct mana_image_stats stats;
  bool failed;
  bool renamed;                        /* commit got as far as the rename */
  mana_image_progress_fn *on_progress; /* see mana_image_writer_on_progress */
  void *progress_arg;
  uint64_t progress_every, progress_next;
  char err[512];
};

/* Records the writer's first error (the message names the temporary file) and returns -1
 * with errno = errnum. Later errors keep the first message. */
int img_writer_fail(struct mana_image_writer *w, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Calls the progress callback when another progress_every bytes were handed to the file. */
static inline void img_writer_progress(struct mana_image_writer *w)
{
  if (!w->on_progress)
    return;
  uint64_t moved = atomic_load_explicit(&w->io->moved, memory_order_relaxed);
  if (moved < w->progress_next)
    return;
  w->progress_next = moved + w->progress_every;
  w->on_progress(moved, w->progress_arg);
}

/* Makes room for `need` elements of `elem` bytes in *arr (capacity doubling). */
int img_grow(void **arr, size_t *cap, size_t need, size_t elem);

#endif
