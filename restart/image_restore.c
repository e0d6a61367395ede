/* Region contents: mapping a region back and reading its pages into place, and checking
 * every region's checksum without mapping anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "image_maps.h"
#include "image_prefault.h"
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
  if (!r->io && img_io_open(&r->io, r->fd, r->direct_fd, false, IMG_IO_BATCH, 0) == 0) {
    r->direct_fd = -1; /* the io owns it now */
    r->prefault = img_prefault_open();
  }
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

/* ---- checking what arrives ----------------------------------------------------------------
 * Version 1: the region's content checksum, streamed in page order. Version 2: each page
 * against its entry in the page hash table, wherever it was read from (the table itself was
 * checked against the content checksums when the image was opened). */

struct page_check {
  struct mana_image_reader *r;
  size_t region, cursor;
  bool bad;
  uint64_t bad_page, want, got;
};

static void arrived_v1(void *arg, uint64_t first_page, const void *base, uint64_t npages)
{
  struct page_check *c = arg;
  img_content_add_pages(c->r->content, first_page, base, npages);
}

static void arrived_v2(void *arg, uint64_t first_page, const void *base, uint64_t npages)
{
  struct page_check *c = arg;
  const char *p = base;
  for (uint64_t k = 0; k < npages && !c->bad; k++, p += IMG_PAGE) {
    uint64_t page = first_page + k;
    const struct img_seg *s = img_seg_find(c->r, c->region, page, &c->cursor);
    uint64_t got = XXH3_64bits(p, IMG_PAGE);
    uint64_t want = s ? c->r->page_hashes[s->hash_index + (page - s->first_page)] : ~got;
    if (got != want)
      *c = (struct page_check){c->r, c->region, c->cursor, true, page, want, got};
  }
}

static void check_start(struct mana_image_reader *r, size_t i, struct page_check *c)
{
  *c = (struct page_check){.r = r, .region = i, .cursor = r->region_seg ? r->region_seg[i] : 0};
  r->io->arrived = r->hdr.version >= 2 ? arrived_v2 : arrived_v1;
  r->io->arrived_arg = c;
  XXH3_64bits_reset(r->content);
}

/* Where page `page` of region i was read from, for a message. */
static void page_origin(const struct mana_image_reader *r, size_t i, uint64_t page, char *out,
                        size_t len)
{
  size_t cursor = r->region_seg[i];
  const struct img_seg *s = img_seg_find(r, i, page, &cursor);
  if (s && s->ref >= 0) {
    const struct img_ref *f = &r->refs[s->ref];
    snprintf(out, len, "kept in generation %llu's image at offset %llu", ULL(f->generation),
             ULL(f->offset + (page - f->first_page) * IMG_PAGE));
    return;
  }
  const struct img_region *g = &r->regions[i];
  uint64_t before = 0;
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    if (page >= run->first_page && page < (uint64_t)run->first_page + run->page_count) {
      before += page - run->first_page;
      break;
    }
    before += run->page_count;
  }
  snprintf(out, len, "stored at offset %llu", ULL(g->data_offset + before * IMG_PAGE));
}

static int check_end(struct mana_image_reader *r, size_t i, const struct page_check *c, char *err,
                     size_t errlen)
{
  r->io->arrived = NULL;
  if (r->hdr.version >= 2) {
    if (!c->bad)
      return 0;
    char where[128];
    page_origin(r, i, c->bad_page, where, sizeof(where));
    return mana_fail_as(err, errlen, EBADMSG,
                        REGION_FMT "page %llu (%s) is damaged: its checksum is %#llx, the page "
                                   "hash table says %#llx",
                        REGION_ARGS(r, i), ULL(c->bad_page), where, ULL(c->got), ULL(c->want));
  }
  uint64_t sum = XXH3_64bits_digest(r->content);
  if (sum != r->regions[i].content_hash)
    return mana_fail_as(err, errlen, EBADMSG,
                        REGION_FMT "content checksum mismatch (stored %#llx, computed %#llx): its "
                                   "%llu saved pages at offset %llu are damaged",
                        REGION_ARGS(r, i), ULL(r->regions[i].content_hash), ULL(sum),
                        ULL(r->regions[i].stored_pages), ULL(r->regions[i].data_offset));
  return 0;
}

/* ---- pages kept in older images ---------------------------------------------------------- */

/* Reads ref k's pages [from, from + n) to dst and checks them. */
static int read_ref_pages(struct mana_image_reader *r, size_t i, size_t k, uint64_t from,
                          uint64_t n, void *dst, struct page_check *c, char *err, size_t errlen)
{
  const struct img_ref *f = &r->refs[k];
  struct mana_image_reader *b;
  if (img_base_for_ref(r, f, k, &b, err, errlen) < 0)
    return -1;
  uint64_t off = f->offset + (from - f->first_page) * IMG_PAGE;
  if (img_pread_all(b->fd, dst, n * IMG_PAGE, off) < 0) {
    if (errno == ENODATA)
      return mana_fail_as(err, errlen, EIO,
                          REGION_FMT "%s ends before offset %llu, where pages %llu..+%llu are kept",
                          REGION_ARGS(r, i), b->name, ULL(off + n * IMG_PAGE), ULL(from), ULL(n));
    return mana_fail(err, errlen, errno, REGION_FMT "reading pages %llu..+%llu from %s at %llu",
                     REGION_ARGS(r, i), ULL(from), ULL(n), b->name, ULL(off));
  }
  arrived_v2(c, from, dst, n);
  return 0;
}

/* Every ref of region i, read straight into place or (into == false) through the bounce
 * buffer, piece by piece. */
static int read_refs(struct mana_image_reader *r, size_t i, bool into, struct page_check *c,
                     char *err, size_t errlen)
{
  if (r->hdr.version < 2)
    return 0;
  const struct img_region *g = &r->regions[i];
  for (size_t s = r->region_seg[i]; s < r->region_seg[i + 1] && !c->bad; s++) {
    const struct img_seg *seg = &r->segs[s];
    if (seg->ref < 0)
      continue;
    uint64_t chunk = into ? seg->page_count : IMG_VERIFY_BATCH / IMG_PAGE;
    for (uint64_t done = 0; done < seg->page_count && !c->bad; done += chunk) {
      uint64_t n = seg->page_count - done < chunk ? seg->page_count - done : chunk;
      void *dst =
          into ? (void *)(uintptr_t)(g->start + (seg->first_page + done) * IMG_PAGE) : r->bounce;
      if (read_ref_pages(r, i, (size_t)seg->ref, seg->first_page + done, n, dst, c, err, errlen) <
          0)
        return -1;
    }
  }
  return 0;
}

/* ---- a region's pages --------------------------------------------------------------------- */

/* Plans the helper's walk over region i's pages in the order they are read: the image's own
 * runs, then the pieces kept in older images. Small regions get no plan. */
static void plan_prefault(const struct mana_image_reader *r, size_t i, struct img_prefault *pf)
{
  const struct img_region *g = &r->regions[i];
  uint64_t pages = g->stored_pages;
  if (r->hdr.version >= 2)
    for (size_t s = r->region_seg[i]; s < r->region_seg[i + 1]; s++)
      pages += r->segs[s].ref >= 0 ? r->segs[s].page_count : 0;
  if (pages * IMG_PAGE < IMG_PREFAULT_MIN)
    return;
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    img_prefault_add(pf, (void *)(uintptr_t)(g->start + (uint64_t)run->first_page * IMG_PAGE),
                     (uint64_t)run->page_count * IMG_PAGE);
  }
  if (r->hdr.version >= 2)
    for (size_t s = r->region_seg[i]; s < r->region_seg[i + 1]; s++)
      if (r->segs[s].ref >= 0)
        img_prefault_add(pf, (void *)(uintptr_t)(g->start + r->segs[s].first_page * IMG_PAGE),
                         r->segs[s].page_count * IMG_PAGE);
}

/* Reads region i's pages straight to their addresses (already mapped writable); `populate`:
 * fault each piece in before it is read (no helper does). */
static int read_pages_into_place(struct mana_image_reader *r, size_t i, bool populate, char *err,
                                 size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  struct page_check c;
  img_io_restart(r->io, IMG_IO_BATCH, g->data_offset);
  r->io->populate = populate;
  check_start(r, i, &c);
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    void *dst = (void *)(uintptr_t)(g->start + (uint64_t)run->first_page * IMG_PAGE);
    if (img_io_add(r->io, dst, (uint64_t)run->page_count * IMG_PAGE, run->first_page) < 0)
      return read_failed(r, i, err, errlen);
  }
  if (img_io_finish(r->io) < 0)
    return read_failed(r, i, err, errlen);
  if (read_refs(r, i, true, &c, err, errlen) < 0)
    return -1;
  return check_end(r, i, &c, err, errlen);
}

static int read_into_place(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  if (!r->prefault)
    return read_pages_into_place(r, i, true, err, errlen);
  plan_prefault(r, i, r->prefault);
  bool helped = img_prefault_start(r->prefault);
  int rc = read_pages_into_place(r, i, !helped, err, errlen);
  img_prefault_finish(r->prefault);
  return rc;
}

/* Reads region i's pages through the bounce buffer, one batch-sized piece at a time. */
static int read_for_check(struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  struct page_check c;
  img_io_restart(r->io, IMG_VERIFY_BATCH, g->data_offset);
  check_start(r, i, &c);
  r->io->populate = false;
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
  if (read_refs(r, i, false, &c, err, errlen) < 0)
    return -1;
  return check_end(r, i, &c, err, errlen);
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

/* After the pages are in, not before: the saved pages stay 4 KiB (see image.h), later faults in
 * the region get huge pages. Refused (no THP): the region simply keeps 4 KiB pages. */
static void advise_huge(const struct mana_image_reader *r, const struct img_region *g)
{
  if (r->huge_min && g->length >= r->huge_min && !(g->flags & MANA_IMAGE_REGION_SCAN_ALL))
    madvise((void *)(uintptr_t)g->start, g->length, MADV_HUGEPAGE);
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
  if (rc == 0)
    advise_huge(r, g);
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
