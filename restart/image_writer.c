/* Writing an image: the file's life (temporary name, commit, abort), blobs and the tables.
 * Memory regions are in image_writer_region.c. */
#define _GNU_SOURCE
#include "image_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "image_reader.h"
#include "image_util.h"
#include "mana/fail.h"

int img_writer_fail(struct mana_image_writer *w, int errnum, const char *fmt, ...)
{
  if (!w->failed) {
    int n = snprintf(w->err, sizeof(w->err), "%s: ", w->tmp_name);
    if (n < 0 || (size_t)n >= sizeof(w->err))
      n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err + n, sizeof(w->err) - (size_t)n, fmt, ap);
    va_end(ap);
    w->failed = true;
  }
  errno = errnum;
  return -1;
}

int img_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  size_t ncap = *cap ? *cap : 64;
  while (ncap < need)
    ncap *= 2;
  void *p = realloc(*arr, ncap * elem);
  if (!p)
    return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

/* Header fields from the caller's info; what the caller left empty comes from this process. */
static void fill_header(struct img_header *h, const struct mana_image_info *info)
{
  memcpy(h->magic, IMG_MAGIC, IMG_MAGIC_LEN);
  h->version = IMG_VERSION;
  h->header_size = IMG_HEADER_SIZE;
  h->page_size = IMG_PAGE;
  h->rank = info->rank;
  h->world_size = info->world_size;
  h->generation = info->generation;
  h->window_base = info->window_base;
  h->window_end = info->window_end;
  h->vdso_base = info->vdso_base ? info->vdso_base : getauxval(AT_SYSINFO_EHDR);
  h->thread_level = info->thread_level;
  h->created_unix_ns = info->created_unix_ns;
  if (!h->created_unix_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->created_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  }
  struct utsname u;
  bool have_uname = uname(&u) == 0;
  img_set_string(h->hostname, sizeof(h->hostname),
                 info->hostname[0] || !have_uname ? info->hostname : u.nodename);
  img_set_string(h->kernel_release, sizeof(h->kernel_release),
                 info->kernel_release[0] || !have_uname ? info->kernel_release : u.release);
  h->data_offset = IMG_DATA_START;
}

static int name_tmp(struct mana_image_writer *w, const char *final_name)
{
  size_t n = strlen(final_name);
  if (n == 0 || n + sizeof(".tmp") > sizeof(w->tmp_name))
    return -1;
  memcpy(w->final_name, final_name, n + 1);
  memcpy(w->tmp_name, final_name, n);
  memcpy(w->tmp_name + n, ".tmp", sizeof(".tmp"));
  return 0;
}

static void writer_free(struct mana_image_writer *w)
{
  img_io_close(w->io); /* first: its worker may still use the descriptors */
  if (w->fd >= 0)
    close(w->fd);
  img_scan_fini(&w->scan);
  XXH3_freeState(w->content);
  free(w->regions);
  free(w->runs);
  free(w->blobs);
  free(w->refs);
  free(w->hashes);
  img_base_index_free(&w->base);
  free(w);
}

int mana_image_writer_open(struct mana_image_writer **wp, int dirfd, const char *final_name,
                           const struct mana_image_info *info, char *err, size_t errlen)
{
  *wp = NULL;
  struct mana_image_writer *w = calloc(1, sizeof(*w));
  if (!w)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the image writer", final_name);
  w->fd = -1;
  w->scan.pagemap_fd = -1;
  w->dirfd = dirfd;
  w->run_budget = IMG_DEFAULT_RUN_BUDGET;
  if (name_tmp(w, final_name) < 0) {
    free(w);
    return mana_fail_as(err, errlen, ENAMETOOLONG, "image name '%s' is empty or too long",
                        final_name);
  }
  w->content = XXH3_createState();
  if (!w->content || img_scan_init(&w->scan) < 0) {
    writer_free(w);
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the image writer", final_name);
  }
  w->fd = openat(dirfd, w->tmp_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (w->fd < 0) {
    int e = errno;
    writer_free(w);
    return mana_fail(err, errlen, e, "%s.tmp: cannot create", final_name);
  }
  int direct_fd = img_io_open_direct(dirfd, w->tmp_name, O_WRONLY, w->fd);
  if (img_io_open(&w->io, w->fd, direct_fd, true, IMG_IO_BATCH, IMG_DATA_START) < 0) {
    if (direct_fd >= 0)
      close(direct_fd);
    mana_image_writer_abort(w);
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the image writer", final_name);
  }
  fill_header(&w->hdr, info);
  w->stats.oldest_generation = info->generation;
  *wp = w;
  return 0;
}

static int base_refused(struct mana_image_writer *w, const char *base_name, char *err,
                        size_t errlen, const char *why)
{
  return mana_fail_as(err, errlen, EINVAL, "%s: %s cannot be its base: %s", w->final_name,
                      base_name, why);
}

int mana_image_writer_set_base(struct mana_image_writer *w, const struct mana_image_reader *base,
                               char *err, size_t errlen)
{
  const struct img_header *b = &base->hdr, *h = &w->hdr;
  if (w->nregions || w->incremental)
    return base_refused(w, base->name, err, errlen, "regions were added already");
  if (b->version < 2)
    return base_refused(w, base->name, err, errlen,
                        "it is of format version 1, which records no page hashes");
  if (b->rank != h->rank || b->world_size != h->world_size)
    return base_refused(w, base->name, err, errlen, "it is of another rank or world size");
  if (b->generation >= h->generation)
    return base_refused(w, base->name, err, errlen, "it is not of an older generation");
  if (b->window_base != h->window_base || b->window_end != h->window_end)
    return base_refused(w, base->name, err, errlen, "its upper-half window is elsewhere");
  if (img_base_index_build(&w->base, base) < 0)
    return mana_fail_as(err, errlen, ENOMEM, "%s: no memory for the index of %s", w->final_name,
                        base->name);
  w->incremental = true;
  return 0;
}

int mana_image_add_blob(struct mana_image_writer *w, uint32_t type, const void *data, size_t len)
{
  if (w->failed)
    return img_writer_fail(w, ECANCELED, "blob after an earlier error");
  if (img_grow((void **)&w->blobs, &w->blobs_cap, w->nblobs + 1, sizeof(*w->blobs)) < 0)
    return img_writer_fail(w, ENOMEM, "blob %zu (type %u): no memory for the blob table", w->nblobs,
                           type);
  /* Blobs sit between regions in the data area, 8-byte aligned, written through the page
   * cache (they are small and unaligned) once the region data before them is out. */
  if (img_io_finish(w->io) < 0)
    return img_writer_fail(w, errno, "blob %zu (type %u): write at offset %llu: %s", w->nblobs,
                           type, (unsigned long long)w->io->failed_at, strerror(errno));
  uint64_t off = img_align_up(img_io_tell(w->io), 8);
  if (img_pwrite_all(w->fd, data, len, off) < 0)
    return img_writer_fail(w, errno, "blob %zu (type %u): write at offset %llu: %s", w->nblobs,
                           type, (unsigned long long)off, strerror(errno));
  img_io_seek(w->io, off + len); /* nothing pending: cannot fail */
  atomic_fetch_add_explicit(&w->io->moved, len, memory_order_relaxed);
  w->blobs[w->nblobs++] =
      (struct img_blob){.type = type, .offset = off, .length = len, .hash = XXH3_64bits(data, len)};
  w->stats.blobs++;
  w->stats.blob_bytes += len;
  return 0;
}

static void set_section(struct img_section *s, uint64_t offset, const void *table, size_t count,
                        size_t elem)
{
  s->offset = offset;
  s->count = count;
  s->size = count * elem;
  s->hash = XXH3_64bits(table, s->size);
}

/* The tables go right after the data area; then the header, whose checksum covers theirs. */
static int write_tables(struct mana_image_writer *w)
{
  struct img_header *h = &w->hdr;
  if (img_io_finish(w->io) < 0)
    return img_writer_fail(w, errno, "write at offset %llu: %s",
                           (unsigned long long)w->io->failed_at, strerror(errno));
  h->data_end = img_align_up(img_io_tell(w->io), 8);
  set_section(&h->regions, h->data_end, w->regions, w->nregions, sizeof(*w->regions));
  set_section(&h->runs, h->regions.offset + h->regions.size, w->runs, w->nruns, sizeof(*w->runs));
  set_section(&h->blobs, h->runs.offset + h->runs.size, w->blobs, w->nblobs, sizeof(*w->blobs));
  set_section(&h->refs, h->blobs.offset + h->blobs.size, w->refs, w->nrefs, sizeof(*w->refs));
  set_section(&h->page_hashes, h->refs.offset + h->refs.size, w->hashes, w->nhashes,
              sizeof(*w->hashes));
  h->file_size = h->page_hashes.offset + h->page_hashes.size;
  struct iovec iov[5] = {{w->regions, h->regions.size},
                         {w->runs, h->runs.size},
                         {w->blobs, h->blobs.size},
                         {w->refs, h->refs.size},
                         {w->hashes, h->page_hashes.size}};
  if (img_pwritev_all(w->fd, iov, 5, h->regions.offset) < 0)
    return img_writer_fail(w, errno, "writing the tables at offset %llu: %s",
                           (unsigned long long)h->regions.offset, strerror(errno));
  h->header_hash = XXH3_64bits(h, offsetof(struct img_header, header_hash));
  if (img_pwrite_all(w->fd, h, sizeof(*h), 0) < 0)
    return img_writer_fail(w, errno, "writing the header: %s", strerror(errno));
  /* Empty tables write nothing: the size must still say where the image ends. */
  if (ftruncate(w->fd, (off_t)h->file_size) < 0)
    return img_writer_fail(w, errno, "setting the size to %llu: %s",
                           (unsigned long long)h->file_size, strerror(errno));
  return 0;
}

/* The directory entry of the rename must reach the storage too. */
static int sync_dir(struct mana_image_writer *w)
{
  int fd = w->dirfd;
  if (fd == AT_FDCWD && (fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return img_writer_fail(w, errno, "opening the current directory to sync it: %s",
                           strerror(errno));
  int rc = fsync(fd);
  int e = errno;
  if (fd != w->dirfd)
    close(fd);
  if (rc < 0 && e != EINVAL) /* EINVAL: this file system cannot sync directories */
    return img_writer_fail(w, e, "fsync of the directory holding %s: %s", w->final_name,
                           strerror(e));
  return 0;
}

static int finish(struct mana_image_writer *w)
{
  if (w->failed)
    return -1;
  if (write_tables(w) < 0)
    return -1;
  if (fsync(w->fd) < 0)
    return img_writer_fail(w, errno, "fsync: %s", strerror(errno));
  if (close(w->fd) < 0) {
    w->fd = -1;
    return img_writer_fail(w, errno, "close: %s", strerror(errno));
  }
  w->fd = -1;
  if (renameat(w->dirfd, w->tmp_name, w->dirfd, w->final_name) < 0)
    return img_writer_fail(w, errno, "rename to %s: %s", w->final_name, strerror(errno));
  w->renamed = true;
  return sync_dir(w);
}

int mana_image_writer_commit(struct mana_image_writer *w, uint64_t *bytes_written,
                             uint64_t *file_hash, char *err, size_t errlen)
{
  int rc = finish(w);
  if (rc < 0) {
    int e = errno;
    mana_fail_as(err, errlen, e, "%s", w->err);
    /* An image whose directory entry may not be durable is not a committed image either. */
    unlinkat(w->dirfd, w->renamed ? w->final_name : w->tmp_name, 0);
    writer_free(w);
    errno = e;
    return -1;
  }
  if (bytes_written)
    *bytes_written = w->hdr.file_size;
  if (file_hash)
    *file_hash = w->hdr.header_hash;
  writer_free(w);
  return 0;
}

void mana_image_writer_abort(struct mana_image_writer *w)
{
  if (!w)
    return;
  unlinkat(w->dirfd, w->tmp_name, 0);
  writer_free(w);
}

void mana_image_progress(const struct mana_image_writer *w, uint64_t *bytes)
{
  *bytes = atomic_load_explicit(&w->io->moved, memory_order_relaxed);
}

void mana_image_writer_on_progress(struct mana_image_writer *w, mana_image_progress_fn *fn,
                                   void *arg, uint64_t every)
{
  w->on_progress = fn;
  w->progress_arg = arg;
  w->progress_every = every ? every : 1;
  w->progress_next = w->progress_every;
}

const char *mana_image_writer_error(const struct mana_image_writer *w)
{
  return w->err;
}

void mana_image_writer_stats(const struct mana_image_writer *w, struct mana_image_stats *stats)
{
  *stats = w->stats;
}

void mana_image_writer_set_run_budget(struct mana_image_writer *w, size_t runs)
{
  w->run_budget = runs ? runs : 1;
}
