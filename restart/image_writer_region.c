/* Saving one memory range of this process: which pages to store, the run and reference
 * tables, the page hashes and the content checksum.
 *
 * The pages of a region are visited in order. A page is present when it may hold data
 * (present or swapped per /proc/self/pagemap, or every page with SCAN_ALL) and is not all
 * zero. Each present page is hashed right after the zero test, while it is in the cache;
 * in an incremental image a page whose hash is the one the base recorded for its address is
 * referred to where the base found it, every other one is stored: consecutive stored pages
 * form a run, handed to the batch that pwritev()s it straight from its place in memory. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "image_util.h"
#include "image_writer.h"

/* Source of filler pages (never written: all of it maps the kernel's zero page). */
static unsigned char zero_fill[16 * IMG_PAGE] __attribute__((aligned(IMG_PAGE)));

/* The region being saved and its open run. */
struct region_walk {
  struct mana_image_writer *w;
  struct img_region *reg;
  size_t index;
  uint64_t run_first, run_count; /* run_count 0: no open run */
  bool made_readable;
  unsigned char *copy; /* MANA_IMAGE_REGION_SNAPSHOT: the pages are read from here */
  /* The open reference (ref_count 0: none): its pages are at ref_offset in ref_gen's image. */
  uint64_t ref_first, ref_count, ref_gen, ref_offset, ref_digest;
};

/* Where the content of page `page` of the region is read from. */
static void *page_source(const struct region_walk *rw, uint64_t page)
{
  if (rw->copy)
    return rw->copy + page * IMG_PAGE;
  return (void *)(uintptr_t)(rw->reg->start + page * IMG_PAGE);
}

#define REGION_FMT "region %zu '%s' [%#llx, +%#llx): "
#define REGION_ARGS(rw)                                                \
  (rw)->index, (rw)->reg->label, (unsigned long long)(rw)->reg->start, \
      (unsigned long long)(rw)->reg->length

static int check_args(struct mana_image_writer *w, uint64_t start, uint64_t len, uint32_t prot,
                      uint32_t flags, const char *label)
{
  const char *l = label ? label : "";
  if (w->failed)
    return img_writer_fail(w, ECANCELED, "region '%s' after an earlier error", l);
  if (start % IMG_PAGE)
    return img_writer_fail(w, EINVAL, "region '%s' at %#llx: start is not page-aligned", l,
                           (unsigned long long)start);
  if (len == 0 || start + img_align_up(len, IMG_PAGE) < start)
    return img_writer_fail(w, EINVAL, "region '%s' at %#llx: bad length %#llx", l,
                           (unsigned long long)start, (unsigned long long)len);
  if (img_align_up(len, IMG_PAGE) / IMG_PAGE > IMG_MAX_REGION_PAGES)
    return img_writer_fail(w, EFBIG, "region '%s' at %#llx: %#llx bytes is over 16 TiB", l,
                           (unsigned long long)start, (unsigned long long)len);
  if (prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC))
    return img_writer_fail(w, EINVAL, "region '%s' at %#llx: bad protection %#x", l,
                           (unsigned long long)start, prot);
  if (flags & MANA_IMAGE_REGION_LIB_FLAGS &
      ~(MANA_IMAGE_REGION_SCAN_ALL | MANA_IMAGE_REGION_SNAPSHOT))
    return img_writer_fail(w, EINVAL, "region '%s' at %#llx: unknown flags %#x", l,
                           (unsigned long long)start, flags & MANA_IMAGE_REGION_LIB_FLAGS);
  return 0;
}

static int close_run(struct region_walk *rw)
{
  struct mana_image_writer *w = rw->w;
  if (!rw->run_count)
    return 0;
  if (img_grow((void **)&w->runs, &w->runs_cap, w->nruns + 1, sizeof(*w->runs)) < 0)
    return img_writer_fail(w, ENOMEM, REGION_FMT "no memory for run %zu", REGION_ARGS(rw),
                           w->nruns);
  w->runs[w->nruns++] = (struct img_run){(uint32_t)rw->run_first, (uint32_t)rw->run_count};
  rw->reg->run_count++;
  w->stats.runs++;
  rw->run_count = 0;
  return 0;
}

static int close_ref(struct region_walk *rw)
{
  struct mana_image_writer *w = rw->w;
  if (!rw->ref_count)
    return 0;
  if (img_grow((void **)&w->refs, &w->refs_cap, w->nrefs + 1, sizeof(*w->refs)) < 0)
    return img_writer_fail(w, ENOMEM, REGION_FMT "no memory for reference %zu", REGION_ARGS(rw),
                           w->nrefs);
  w->refs[w->nrefs++] = (struct img_ref){.region = (uint32_t)rw->index,
                                         .first_page = (uint32_t)rw->ref_first,
                                         .page_count = (uint32_t)rw->ref_count,
                                         .generation = rw->ref_gen,
                                         .offset = rw->ref_offset,
                                         .image_digest = rw->ref_digest};
  w->stats.refs++;
  if (rw->ref_gen < w->stats.oldest_generation)
    w->stats.oldest_generation = rw->ref_gen;
  rw->ref_count = 0;
  return 0;
}

static int push_hash(struct region_walk *rw, uint64_t hash)
{
  struct mana_image_writer *w = rw->w;
  if (img_grow((void **)&w->hashes, &w->hashes_cap, w->nhashes + 1, sizeof(*w->hashes)) < 0)
    return img_writer_fail(w, ENOMEM, REGION_FMT "no memory for the hash of page %zu",
                           REGION_ARGS(rw), w->nhashes);
  w->hashes[w->nhashes++] = hash;
  return 0;
}

static int io_failed(struct region_walk *rw)
{
  return img_writer_fail(rw->w, errno, REGION_FMT "write at offset %llu: %s", REGION_ARGS(rw),
                         (unsigned long long)rw->w->io->failed_at, strerror(errno));
}

/* Stores zero pages [from, to) inside the open run (run budget exhausted). They add nothing
 * to the content checksum, as zero pages never do. */
static int add_filler(struct region_walk *rw, uint64_t from, uint64_t to)
{
  struct mana_image_writer *w = rw->w;
  w->stats.pages_filler += to - from;
  rw->reg->stored_pages += to - from;
  for (uint64_t p = from; p < to; p++)
    if (push_hash(rw, img_zero_page_hash()) < 0)
      return -1;
  while (from < to) {
    uint64_t n = to - from < 16 ? to - from : 16;
    if (img_io_add(w->io, zero_fill, n * IMG_PAGE, from) < 0)
      return io_failed(rw);
    from += n;
  }
  return 0;
}

static int keep_page(struct region_walk *rw, uint64_t page, uint64_t hash)
{
  struct mana_image_writer *w = rw->w;
  uint64_t run_end = rw->run_first + rw->run_count;
  if (close_ref(rw) < 0)
    return -1;
  if (rw->run_count && page != run_end) {
    /* A new run would take the closed runs plus two (the one closed, the new one). */
    if (w->nruns + w->nrefs + 2 > w->run_budget) {
      if (add_filler(rw, run_end, page) < 0)
        return -1;
      rw->run_count += page - run_end;
    } else if (close_run(rw) < 0) {
      return -1;
    }
  }
  if (!rw->run_count)
    rw->run_first = page;
  rw->run_count++;
  rw->reg->stored_pages++;
  w->stats.pages_saved++;
  void *addr = page_source(rw, page);
  img_content_add_hash(w->content, page, hash);
  if (push_hash(rw, hash) < 0)
    return -1;
  if (img_io_add(w->io, addr, IMG_PAGE, page) < 0)
    return io_failed(rw);
  img_writer_progress(w);
  return 0;
}

/* Page `page` is unchanged since the base: piece `s` of the base, its k-th page. */
static int refer_page(struct region_walk *rw, uint64_t page, uint64_t hash,
                      const struct img_base_seg *s, uint64_t k)
{
  struct mana_image_writer *w = rw->w;
  uint64_t offset = s->offset + k * IMG_PAGE;
  if (close_run(rw) < 0)
    return -1;
  if (rw->ref_count &&
      (page != rw->ref_first + rw->ref_count || s->generation != rw->ref_gen ||
       s->digest != rw->ref_digest || offset != rw->ref_offset + rw->ref_count * IMG_PAGE ||
       rw->ref_count == UINT32_MAX) &&
      close_ref(rw) < 0)
    return -1;
  if (!rw->ref_count) {
    rw->ref_first = page;
    rw->ref_gen = s->generation;
    rw->ref_offset = offset;
    rw->ref_digest = s->digest;
  }
  rw->ref_count++;
  w->stats.pages_referenced++;
  img_content_add_hash(w->content, page, hash);
  return push_hash(rw, hash);
}

/* The base's piece and page index for page `page` when the base recorded `hash` there. */
static const struct img_base_seg *unchanged(struct region_walk *rw, uint64_t page, uint64_t hash,
                                            uint64_t *k)
{
  struct mana_image_writer *w = rw->w;
  if (!w->incremental)
    return NULL;
  /* Like a run, a reference takes a record: past the budget pages are stored instead. */
  if (!rw->ref_count && w->nruns + w->nrefs + 2 > w->run_budget)
    return NULL;
  uint64_t addr = rw->reg->start + page * IMG_PAGE;
  const struct img_base_seg *s = img_base_find(&w->base, addr);
  if (!s)
    return NULL;
  *k = (addr - s->addr) / IMG_PAGE;
  return s->hashes[*k] == hash ? s : NULL;
}

/* Pages with data must be readable to be tested and copied; the caller said how the range is
 * protected, so that is what it gets back afterwards. */
static int make_readable(struct region_walk *rw)
{
  struct img_region *reg = rw->reg;
  if (rw->made_readable || (reg->prot & PROT_READ))
    return 0;
  if (mprotect((void *)(uintptr_t)reg->start, reg->length, (int)reg->prot | PROT_READ) < 0)
    return img_writer_fail(rw->w, errno, REGION_FMT "making it readable to copy it: %s",
                           REGION_ARGS(rw), strerror(errno));
  rw->made_readable = true;
  return 0;
}

static int visit_page(struct region_walk *rw, uint64_t page)
{
  if (make_readable(rw) < 0)
    return -1;
  const void *src = page_source(rw, page);
  if (img_page_is_zero(src)) {
    rw->w->stats.pages_zero++;
    return 0;
  }
  uint64_t hash = XXH3_64bits(src, IMG_PAGE), k;
  const struct img_base_seg *s = unchanged(rw, page, hash, &k);
  return s ? refer_page(rw, page, hash, s, k) : keep_page(rw, page, hash);
}

static int walk_region(struct region_walk *rw)
{
  struct mana_image_writer *w = rw->w;
  uint64_t npages = rw->reg->length / IMG_PAGE;
  bool scan_all = rw->reg->flags & MANA_IMAGE_REGION_SCAN_ALL;
  for (uint64_t done = 0, n; done < npages; done += n) {
    n = npages - done < IMG_SCAN_CHUNK_PAGES ? npages - done : IMG_SCAN_CHUNK_PAGES;
    uint64_t addr = rw->reg->start + done * IMG_PAGE;
    if (!scan_all && img_scan_read(&w->scan, addr, n) < 0)
      return img_writer_fail(w, errno, REGION_FMT "reading /proc/self/pagemap at %#llx: %s",
                             REGION_ARGS(rw), (unsigned long long)addr, strerror(errno));
    for (uint64_t i = 0; i < n; i++) {
      if (!scan_all && !img_scan_has_data(&w->scan, i)) {
        w->stats.pages_absent++;
        continue;
      }
      if (visit_page(rw, done + i) < 0)
        return -1;
    }
  }
  return close_run(rw) < 0 ? -1 : close_ref(rw);
}

/* Writes out what is pending and waits for it (the pages must still be readable for that;
 * and once add_region returns, the caller may change the memory) and gives the range its
 * protection back. */
static int end_region(struct region_walk *rw, int rc)
{
  struct img_region *reg = rw->reg;
  if (img_io_finish(rw->w->io) < 0 && rc == 0)
    rc = io_failed(rw);
  if (rw->copy)
    munmap(rw->copy, reg->length);
  if (rw->made_readable &&
      mprotect((void *)(uintptr_t)reg->start, reg->length, (int)reg->prot) < 0 && rc == 0)
    rc = img_writer_fail(rw->w, errno, REGION_FMT "restoring its protection %#x: %s",
                         REGION_ARGS(rw), reg->prot, strerror(errno));
  return rc;
}

/* One memcpy of the whole range, at one moment: what is saved is the range as it was then. */
static int take_copy(struct region_walk *rw)
{
  struct img_region *reg = rw->reg;
  if (make_readable(rw) < 0)
    return -1;
  void *copy = mmap(NULL, reg->length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED)
    return img_writer_fail(rw->w, errno, REGION_FMT "no memory for its copy: %s", REGION_ARGS(rw),
                           strerror(errno));
  memcpy(copy, (const void *)(uintptr_t)reg->start, reg->length);
  rw->copy = copy;
  return 0;
}

int mana_image_add_region(struct mana_image_writer *w, uint64_t start, uint64_t len, uint32_t prot,
                          uint32_t flags, const char *label)
{
  if (check_args(w, start, len, prot, flags, label) < 0)
    return -1;
  if (img_grow((void **)&w->regions, &w->regions_cap, w->nregions + 1, sizeof(*w->regions)) < 0)
    return img_writer_fail(w, ENOMEM, "region '%s': no memory for the region table",
                           label ? label : "");
  struct img_region *reg = &w->regions[w->nregions];
  memset(reg, 0, sizeof(*reg));
  reg->start = start;
  reg->length = img_align_up(len, IMG_PAGE);
  reg->prot = prot;
  reg->flags = flags & ~MANA_IMAGE_REGION_SNAPSHOT;
  reg->first_run = w->nruns;
  img_set_string(reg->label, sizeof(reg->label), label);
  struct region_walk rw = {.w = w, .reg = reg, .index = w->nregions};

  reg->data_offset = img_align_up(img_io_tell(w->io), IMG_PAGE);
  if (img_io_seek(w->io, reg->data_offset) < 0)
    return io_failed(&rw);
  XXH3_64bits_reset(w->content);
  if ((flags & MANA_IMAGE_REGION_SNAPSHOT) && take_copy(&rw) < 0)
    return end_region(&rw, -1);
  if (end_region(&rw, walk_region(&rw)) < 0)
    return -1;
  reg->content_hash = XXH3_64bits_digest(w->content);
  w->nregions++;
  w->stats.regions++;
  w->stats.pages += reg->length / IMG_PAGE;
  return 0;
}
