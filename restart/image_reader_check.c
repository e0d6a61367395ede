/* Validating an image before anything in it is used (see image_reader.h). Every check names
 * the file and the exact field or offset at fault. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image_reader.h"
#include "image_util.h"
#include "mana/fail.h"

#define ULL(x) ((unsigned long long)(x))

/* The magic as printable text, for "this is not an image" messages. */
static void show_bytes(const char *p, size_t n, char *out, size_t outlen)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 < outlen; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
  }
  out[o] = '\0';
}

int img_check_header(const struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct img_header *h = &r->hdr;
  if (memcmp(h->magic, IMG_MAGIC, IMG_MAGIC_LEN) != 0) {
    char shown[48];
    show_bytes(h->magic, IMG_MAGIC_LEN, shown, sizeof(shown));
    return mana_fail_as(err, errlen, EINVAL,
                        "%s: not a mana image: it starts with \"%s\", not \"MANAIMG\\n\"", r->name,
                        shown);
  }
  /* Before the checksum: another version may checksum its header differently. */
  if (h->version < IMG_VERSION_OLDEST || h->version > IMG_VERSION)
    return mana_fail_as(err, errlen, EPROTONOSUPPORT,
                        "%s: image format version %u is not supported (this build reads versions "
                        "%u to %u)",
                        r->name, h->version, IMG_VERSION_OLDEST, IMG_VERSION);
  uint64_t sum = XXH3_64bits(h, offsetof(struct img_header, header_hash));
  if (sum != h->header_hash)
    return mana_fail_as(
        err, errlen, EBADMSG,
        "%s: header checksum mismatch (stored %#llx, computed %#llx): the header is "
        "damaged",
        r->name, ULL(h->header_hash), ULL(sum));
  if (h->header_size != IMG_HEADER_SIZE || h->data_offset != IMG_DATA_START || h->flags != 0)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: header of version %u has header_size %u, data_offset %llu, flags %#x "
                        "(expected %u, %u, 0)",
                        r->name, h->version, h->header_size, ULL(h->data_offset), h->flags,
                        IMG_HEADER_SIZE, IMG_DATA_START);
  long sys_page = sysconf(_SC_PAGESIZE);
  if (h->page_size != IMG_PAGE || sys_page != (long)IMG_PAGE)
    return mana_fail_as(err, errlen, ENOTSUP,
                        "%s: written with %u-byte pages; this build and system use %u and %ld",
                        r->name, h->page_size, IMG_PAGE, sys_page);
  return 0;
}

struct section_ref {
  const char *what;
  const struct img_section *s;
  size_t elem;
};

static int check_one_section(const struct mana_image_reader *r, const struct section_ref *ref,
                             uint64_t expected_offset, char *err, size_t errlen)
{
  const struct img_section *s = ref->s;
  if (s->count > UINT64_MAX / ref->elem || s->size != s->count * ref->elem)
    return mana_fail_as(err, errlen, EBADMSG, "%s: %s: size %llu is not %llu entries of %zu bytes",
                        r->name, ref->what, ULL(s->size), ULL(s->count), ref->elem);
  if (s->offset != expected_offset)
    return mana_fail_as(err, errlen, EBADMSG, "%s: %s: starts at %llu, expected %llu", r->name,
                        ref->what, ULL(s->offset), ULL(expected_offset));
  if (s->offset + s->size > r->file_size)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: truncated: %s ends at %llu but the file has %llu bytes", r->name,
                        ref->what, ULL(s->offset + s->size), ULL(r->file_size));
  return 0;
}

/* The tables follow the data area back to back and end the file. */
int img_check_sections(const struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct img_header *h = &r->hdr;
  if (h->data_end < IMG_DATA_START || h->data_end > UINT64_MAX / 2)
    return mana_fail_as(err, errlen, EBADMSG, "%s: data area ends at %llu, before it starts at %u",
                        r->name, ULL(h->data_end), IMG_DATA_START);
  const struct section_ref refs[] = {
      {"region table", &h->regions, sizeof(struct img_region)},
      {"run table", &h->runs, sizeof(struct img_run)},
      {"blob table", &h->blobs, sizeof(struct img_blob)},
      {"reference table", &h->refs, sizeof(struct img_ref)},
      {"page hash table", &h->page_hashes, sizeof(uint64_t)},
  };
  /* Version 1 had zeros where the last two descriptors are (the header checksum says so). */
  size_t nsections = h->version >= 2 ? 5 : 3;
  uint64_t expected = h->data_end;
  for (size_t i = 0; i < nsections; i++) {
    if (check_one_section(r, &refs[i], expected, err, errlen) < 0)
      return -1;
    expected = refs[i].s->offset + refs[i].s->size;
  }
  if (h->file_size != expected)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: header says the image is %llu bytes, its tables "
                        "end at %llu",
                        r->name, ULL(h->file_size), ULL(expected));
  if (r->file_size > h->file_size)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: %llu unexpected bytes after the end of the image at %llu", r->name,
                        ULL(r->file_size - h->file_size), ULL(h->file_size));
  return 0;
}

int img_check_table(const struct mana_image_reader *r, const char *what,
                    const struct img_section *s, const void *table, char *err, size_t errlen)
{
  uint64_t sum = XXH3_64bits(table, s->size);
  if (sum != s->hash)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: %s checksum mismatch (stored %#llx, computed %#llx): the table at "
                        "offset %llu is damaged",
                        r->name, what, ULL(s->hash), ULL(sum), ULL(s->offset));
  return 0;
}

static int check_runs(const struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  uint64_t npages = g->length / IMG_PAGE, next_free = 0, stored = 0;
  if (g->first_run > r->hdr.runs.count || g->run_count > r->hdr.runs.count - g->first_run)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': runs %llu..+%llu lie outside the run table of %llu",
                        r->name, i, g->label, ULL(g->first_run), ULL(g->run_count),
                        ULL(r->hdr.runs.count));
  for (uint64_t k = 0; k < g->run_count; k++) {
    const struct img_run *run = &r->runs[g->first_run + k];
    uint64_t end = (uint64_t)run->first_page + run->page_count;
    if (run->page_count == 0 || run->first_page < next_free || end > npages)
      return mana_fail_as(err, errlen, EBADMSG,
                          "%s: region %zu '%s': run %llu (pages %u..+%u) is empty, out of order or "
                          "outside the region's %llu pages",
                          r->name, i, g->label, ULL(g->first_run + k), run->first_page,
                          run->page_count, ULL(npages));
    next_free = end;
    stored += run->page_count;
  }
  if (stored != g->stored_pages)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': its runs hold %llu pages, the entry says %llu",
                        r->name, i, g->label, ULL(stored), ULL(g->stored_pages));
  return 0;
}

static int check_region(const struct mana_image_reader *r, size_t i, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  if (g->label[IMG_LABEL_LEN - 1] != '\0')
    return mana_fail_as(err, errlen, EBADMSG, "%s: region %zu: label is not NUL-terminated",
                        r->name, i);
  if (g->start % IMG_PAGE || g->length % IMG_PAGE || g->length == 0 ||
      g->start + g->length < g->start || g->length / IMG_PAGE > IMG_MAX_REGION_PAGES)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': bad address range [%#llx, +%#llx)", r->name, i,
                        g->label, ULL(g->start), ULL(g->length));
  if (g->prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC) ||
      g->flags & MANA_IMAGE_REGION_LIB_FLAGS & ~MANA_IMAGE_REGION_SCAN_ALL)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': bad protection %#x or flags %#x", r->name, i,
                        g->label, g->prot, g->flags);
  uint64_t data_bytes = g->stored_pages * IMG_PAGE;
  if (g->data_offset % IMG_PAGE || g->data_offset < IMG_DATA_START ||
      g->stored_pages > g->length / IMG_PAGE || g->data_offset > r->hdr.data_end ||
      data_bytes > r->hdr.data_end - g->data_offset)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': its %llu pages at offset %llu lie outside the data "
                        "area [%u, %llu)",
                        r->name, i, g->label, ULL(g->stored_pages), ULL(g->data_offset),
                        IMG_DATA_START, ULL(r->hdr.data_end));
  return check_runs(r, i, err, errlen);
}

int img_check_regions(const struct mana_image_reader *r, char *err, size_t errlen)
{
  for (size_t i = 0; i < r->hdr.regions.count; i++)
    if (check_region(r, i, err, errlen) < 0)
      return -1;
  return 0;
}

int img_check_blobs(const struct mana_image_reader *r, char *err, size_t errlen)
{
  for (size_t i = 0; i < r->hdr.blobs.count; i++) {
    const struct img_blob *b = &r->blobs[i];
    if (b->reserved != 0 || b->offset < IMG_DATA_START || b->offset > r->hdr.data_end ||
        b->length > r->hdr.data_end - b->offset)
      return mana_fail_as(err, errlen, EBADMSG,
                          "%s: blob %zu (type %u): its %llu bytes at offset %llu lie outside the "
                          "data area [%u, %llu)",
                          r->name, i, b->type, ULL(b->length), ULL(b->offset), IMG_DATA_START,
                          ULL(r->hdr.data_end));
  }
  return 0;
}

/* ---- version 2: references and page hashes ---------------------------------------------- */

static int bad_ref(const struct mana_image_reader *r, size_t k, const char *why, char *err,
                   size_t errlen)
{
  const struct img_ref *f = &r->refs[k];
  return mana_fail_as(err, errlen, EBADMSG,
                      "%s: reference %zu (region %u, pages %u..+%u, generation %llu at offset "
                      "%llu): %s",
                      r->name, k, f->region, f->first_page, f->page_count, ULL(f->generation),
                      ULL(f->offset), why);
}

static int check_one_ref(const struct mana_image_reader *r, size_t k, char *err, size_t errlen)
{
  const struct img_ref *f = &r->refs[k];
  if (f->region >= r->hdr.regions.count)
    return bad_ref(r, k, "no such region", err, errlen);
  uint64_t npages = r->regions[f->region].length / IMG_PAGE;
  if (f->page_count == 0 || (uint64_t)f->first_page + f->page_count > npages || f->reserved)
    return bad_ref(r, k, "empty, outside the region or with reserved bits set", err, errlen);
  if (f->generation == 0 || f->generation >= r->hdr.generation)
    return bad_ref(r, k, "not an older generation", err, errlen);
  if (f->offset % IMG_PAGE || f->offset < IMG_DATA_START)
    return bad_ref(r, k, "the offset is not a page of a data area", err, errlen);
  if (k > 0) {
    const struct img_ref *p = &r->refs[k - 1];
    if (p->region > f->region ||
        (p->region == f->region && (uint64_t)p->first_page + p->page_count > f->first_page))
      return bad_ref(r, k, "out of order or overlapping the one before", err, errlen);
  }
  return 0;
}

/* Merges region i's runs and refs into pieces in page order; they must not overlap. */
static int build_segs(struct mana_image_reader *r, size_t i, size_t *nseg, size_t *ref_at,
                      uint64_t *hash_index, char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  uint64_t k = 0, next_free = 0;
  r->region_seg[i] = *nseg;
  for (;;) {
    const struct img_run *run = k < g->run_count ? &r->runs[g->first_run + k] : NULL;
    const struct img_ref *ref =
        *ref_at < r->hdr.refs.count && r->refs[*ref_at].region == i ? &r->refs[*ref_at] : NULL;
    if (!run && !ref)
      break;
    struct img_seg s;
    if (run && (!ref || run->first_page < ref->first_page)) {
      s = (struct img_seg){run->first_page, run->page_count, *hash_index, -1};
      k++;
    } else {
      s = (struct img_seg){ref->first_page, ref->page_count, *hash_index, (int64_t)*ref_at};
      (*ref_at)++;
    }
    if (s.first_page < next_free)
      return mana_fail_as(err, errlen, EBADMSG,
                          "%s: region %zu '%s': a reference overlaps a run at page %llu", r->name,
                          i, g->label, ULL(s.first_page));
    next_free = s.first_page + s.page_count;
    *hash_index += s.page_count;
    r->segs[(*nseg)++] = s;
  }
  return 0;
}

/* The region's content checksum, from the page hash table alone. */
static int check_table_content(const struct mana_image_reader *r, size_t i, XXH3_state_t *st,
                               char *err, size_t errlen)
{
  const struct img_region *g = &r->regions[i];
  uint64_t zero = img_zero_page_hash();
  XXH3_64bits_reset(st);
  for (size_t s = r->region_seg[i]; s < r->region_seg[i + 1]; s++)
    for (uint64_t p = 0; p < r->segs[s].page_count; p++) {
      uint64_t h = r->page_hashes[r->segs[s].hash_index + p];
      if (h != zero)
        img_content_add_hash(st, r->segs[s].first_page + p, h);
    }
  uint64_t sum = XXH3_64bits_digest(st);
  if (sum != g->content_hash)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: region %zu '%s': the page hash table does not match the region's "
                        "content checksum (stored %#llx, computed %#llx)",
                        r->name, i, g->label, ULL(g->content_hash), ULL(sum));
  return 0;
}

int img_check_refs(struct mana_image_reader *r, char *err, size_t errlen)
{
  size_t nregions = r->hdr.regions.count, nrefs = r->hdr.refs.count;
  r->oldest = r->hdr.generation;
  for (size_t k = 0; k < nrefs; k++) {
    if (check_one_ref(r, k, err, errlen) < 0)
      return -1;
    r->ref_pages += r->refs[k].page_count;
    if (r->refs[k].generation < r->oldest)
      r->oldest = r->refs[k].generation;
  }
  uint64_t present = r->ref_pages;
  for (size_t i = 0; i < nregions; i++)
    present += r->regions[i].stored_pages;
  if (present != r->hdr.page_hashes.count)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: the page hash table has %llu entries for %llu present pages", r->name,
                        ULL(r->hdr.page_hashes.count), ULL(present));
  r->segs = malloc((r->hdr.runs.count + nrefs + 1) * sizeof(*r->segs));
  r->region_seg = malloc((nregions + 1) * sizeof(*r->region_seg));
  XXH3_state_t *st = XXH3_createState();
  int rc = 0;
  if (!r->segs || !r->region_seg || !st)
    rc = mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the page index", r->name);
  size_t nseg = 0, ref_at = 0;
  uint64_t hash_index = 0;
  for (size_t i = 0; rc == 0 && i < nregions; i++)
    rc = build_segs(r, i, &nseg, &ref_at, &hash_index, err, errlen);
  if (rc == 0) {
    r->region_seg[nregions] = nseg;
    for (size_t i = 0; rc == 0 && i < nregions; i++)
      rc = check_table_content(r, i, st, err, errlen);
  }
  XXH3_freeState(st);
  return rc;
}

const struct img_seg *img_seg_find(const struct mana_image_reader *r, size_t region, uint64_t page,
                                   size_t *cursor)
{
  size_t lo = r->region_seg[region], hi = r->region_seg[region + 1];
  if (*cursor >= lo && *cursor < hi) {
    const struct img_seg *s = &r->segs[*cursor];
    if (page >= s->first_page && page < s->first_page + s->page_count)
      return s;
    if (*cursor + 1 < hi && page >= s[1].first_page && page < s[1].first_page + s[1].page_count)
      return &r->segs[++*cursor];
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct img_seg *s = &r->segs[mid];
    if (page < s->first_page)
      hi = mid;
    else if (page >= s->first_page + s->page_count)
      lo = mid + 1;
    else {
      *cursor = mid;
      return s;
    }
  }
  return NULL;
}
