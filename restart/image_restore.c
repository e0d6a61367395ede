/* Region contents: mapping a region back and reading its pages into place, and checking
 * every region's checksum without mapping anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "image_maps.h"
#include "image_reader.h"
#include "image_util.h"
#include "mana/fail.h"

#define ULL(x) ((unsigned long long)(x))
#define REGION_FMT "%s: region %zu '%s' [%#llx, +%#llx): "
#define REGION_ARGS(r, i) \
  (r)->name, (i), (r)->regions[i].label, ULL((r)->regions[i].start), ULL((r)->regions[i].length)

/* The flags a caller may add to the mapping of a restored region. */
#define ALLOWED_MAP_FLAGS (MAP_FIXED | MAP_NORESERVE | MAP_STACK | MAP_LOCKED | MAP_POPULATE)

static int get_tools(struct mana_image_reader *r, bool bounce, char *err, size_t errlen)
{
  if (!r->io && img_io_open(&r->io, r->fd, r->direct_fd, false, IMG_IO_BATCH, 0) == 0)
    r->direct_fd = -1; /* the io owns it now */
  if (!r->content)
    r->content = XXH3_createState();
  if (bounce && !r->bounce)
    r->bounce = aligned_alloc(IMG_PAGE, 2 * IMG_VERIFY_BATCH);
  if (!r->io || !r->content || (bounce && !r->bounce))
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for reading regions", r->name);
  return 0;
}

static int read_failed(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  if (errno == ENODATA)
    return mana_fail_as(err, errlen, EIO,
                        REGION_FMT
                        "the file ends before offset %llu (changed since it was opened?)",
                        REGION_ARGS(r, i), ULL(r->io->failed_at));
  return mana_fail(err, errlen, errno, REGION_FMT "read at offset %llu", REGION_ARGS(r, i),
                   ULL(r->io->failed_at));
}

static int check_content(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  uint64_t sum = XXH3_64bits_digest(r->content);
  if (sum != r->regions[i].content_hash)
    return mana_fail_as(err, errlen, EBADMSG,
                        REGION_FMT "content checksum mismatch (stored %#llx, computed %#llx): its "
                                   "%llu saved pages at offset %llu are damaged",
                        REGION_ARGS(r, i), ULL(r->regions[i].content_hash), ULL(sum),
                        ULL(r->regions[i].stored_pages), ULL(r->regions[i].data_offset));
  return 0;
}

/* Reads region i's runs straight to their addresses (already mapped writable). */
static int read_into_place(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  img_io_restart(r->io, IMG_IO_BATCH, g->data_offset);
  r->io->content = r->content;
  XXH3_64bits_reset(r->content);
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    void *dst = (void *)(uintptr_t)(g->start + (uint64_t)run->first_page * IMG_PAGE);
    if (img_io_add(r->io, dst, (uint64_t)run->page_count * IMG_PAGE, run->first_page) < 0)
      return read_failed(r, i, err, errlen);
  }
  if (img_io_finish(r->io) < 0)
    return read_failed(r, i, err, errlen);
  return check_content(r, i, err, errlen);
}

/* Reads region i's runs through the bounce buffer, one batch-sized piece at a time. */
static int read_for_check(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  img_io_restart(r->io, IMG_VERIFY_BATCH, g->data_offset);
  r->io->content = r->content;
  r->io->populate = false;
  XXH3_64bits_reset(r->content);
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    uint64_t page = run->first_page, left = run->page_count;
    while (left > 0) {
      uint64_t n = img_io_room(r->io) / IMG_PAGE;
      n = n < left ? n : left;
      /* Each of the two batches has its half of the buffer. */
      char *dst = (char *)r->bounce + (uint64_t)img_io_slot(r->io) * IMG_VERIFY_BATCH +
                  (IMG_VERIFY_BATCH - img_io_room(r->io));
      if (img_io_add(r->io, dst, n * IMG_PAGE, page) < 0)
        return read_failed(r, i, err, errlen);
      page += n;
      left -= n;
    }
  }
  if (img_io_finish(r->io) < 0)
    return read_failed(r, i, err, errlen);
  return check_content(r, i, err, errlen);
}

int mana_image_verify(struct mana_image_reader *r, char *err, size_t errlen)
{
  if (get_tools(r, true, err, errlen) < 0)
    return -1;
  for (size_t i = 0; i < r->hdr.regions.count; i++)
    if (read_for_check(r, i, err, errlen) < 0)
      return -1;
  return 0;
}

static int mapping_failed(struct mana_image_reader *r, size_t i, bool fixed, char *err,
                          size_t errlen)
{
  int e = errno;
  const struct img_region *g = &r->regions[i];
  const char *how = fixed ? "MAP_FIXED" : "MAP_FIXED_NOREPLACE";
  if (e != EEXIST)
    return mana_fail(err, errlen, e, REGION_FMT "mmap %s", REGION_ARGS(r, i), how);
  char line[512];
  int found = img_maps_find_overlap(g->start, g->start + g->length, line, sizeof(line));
  return mana_fail_as(err, errlen, e, REGION_FMT "the address range is taken by %s%s (mmap %s: %s)",
                      REGION_ARGS(r, i), found > 0 ? "the mapping " : "",
                      found > 0 ? line : "a mapping /proc/self/maps does not show", how,
                      strerror(e));
}

/* Leaves the range as the caller had it: nothing, or its own PROT_NONE reservation. */
static void undo_mapping(const struct img_region *g, bool fixed)
{
  void *at = (void *)(uintptr_t)g->start;
  if (fixed)
    mmap(at, g->length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  else
    munmap(at, g->length);
}

static int map_region(struct mana_image_reader *r, size_t i, int extra, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  bool fixed = extra & MAP_FIXED;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (extra & ~MAP_FIXED) |
              (fixed ? MAP_FIXED : MAP_FIXED_NOREPLACE);
  void *want = (void *)(uintptr_t)g->start;
  void *p = mmap(want, g->length, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED)
    return mapping_failed(r, i, fixed, err, errlen);
  if (p != want) { /* a kernel older than 4.17 takes MAP_FIXED_NOREPLACE as a mere hint */
    munmap(p, g->length);
    return mana_fail_as(err, errlen, ENOTSUP,
                        REGION_FMT "the kernel mapped it at %p instead (no MAP_FIXED_NOREPLACE?)",
                        REGION_ARGS(r, i), p);
  }
  return 0;
}

int mana_image_restore_region(struct mana_image_reader *r, size_t i, int map_flags_extra, char *err,
                              size_t errlen)
{
  if (i >= r->hdr.regions.count)
    return mana_fail_as(err, errlen, EINVAL, "%s: no region %zu (the image has %llu)", r->name, i,
                        ULL(r->hdr.regions.count));
  if (map_flags_extra & ~ALLOWED_MAP_FLAGS)
    return mana_fail_as(err, errlen, EINVAL, REGION_FMT "mapping flags %#x are not allowed",
                        REGION_ARGS(r, i), map_flags_extra & ~ALLOWED_MAP_FLAGS);
  if (get_tools(r, false, err, errlen) < 0 || map_region(r, i, map_flags_extra, err, errlen) < 0)
    return -1;
  const struct img_region *g = &r->regions[i];
  int rc = read_into_place(r, i, err, errlen);
  if (rc == 0 && g->prot != (PROT_READ | PROT_WRITE) &&
      mprotect((void *)(uintptr_t)g->start, g->length, (int)g->prot) < 0)
    rc = mana_fail(err, errlen, errno, REGION_FMT "mprotect %#x", REGION_ARGS(r, i), g->prot);
  if (rc < 0) {
    int e = errno;
    undo_mapping(g, map_flags_extra & MAP_FIXED);
    errno = e;
  }
  return rc;
}
