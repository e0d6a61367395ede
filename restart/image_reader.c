/* Opening an image: header, tables and blobs are read and validated up front, so that a
 * damaged or foreign file is refused before anything is mapped. Region contents are read by
 * image_restore.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_prefault.h"
#include "image_reader.h"
#include "image_util.h"
#include "mana/fail.h"

#define ULL(x) ((unsigned long long)(x))

static int read_header(struct mana_image_reader *r, char *err, size_t errlen)
{
  if (r->file_size < IMG_HEADER_SIZE)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: truncated: the header needs %u bytes but the file has %llu bytes",
                        r->name, IMG_HEADER_SIZE, ULL(r->file_size));
  if (img_pread_all(r->fd, &r->hdr, sizeof(r->hdr), 0) < 0)
    return mana_fail(err, errlen, errno, "%s: reading the header", r->name);
  return img_check_header(r, err, errlen);
}

/* Reads one table into a fresh buffer and checks its checksum. */
static int load_table(struct mana_image_reader *r, const char *what, const struct img_section *s,
                      void **out, char *err, size_t errlen)
{
  *out = malloc(s->size ? s->size : 1);
  if (!*out)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the %s (%llu bytes)", r->name, what,
                        ULL(s->size));
  if (img_pread_all(r->fd, *out, s->size, s->offset) < 0)
    return mana_fail(err, errlen, errno, "%s: reading the %s at offset %llu", r->name, what,
                     ULL(s->offset));
  return img_check_table(r, what, s, *out, err, errlen);
}

static int load_tables(struct mana_image_reader *r, char *err, size_t errlen)
{
  if (load_table(r, "region table", &r->hdr.regions, (void **)&r->regions, err, errlen) < 0 ||
      load_table(r, "run table", &r->hdr.runs, (void **)&r->runs, err, errlen) < 0 ||
      load_table(r, "blob table", &r->hdr.blobs, (void **)&r->blobs, err, errlen) < 0)
    return -1;
  if (img_check_regions(r, err, errlen) < 0 || img_check_blobs(r, err, errlen) < 0)
    return -1;
  r->oldest = r->hdr.generation;
  if (r->hdr.version < 2)
    return 0;
  if (load_table(r, "reference table", &r->hdr.refs, (void **)&r->refs, err, errlen) < 0 ||
      load_table(r, "page hash table", &r->hdr.page_hashes, (void **)&r->page_hashes, err, errlen) <
          0)
    return -1;
  return img_check_refs(r, err, errlen);
}

/* Blobs are small and needed early by a restart: all of them are loaded and checked now. */
static int load_blobs(struct mana_image_reader *r, char *err, size_t errlen)
{
  size_t n = r->hdr.blobs.count;
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += r->blobs[i].length; /* each is inside the data area: no overflow */
  r->blob_data = malloc(total ? total : 1);
  r->blob_ptr = calloc(n ? n : 1, sizeof(*r->blob_ptr));
  if (!r->blob_data || !r->blob_ptr)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for %zu blobs of %llu bytes", r->name,
                        n, ULL(total));
  unsigned char *p = r->blob_data;
  for (size_t i = 0; i < n; i++) {
    const struct img_blob *b = &r->blobs[i];
    if (img_pread_all(r->fd, p, b->length, b->offset) < 0)
      return mana_fail(err, errlen, errno, "%s: blob %zu (type %u): reading at offset %llu",
                       r->name, i, b->type, ULL(b->offset));
    uint64_t sum = XXH3_64bits(p, b->length);
    if (sum != b->hash)
      return mana_fail_as(
          err, errlen, EBADMSG,
          "%s: blob %zu (type %u): checksum mismatch (stored %#llx, computed %#llx): "
          "its %llu bytes at offset %llu are damaged",
          r->name, i, b->type, ULL(b->hash), ULL(sum), ULL(b->length), ULL(b->offset));
    r->blob_ptr[i] = p;
    p += b->length;
  }
  return 0;
}

static void fill_info(const struct img_header *h, struct mana_image_info *info)
{
  memset(info, 0, sizeof(*info));
  info->rank = h->rank;
  info->world_size = h->world_size;
  info->generation = h->generation;
  info->window_base = h->window_base;
  info->window_end = h->window_end;
  info->vdso_base = h->vdso_base;
  info->thread_level = h->thread_level;
  info->created_unix_ns = h->created_unix_ns;
  info->header_hash = h->header_hash;
  memcpy(info->hostname, h->hostname, strnlen(h->hostname, sizeof(info->hostname) - 1));
  memcpy(info->kernel_release, h->kernel_release,
         strnlen(h->kernel_release, sizeof(info->kernel_release) - 1));
}

static int open_file(struct mana_image_reader *r, int dirfd, const char *name, char *err,
                     size_t errlen)
{
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0)
    return mana_fail(err, errlen, errno, "%s: cannot open", name);
  struct stat st;
  if (fstat(r->fd, &st) < 0)
    return mana_fail(err, errlen, errno, "%s: fstat", name);
  if (!S_ISREG(st.st_mode))
    return mana_fail_as(err, errlen, EINVAL, "%s: not a regular file", name);
  r->file_size = (uint64_t)st.st_size;
  r->direct_fd = img_io_open_direct(dirfd, name, O_RDONLY, r->fd);
  return 0;
}

int mana_image_open(struct mana_image_reader **rp, int dirfd, const char *name,
                    struct mana_image_info *info, char *err, size_t errlen)
{
  *rp = NULL;
  struct mana_image_reader *r = calloc(1, sizeof(*r));
  if (!r)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the image reader", name);
  r->fd = r->direct_fd = -1;
  if (open_file(r, dirfd, name, err, errlen) < 0 || read_header(r, err, errlen) < 0 ||
      img_check_sections(r, err, errlen) < 0 || load_tables(r, err, errlen) < 0 ||
      load_blobs(r, err, errlen) < 0) {
    int e = errno;
    mana_image_close(r);
    errno = e;
    return -1;
  }
  if (info)
    fill_info(&r->hdr, info);
  *rp = r;
  return 0;
}

size_t mana_image_region_count(const struct mana_image_reader *r)
{
  return r->hdr.regions.count;
}

int mana_image_region_info(const struct mana_image_reader *r, size_t i, uint64_t *start,
                           uint64_t *len, uint32_t *prot, uint32_t *flags, const char **label)
{
  if (i >= r->hdr.regions.count) {
    errno = EINVAL;
    return -1;
  }
  const struct img_region *g = &r->regions[i];
  if (start)
    *start = g->start;
  if (len)
    *len = g->length;
  if (prot)
    *prot = g->prot;
  if (flags)
    *flags = g->flags;
  if (label)
    *label = g->label;
  return 0;
}

size_t mana_image_blob_count(const struct mana_image_reader *r)
{
  return r->hdr.blobs.count;
}

int mana_image_blob_at(const struct mana_image_reader *r, size_t i, uint32_t *type,
                       const void **data, size_t *len)
{
  if (i >= r->hdr.blobs.count) {
    errno = EINVAL;
    return -1;
  }
  if (type)
    *type = r->blobs[i].type;
  if (data)
    *data = r->blob_ptr[i];
  if (len)
    *len = r->blobs[i].length;
  return 0;
}

int mana_image_next_blob(const struct mana_image_reader *r, uint32_t type, size_t *cursor,
                         const void **data, size_t *len)
{
  for (; *cursor < r->hdr.blobs.count; ++*cursor)
    if (r->blobs[*cursor].type == type)
      return mana_image_blob_at(r, (*cursor)++, NULL, data, len) == 0;
  return 0;
}

int mana_image_blob(const struct mana_image_reader *r, uint32_t type, const void **data,
                    size_t *len)
{
  for (size_t i = 0; i < r->hdr.blobs.count; i++)
    if (r->blobs[i].type == type)
      return mana_image_blob_at(r, i, NULL, data, len);
  errno = ENOENT;
  return -1;
}

uint64_t mana_image_digest(const struct mana_image_reader *r)
{
  return r->hdr.header_hash;
}

void mana_image_set_huge_pages(struct mana_image_reader *r, uint64_t min_len)
{
  r->huge_min = min_len;
}

void mana_image_set_resolver(struct mana_image_reader *r, mana_image_resolve_fn *fn, void *arg)
{
  r->resolve = fn;
  r->resolve_arg = arg;
}

uint64_t mana_image_oldest_generation(const struct mana_image_reader *r)
{
  return r->oldest;
}

uint64_t mana_image_referenced_pages(const struct mana_image_reader *r)
{
  return r->ref_pages;
}

static struct mana_image_reader *base_cached(const struct mana_image_reader *r, uint64_t gen)
{
  for (size_t i = 0; i < r->nbases; i++)
    if (r->bases[i].generation == gen)
      return r->bases[i].r;
  return NULL;
}

static int base_open(struct mana_image_reader *r, uint64_t gen, struct mana_image_reader **out,
                     char *err, size_t errlen)
{
  if (!r->resolve)
    return mana_fail_as(err, errlen, ENOENT,
                        "%s: refers to pages kept in generation %llu, and nothing says where "
                        "that generation's images are",
                        r->name, ULL(gen));
  struct img_base_open *grown = realloc(r->bases, (r->nbases + 1) * sizeof(*grown));
  if (!grown)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory to open generation %llu", r->name,
                        ULL(gen));
  r->bases = grown;
  char why[1024];
  struct mana_image_reader *b = NULL;
  if (r->resolve(r->resolve_arg, gen, &b, why, sizeof(why)) < 0)
    return mana_fail_as(err, errlen, errno,
                        "%s: the image of generation %llu it refers to cannot be used: %s", r->name,
                        ULL(gen), why);
  r->bases[r->nbases++] = (struct img_base_open){gen, b};
  *out = b;
  return 0;
}

int img_base_for_ref(struct mana_image_reader *r, const struct img_ref *ref, size_t k,
                     struct mana_image_reader **base, char *err, size_t errlen)
{
  struct mana_image_reader *b = base_cached(r, ref->generation);
  if (!b && base_open(r, ref->generation, &b, err, errlen) < 0)
    return -1;
  const struct img_header *h = &b->hdr;
  uint64_t len = (uint64_t)ref->page_count * IMG_PAGE;
  if (h->rank != r->hdr.rank || h->generation != ref->generation ||
      h->header_hash != ref->image_digest)
    return mana_fail_as(err, errlen, ESTALE,
                        "%s: reference %zu wants rank %u's image of generation %llu with digest "
                        "%#llx; %s is rank %u's of generation %llu with digest %#llx (replaced "
                        "since?)",
                        r->name, k, r->hdr.rank, ULL(ref->generation), ULL(ref->image_digest),
                        b->name, h->rank, ULL(h->generation), ULL(h->header_hash));
  if (ref->offset > h->data_end || len > h->data_end - ref->offset)
    return mana_fail_as(err, errlen, EBADMSG,
                        "%s: reference %zu: pages at offset %llu..+%llu lie outside the data area "
                        "of %s",
                        r->name, k, ULL(ref->offset), ULL(len), b->name);
  *base = b;
  return 0;
}

void mana_image_close(struct mana_image_reader *r)
{
  if (!r)
    return;
  img_io_close(r->io); /* first: its worker may still use the descriptors */
  img_prefault_close(r->prefault);
  if (r->direct_fd >= 0)
    close(r->direct_fd);
  if (r->fd >= 0)
    close(r->fd);
  free(r->regions);
  free(r->runs);
  free(r->blobs);
  free(r->blob_data);
  free(r->blob_ptr);
  free(r->refs);
  free(r->page_hashes);
  free(r->segs);
  free(r->region_seg);
  for (size_t i = 0; i < r->nbases; i++)
    mana_image_close(r->bases[i].r);
  free(r->bases);
  free(r->bounce);
  XXH3_freeState(r->content);
  free(r);
}
