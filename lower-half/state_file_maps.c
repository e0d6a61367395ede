/* Files the application maps shared (mmap of a regular file with MAP_SHARED): its stores go to
 * the file, where a later read or another process sees them.  The image holds their pages like
 * any memory (state_memory.c), but restored they were private copies: whatever the
 * application stored after a restart never reached the file.  So a restart maps each such
 * range from its file again, at its address, with its protection and offset, over the copy.
 * The file is the truth, as for open files (state_files.c); one that is gone fails the
 * restart, naming it.
 *
 * The application's POSIX shared memory (shm_open: a named file in /dev/shm, mapped shared by
 * the ranks of a node) is the other way round: memory, whose content only the image keeps
 * (a restart on another node, or after a reboot, finds no file), and which the ranks of a
 * node must share again.  A restart makes the file when it is missing, at least as large as
 * it was, writes the range's content from the restored copy into it and maps it shared over
 * the copy.  Every rank that maps a range writes the same bytes (the images are written with
 * every rank parked, and a checkpoint with writable shared memory is never forked,
 * state_memory.c), and no rank runs the application again before every rank has restored its
 * state (the restarted MPI_Init waits for them all).  MPI's shared memory is not the
 * application's: its files in /dev/shm are removed as soon as they are mapped, and are
 * mapped outside the window but for shared RMA windows (window_shm.c, "mana-" files, removed
 * too).  Removed files and memfds keep the private copy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "upper_mappings.h"

struct file_map {
  uint64_t start, end, offset;
  uint32_t prot;
  uint32_t shm_mode; /* 0: a file; else POSIX shared memory: SHM_RECORD | its mode */
  uint64_t shm_size; /* the shared memory file's size */
  char path[PATH_MAX];
};

#define SHM_RECORD 0x80000000u
#define SHM_DIR "/dev/shm/"

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct file_map *maps;
static size_t n_maps, maps_cap;

/* 0: not the application's; 1: a file it maps shared; 2: its POSIX shared memory (st filled). */
static int application_file_map(const struct mana_mapping *m, struct stat *st)
{
  size_t len = strlen(m->path);
  if (!m->shared || !m->file_backed || m->path[0] != '/' ||
      (len > 10 && strcmp(m->path + len - 10, " (deleted)") == 0) || stat(m->path, st) != 0 ||
      !S_ISREG(st->st_mode))
    return 0;
  if (strncmp(m->path, SHM_DIR, strlen(SHM_DIR)) == 0)
    return strncmp(m->path + strlen(SHM_DIR), "mana-", 5) != 0 ? 2 : 0;
  return strncmp(m->path, "/dev/", 5) != 0 ? 1 : 0;
}

static int note_map(const struct mana_mapping *m, void *arg)
{
  char *err = arg;
  struct stat st;
  int kind = application_file_map(m, &st);
  if (!kind)
    return 0;
  if (n_maps == maps_cap) {
    size_t cap = maps_cap ? 2 * maps_cap : 8;
    struct file_map *bigger = realloc(maps, cap * sizeof(*maps));
    if (!bigger)
      return mana_fail(err, 256, ENOMEM, "shared file mappings");
    maps = bigger;
    maps_cap = cap;
  }
  struct file_map *f = &maps[n_maps++];
  memset(f, 0, sizeof(*f));
  *f = (struct file_map){m->start, m->end, m->offset, m->prot, 0, 0, ""};
  if (kind == 2) {
    f->shm_mode = SHM_RECORD | (uint32_t)(st.st_mode & 07777);
    f->shm_size = (uint64_t)st.st_size;
  }
  snprintf(f->path, sizeof(f->path), "%s", m->path);
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_maps = 0;
  char why[256] = "";
  int rc = mana_upper_mappings_each(note_map, why, err, errlen);
  if (rc != 0 && why[0])
    snprintf(err, errlen, "%s", why);
  return rc;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_maps; i++)
    if (mana_image_add_blob(w, MANA_BLOB_FILE_MAP, &maps[i], sizeof(maps[i])) != 0)
      return mana_fail(err, errlen, 0, "shared file mappings: %s", mana_image_writer_error(w));
  return 0;
}

/* POSIX shared memory: the file (made when missing, never shrunk) gets the range's content
 * from the restored private copy; an open descriptor, or -1 with err filled. */
static int refill_shared_memory(const struct file_map *f, char *err, size_t errlen)
{
  int fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, (mode_t)(f->shm_mode & 07777));
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    mana_fail(err, errlen, errno, "cannot make the application's shared memory %s again", f->path);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  uint64_t len = f->end - f->start, need = f->offset + len;
  if (need < f->shm_size)
    need = f->shm_size;
  if ((uint64_t)st.st_size < need && ftruncate(fd, (off_t)need) != 0) {
    mana_fail(err, errlen, errno, "cannot size the application's shared memory %s to %llu bytes",
              f->path, (unsigned long long)need);
    close(fd);
    return -1;
  }
  const char *copy = (const char *)(uintptr_t)f->start;
  for (uint64_t done = 0; (f->prot & PROT_READ) && done < len;) {
    ssize_t n = pwrite(fd, copy + done, len - done, (off_t)(f->offset + done));
    if (n <= 0) {
      mana_fail(err, errlen, n < 0 ? errno : EIO,
                "cannot write the content of the application's shared memory %s", f->path);
      close(fd);
      return -1;
    }
    done += (uint64_t)n;
  }
  return fd;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_FILE_MAP, &at, &data, &len);) {
    const struct file_map *f = data;
    if (len != sizeof(*f) || f->end <= f->start || memchr(f->path, 0, sizeof(f->path)) == NULL)
      return mana_fail(err, errlen, 0, "a shared file mapping's record in the image is malformed");
    int fd;
    if (f->shm_mode & SHM_RECORD) {
      if ((fd = refill_shared_memory(f, err, errlen)) < 0)
        return -1;
    } else if ((fd = open(f->path, ((f->prot & PROT_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC)) < 0) {
      return mana_fail(err, errlen, errno,
                       "cannot map the application's file %s again at %#llx (shared, offset %llu)",
                       f->path, (unsigned long long)f->start, (unsigned long long)f->offset);
    }
    void *at = mmap((void *)(uintptr_t)f->start, f->end - f->start, (int)f->prot,
                    MAP_SHARED | MAP_FIXED, fd, (off_t)f->offset);
    int e = errno;
    close(fd);
    if (at == MAP_FAILED)
      return mana_fail(err, errlen, e, "cannot map the application's file %s again at %#llx",
                       f->path, (unsigned long long)f->start);
  }
  return 0;
}

const struct mana_state_ops mana_state_file_maps = {"shared file mappings", dump, restore, capture,
                                                    NULL};
