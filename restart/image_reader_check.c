/* Validating an image before anything in it is used (see image_reader.h). Every check names
 * the file and the exact field or offset at fault. */
#include <errno.h>
#include <stdio.h>
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
  if (h->version != IMG_VERSION)
    return mana_fail_as(err, errlen, EPROTONOSUPPORT,
                        "%s: image format version %u is not supported (this build reads version "
                        "%u)",
                        r->name, h->version, IMG_VERSION);
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
  };
  uint64_t expected = h->data_end;
  for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
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
