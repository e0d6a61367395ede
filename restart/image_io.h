/* Big transfers between memory and an image file.
 *
 * Pieces of memory are gathered (writing) or scattered (reading) in file order into batches
 * of up to 16 MiB, each moved with one pwritev/preadv straight from or into the process's
 * memory. A worker thread moves one batch while the caller fills the next (writing: scanning
 * and checksumming pages; reading: checksumming the previous batch), so the storage never
 * waits for the CPU work.
 *
 * Transfers use O_DIRECT where the file system allows it: no page-cache copy, no second
 * gigabyte of memory while the application's own is being saved or restored, and the
 * device sees requests as big as the batch. Where it does not (tmpfs, some FUSE), or for a
 * batch it refuses, the ordinary descriptor is used, with early write-back and readahead
 * hints to keep the storage busy. */
#ifndef MANA_IMAGE_IO_H
#define MANA_IMAGE_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <xxhash.h>

#define IMG_IO_MAX_ITEMS 1024 /* IOV_MAX */
#define IMG_IO_BATCH (16u << 20)

struct img_io_item {
  void *base;
  uint64_t len;
  uint64_t first_page; /* page number in its region, for the checksum (reading only) */
};

/* Pages [first_page, first_page + npages) of the region being read now lie at base. */
typedef void img_io_arrived_fn(void *arg, uint64_t first_page, const void *base, uint64_t npages);

struct img_io_batch {
  uint64_t offset;  /* file offset of the first byte */
  uint64_t pending; /* bytes */
  int count;
  int err; /* errno of a failed transfer, 0 if it went well */
  struct img_io_item item[IMG_IO_MAX_ITEMS];
  struct iovec iov[IMG_IO_MAX_ITEMS];
};

struct img_io {
  int fd;        /* ordinary descriptor */
  int direct_fd; /* O_DIRECT descriptor of the same file, or -1 */
  bool writing;
  uint64_t limit; /* bytes per batch */
  /* Reading: called with every piece of each batch once it has arrived (the checksum, or
   * each page against its expected hash), while the worker moves the next batch; or NULL. */
  img_io_arrived_fn *arrived;
  void *arrived_arg;
  struct img_io_batch batch[2];
  int cur;            /* the batch being filled */
  bool busy;          /* the other batch is with the worker (or done but not yet seen) */
  int err;            /* errno of the first failed batch: nothing moves after it */
  uint64_t failed_at; /* its file offset */
  _Atomic uint64_t moved;

  /* Worker thread; without one (pthread_create failed) batches move synchronously. */
  pthread_t thread;
  bool threaded;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int job; /* batch index handed to the worker, -1 none */
  bool quit;

  bool populate; /* reading: prefault destinations as they are added */

  /* Used by whoever moves batches (the worker). */
  bool hints; /* sync_file_range / fadvise work on this file */
  uint64_t kicked, settled, ahead;
};

/* Sets up the transfer state for file `fd` (and `direct_fd`, which may be -1), batches of
 * `limit` bytes (a multiple of 4096, at most IMG_IO_BATCH), the first at `offset`. Starts
 * the worker. Returns -1 only without memory for the state. */
int img_io_open(struct img_io **io, int fd, int direct_fd, bool writing, uint64_t limit,
                uint64_t offset);

/* Starts over at `offset` with batches of `limit` bytes and an empty state (the previous
 * work must be finished). */
void img_io_restart(struct img_io *io, uint64_t limit, uint64_t offset);

/* Stops the worker and frees everything (pending data is dropped: call finish first). */
void img_io_close(struct img_io *io);

/* Adds [base, base+len) at the current end; full batches go to the worker. Errors of
 * earlier batches are reported here or by finish (errno, io->failed_at). */
int img_io_add(struct img_io *io, void *base, uint64_t len, uint64_t first_page);

/* Moves everything added so far and waits for it (reading: the checksum is then complete). */
int img_io_finish(struct img_io *io);

/* Where the next added byte goes; and moving that place (pending data goes first). */
uint64_t img_io_tell(const struct img_io *io);
int img_io_seek(struct img_io *io, uint64_t offset);

/* Bytes that fit in the current batch before it is moved, and which of the two batches
 * that is (0 or 1: for callers that read into a buffer of their own per batch). */
uint64_t img_io_room(const struct img_io *io);
int img_io_slot(const struct img_io *io);

/* Opens `name` in `dirfd` again with O_DIRECT (plus `flags`), if the file system allows and
 * the environment does not say MANA_IMAGE_DIRECT=0; -1 otherwise. Checks it is the same file
 * as `fd`. */
int img_io_open_direct(int dirfd, const char *name, int flags, int fd);

#endif
