/* Batched transfers between memory and an image file (see image_io.h). */
#define _GNU_SOURCE
#include "image_io.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_format.h"
#include "image_util.h"
#include "mana/signals.h"

/* Buffered writing: hand each 16 MiB to the storage as soon as it is complete, and wait for
 * (then drop from the page cache) what lies more than 64 MiB behind, so the final fsync has
 * little left and dirty memory stays bounded. Buffered reading: keep 32 MiB of readahead
 * requested beyond the batch being read. */
#define WB_KICK (16ull << 20)
#define WB_LAG (64ull << 20)
#define RA_AHEAD (32ull << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* ---- moving one batch (the worker's side) ----------------------------------------------- */

/* A hint the file system does not support is not an error: stop giving it. */
static int hint_failed(struct img_io *io)
{
  if (errno == EINVAL || errno == ESPIPE || errno == ENOSYS || errno == EOPNOTSUPP) {
    io->hints = false;
    return 0;
  }
  return -1;
}

static int write_behind(struct img_io *io, uint64_t end)
{
  if (!io->hints || end < io->kicked + WB_KICK)
    return 0;
  if (sync_file_range(io->fd, (off_t)io->kicked, (off_t)(end - io->kicked), SYNC_FILE_RANGE_WRITE) <
      0)
    return hint_failed(io);
  io->kicked = end;
  if (io->kicked < io->settled + WB_LAG)
    return 0;
  uint64_t upto = io->kicked - WB_LAG / 2;
  if (sync_file_range(io->fd, (off_t)io->settled, (off_t)(upto - io->settled),
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                          SYNC_FILE_RANGE_WAIT_AFTER) < 0)
    return hint_failed(io);
  posix_fadvise(io->fd, (off_t)io->settled, (off_t)(upto - io->settled), POSIX_FADV_DONTNEED);
  io->settled = upto;
  return 0;
}

static void read_ahead(struct img_io *io, const struct img_io_batch *b)
{
  uint64_t end = b->offset + b->pending, want = end + RA_AHEAD;
  uint64_t from = io->ahead > end ? io->ahead : end;
  /* Asks for a quarter of the window at a time, not a sliver after every batch. */
  if (!io->hints || want <= from || want - from < RA_AHEAD / 4)
    return;
  if (posix_fadvise(io->fd, (off_t)from, (off_t)(want - from), POSIX_FADV_WILLNEED) != 0)
    io->hints = false;
  io->ahead = want;
}

static int transfer(struct img_io *io, int fd, struct img_io_batch *b)
{
  for (int i = 0; i < b->count; i++)
    b->iov[i] = (struct iovec){b->item[i].base, b->item[i].len};
  if (io->writing)
    return img_pwritev_all(fd, b->iov, b->count, b->offset);
  return img_preadv_all(fd, b->iov, b->count, b->offset);
}

/* O_DIRECT wants every address, length and offset on a block boundary; whole pages are. */
static bool direct_fits(const struct img_io *io, const struct img_io_batch *b)
{
  if (io->direct_fd < 0 || b->offset % IMG_PAGE)
    return false;
  for (int i = 0; i < b->count; i++)
    if ((uintptr_t)b->item[i].base % IMG_PAGE || b->item[i].len % IMG_PAGE)
      return false;
  return true;
}

static int move_buffered(struct img_io *io, struct img_io_batch *b)
{
  if (io->writing) {
    if (transfer(io, io->fd, b) < 0)
      return -1;
    return write_behind(io, b->offset + b->pending);
  }
  read_ahead(io, b);
  return transfer(io, io->fd, b);
}

static void move_batch(struct img_io *io, struct img_io_batch *b)
{
  int rc;
  if (!direct_fits(io, b)) {
    rc = move_buffered(io, b);
  } else {
    rc = transfer(io, io->direct_fd, b);
    /* EINVAL/EOPNOTSUPP: the file system takes no direct I/O after all; EFAULT: memory the
     * kernel cannot pin (a device mapping, say). The page cache takes both. */
    if (rc < 0 && (errno == EINVAL || errno == EOPNOTSUPP)) {
      close(io->direct_fd);
      io->direct_fd = -1;
      rc = move_buffered(io, b);
    } else if (rc < 0 && errno == EFAULT) {
      rc = move_buffered(io, b);
    }
  }
  b->err = rc < 0 ? (errno ? errno : EIO) : 0;
  if (rc == 0)
    atomic_fetch_add_explicit(&io->moved, b->pending, memory_order_relaxed);
}

/* ---- the worker thread ------------------------------------------------------------------ */

static void *worker_main(void *arg)
{
  struct img_io *io = arg;
  pthread_mutex_lock(&io->lock);
  for (;;) {
    while (io->job < 0 && !io->quit)
      pthread_cond_wait(&io->cond, &io->lock);
    if (io->job < 0)
      break;
    struct img_io_batch *b = &io->batch[io->job];
    pthread_mutex_unlock(&io->lock);
    move_batch(io, b);
    pthread_mutex_lock(&io->lock);
    io->job = -1;
    pthread_cond_broadcast(&io->cond);
  }
  pthread_mutex_unlock(&io->lock);
  return NULL;
}

/* The worker takes no signals: they are meant for the threads of the program. */
static void start_worker(struct img_io *io)
{
  sigset_t all, old;
  pthread_attr_t attr;
  mana_sigset_block_all(&all);
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  io->threaded = pthread_create(&io->thread, &attr, worker_main, io) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
}

static void submit(struct img_io *io, int idx)
{
  if (!io->threaded) {
    move_batch(io, &io->batch[idx]);
    return;
  }
  pthread_mutex_lock(&io->lock);
  io->job = idx;
  pthread_cond_broadcast(&io->cond);
  pthread_mutex_unlock(&io->lock);
}

static void wait_worker(struct img_io *io)
{
  if (!io->threaded)
    return;
  pthread_mutex_lock(&io->lock);
  while (io->job >= 0)
    pthread_cond_wait(&io->cond, &io->lock);
  pthread_mutex_unlock(&io->lock);
}

/* ---- the caller's side ------------------------------------------------------------------ */

static void reset_batch(struct img_io_batch *b, uint64_t offset)
{
  b->offset = offset;
  b->pending = 0;
  b->count = 0;
  b->err = 0;
}

static void arrived(struct img_io *io, const struct img_io_batch *b)
{
  if (io->writing || !io->arrived || !b)
    return;
  for (int i = 0; i < b->count; i++)
    io->arrived(io->arrived_arg, b->item[i].first_page, b->item[i].base,
                b->item[i].len >> IMG_PAGE_SHIFT);
}

/* Takes back the batch the worker had: its error, or (reading) its pages for the checksum,
 * which the caller adds while the worker already moves the next batch. */
static struct img_io_batch *take_back(struct img_io *io)
{
  if (!io->busy)
    return NULL;
  wait_worker(io);
  io->busy = false;
  struct img_io_batch *b = &io->batch[io->cur ^ 1];
  if (b->err && !io->err) {
    io->err = b->err;
    io->failed_at = b->offset;
  }
  return b;
}

/* After a failed batch nothing more is moved; every call says so. */
static int failed(struct img_io *io)
{
  errno = io->err;
  return -1;
}

/* Hands the current batch to the worker and starts the next one after it. */
static int flush(struct img_io *io)
{
  struct img_io_batch *cur = &io->batch[io->cur];
  if (io->err)
    return failed(io);
  if (cur->count == 0)
    return 0;
  struct img_io_batch *prev = take_back(io);
  if (io->err)
    return failed(io);
  submit(io, io->cur);
  io->busy = true;
  arrived(io, prev);
  io->cur ^= 1;
  reset_batch(&io->batch[io->cur], cur->offset + cur->pending);
  return 0;
}

int img_io_finish(struct img_io *io)
{
  if (flush(io) < 0)
    return -1;
  struct img_io_batch *last = take_back(io);
  if (io->err)
    return failed(io);
  arrived(io, last);
  return 0;
}

/* Appends to the last item when the memory and the page numbers both continue it. */
static void append(struct img_io_batch *b, void *base, uint64_t len, uint64_t first_page)
{
  struct img_io_item *last = b->count ? &b->item[b->count - 1] : NULL;
  if (last && (char *)last->base + last->len == (char *)base &&
      last->first_page + (last->len >> IMG_PAGE_SHIFT) == first_page)
    last->len += len;
  else
    b->item[b->count++] = (struct img_io_item){base, len, first_page};
  b->pending += len;
}

/* Reading into fresh memory: fault the destination in with one call per piece, here, while
 * the worker is still busy with the previous batch, instead of page by page inside the
 * worker's read. */
static void populate(struct img_io *io, void *base, uint64_t len)
{
  if (io->populate && madvise(base, len, MADV_POPULATE_WRITE) < 0)
    io->populate = false; /* before Linux 5.14: the read faults the pages in instead */
}

int img_io_add(struct img_io *io, void *base, uint64_t len, uint64_t first_page)
{
  char *p = base;
  while (len > 0) {
    struct img_io_batch *b = &io->batch[io->cur];
    uint64_t n = len < img_io_room(io) ? len : img_io_room(io);
    populate(io, p, n);
    append(b, p, n, first_page);
    p += n;
    len -= n;
    first_page += n >> IMG_PAGE_SHIFT;
    if ((b->pending >= io->limit || b->count == IMG_IO_MAX_ITEMS) && flush(io) < 0)
      return -1;
  }
  return 0;
}

uint64_t img_io_tell(const struct img_io *io)
{
  return io->batch[io->cur].offset + io->batch[io->cur].pending;
}

int img_io_seek(struct img_io *io, uint64_t offset)
{
  if (offset == img_io_tell(io))
    return 0;
  if (flush(io) < 0)
    return -1;
  io->batch[io->cur].offset = offset;
  return 0;
}

uint64_t img_io_room(const struct img_io *io)
{
  return io->limit - io->batch[io->cur].pending;
}

int img_io_slot(const struct img_io *io)
{
  return io->cur;
}

void img_io_restart(struct img_io *io, uint64_t limit, uint64_t offset)
{
  io->limit = limit;
  io->cur = 0;
  io->busy = false;
  io->err = 0;
  io->failed_at = 0;
  io->kicked = io->settled = io->ahead = offset;
  io->populate = !io->writing;
  reset_batch(&io->batch[0], offset);
  reset_batch(&io->batch[1], offset);
}

int img_io_open(struct img_io **iop, int fd, int direct_fd, bool writing, uint64_t limit,
                uint64_t offset)
{
  struct img_io *io = calloc(1, sizeof(*io));
  *iop = io;
  if (!io)
    return -1;
  io->fd = fd;
  io->direct_fd = direct_fd;
  io->writing = writing;
  io->hints = true;
  io->job = -1;
  img_io_restart(io, limit, offset);
  pthread_mutex_init(&io->lock, NULL);
  pthread_cond_init(&io->cond, NULL);
  start_worker(io);
  return 0;
}

void img_io_close(struct img_io *io)
{
  if (!io)
    return;
  if (io->threaded) {
    pthread_mutex_lock(&io->lock);
    io->quit = true;
    pthread_cond_broadcast(&io->cond);
    pthread_mutex_unlock(&io->lock);
    pthread_join(io->thread, NULL);
  }
  pthread_mutex_destroy(&io->lock);
  pthread_cond_destroy(&io->cond);
  if (io->direct_fd >= 0)
    close(io->direct_fd);
  free(io);
}

int img_io_open_direct(int dirfd, const char *name, int flags, int fd)
{
  /* MANA_IMAGE_DIRECT=0: for a file system whose O_DIRECT misbehaves, and for the tests of
   * the buffered path. */
  const char *env = getenv("MANA_IMAGE_DIRECT");
  if (env && strcmp(env, "0") == 0)
    return -1;
  int dfd = openat(dirfd, name, flags | O_DIRECT | O_CLOEXEC);
  struct stat a, b;
  if (dfd < 0)
    return -1;
  if (fstat(dfd, &a) < 0 || fstat(fd, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    close(dfd);
    return -1;
  }
  return dfd;
}
