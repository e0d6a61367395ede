/* Indexing the base of an incremental image by address (image_base.h). */
#include "image_base.h"

#include <errno.h>
#include <stdlib.h>

#include "image_reader.h"

static int by_addr(const void *a, const void *b)
{
  const struct img_base_seg *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int img_base_index_build(struct img_base_index *ix, const struct mana_image_reader *r)
{
  size_t n = r->region_seg[r->hdr.regions.count];
  ix->segs = malloc((n ? n : 1) * sizeof(*ix->segs));
  ix->nsegs = 0;
  ix->cursor = 0;
  if (!ix->segs) {
    errno = ENOMEM;
    return -1;
  }
  for (size_t i = 0; i < r->hdr.regions.count; i++) {
    const struct img_region *g = &r->regions[i];
    /* Runs of a region are in order: their offsets accumulate. */
    uint64_t next_run_offset = g->data_offset;
    for (size_t s = r->region_seg[i]; s < r->region_seg[i + 1]; s++) {
      const struct img_seg *seg = &r->segs[s];
      struct img_base_seg *b = &ix->segs[ix->nsegs++];
      b->addr = g->start + seg->first_page * IMG_PAGE;
      b->page_count = seg->page_count;
      b->hashes = &r->page_hashes[seg->hash_index];
      if (seg->ref >= 0) {
        const struct img_ref *f = &r->refs[seg->ref];
        b->generation = f->generation;
        b->offset = f->offset;
        b->digest = f->image_digest;
      } else {
        b->generation = r->hdr.generation;
        b->offset = next_run_offset;
        b->digest = r->hdr.header_hash;
        next_run_offset += seg->page_count * IMG_PAGE;
      }
    }
  }
  qsort(ix->segs, ix->nsegs, sizeof(*ix->segs), by_addr);
  return 0;
}

void img_base_index_free(struct img_base_index *ix)
{
  free(ix->segs);
  ix->segs = NULL;
  ix->nsegs = 0;
}

static int holds(const struct img_base_seg *s, uint64_t addr)
{
  return addr >= s->addr && (addr - s->addr) / IMG_PAGE < s->page_count;
}

const struct img_base_seg *img_base_find(struct img_base_index *ix, uint64_t addr)
{
  if (ix->cursor < ix->nsegs) {
    if (holds(&ix->segs[ix->cursor], addr))
      return &ix->segs[ix->cursor];
    if (ix->cursor + 1 < ix->nsegs && holds(&ix->segs[ix->cursor + 1], addr))
      return &ix->segs[++ix->cursor];
  }
  size_t lo = 0, hi = ix->nsegs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (addr < ix->segs[mid].addr)
      hi = mid;
    else if (!holds(&ix->segs[mid], addr))
      lo = mid + 1;
    else {
      ix->cursor = mid;
      return &ix->segs[mid];
    }
  }
  return NULL;
}
