/* Memory the application made with memfd_create: a file with no path, held through a
 * descriptor, through shared mappings, or both.  Programs map one twice back to back for a
 * ring buffer whose records wrap without a copy, share one between threads' views, or keep
 * scratch data in one.  Restored as the memory's private copies, the two views of a ring were
 * two memories (a record wrapping past the end was missing at the start), and the descriptor
 * was gone: the restarted program's reads and writes of it failed, or reached whatever the
 * lower half had opened at that number.
 *
 * Which memfds are the application's is known from where they were made (memfd_create is
 * trapped from upper-half code, app_fd_origin.c); a shared mapping of one in the upper half is
 * the application's in any case.  A checkpoint records, per memfd: its name, size, seals and
 * page size, each descriptor (number, flags, offset, and which of them share one open file
 * description), each mapped range (address, offset, protection), and the file's content, read
 * through a descriptor when the readable ranges do not cover the whole file (else the ranges'
 * pages in the image are the content).  A restart makes a memfd of that name and size, fills
 * it, maps every range over its restored copy, puts the descriptors back and seals it again.
 * Its content, like the unlinked files', is copied when the checkpoint captures, up to
 * MANA_MEMFD_MAX bytes per rank; more fails the checkpoint, naming the memfd. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "upper_mappings.h"

#define MANA_MEMFD_MAX (1ull << 30)
#define MEMFD_PREFIX "/memfd:"
#define DELETED " (deleted)"
#define NAME_MAX_BYTES 256 /* memfd_create takes at most 249 */
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26 /* <linux/memfd.h>, which clashes with <sys/mman.h> */
#endif

/* A blob: this record, n_fds descriptors, n_maps ranges, then `content` bytes of the file from
 * its start (0: the ranges' restored copies hold it). */
struct memfd_record {
  uint64_t size;
  uint64_t content;
  uint32_t n_fds, n_maps;
  int32_t seals;       /* F_GET_SEALS; 0 when no descriptor was there to ask */
  uint32_t huge_shift; /* log2 of its hugetlbfs page size; 0 for ordinary memory */
  char name[NAME_MAX_BYTES];
};

struct memfd_fd {
  int32_t fd, flags;
  int64_t pos;
  int32_t dup_of; /* -1, or the index of an earlier descriptor of one open file description */
  uint32_t reserved;
};

struct memfd_map {
  uint64_t start, end, offset;
  uint32_t prot, reserved;
};

struct memfd_object {
  uint64_t dev, ino; /* as /proc/self/maps gives the device: major << 32 | minor */
  struct memfd_record rec;
  struct memfd_fd *fds;
  struct memfd_map *maps;
  char *content;
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct memfd_object *objects;
static size_t n_objects;

static void forget(void)
{
  for (size_t i = 0; i < n_objects; i++) {
    free(objects[i].fds);
    free(objects[i].maps);
    free(objects[i].content);
  }
  free(objects);
  objects = NULL;
  n_objects = 0;
}

/* 1 with the memfd's name when path is how /proc names one ("/memfd:NAME (deleted)"). */
static int memfd_name(const char *path, char *name, size_t len)
{
  size_t n = strlen(path), p = strlen(MEMFD_PREFIX), d = strlen(DELETED);
  if (n < p + d || strncmp(path, MEMFD_PREFIX, p) != 0 || strcmp(path + n - d, DELETED) != 0 ||
      n - p - d >= len)
    return 0;
  memcpy(name, path + p, n - p - d);
  name[n - p - d] = '\0';
  return 1;
}

static struct memfd_object *object_for(uint64_t dev, uint64_t ino, const char *name)
{
  for (size_t i = 0; i < n_objects; i++)
    if (objects[i].dev == dev && objects[i].ino == ino)
      return &objects[i];
  struct memfd_object *more = realloc(objects, (n_objects + 1) * sizeof(*more));
  if (!more)
    return NULL;
  objects = more;
  struct memfd_object *o = &objects[n_objects++];
  memset(o, 0, sizeof(*o));
  o->dev = dev;
  o->ino = ino;
  snprintf(o->rec.name, sizeof(o->rec.name), "%s", name);
  return o;
}

static int note_fd(int fd, char *err, size_t errlen)
{
  char link[64], path[PATH_MAX], name[NAME_MAX_BYTES];
  struct stat st;
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof(path) - 1);
  if (n <= 0)
    return 0;
  path[n] = '\0';
  if (!memfd_name(path, name, sizeof(name)) || fstat(fd, &st) != 0 ||
      !mana_app_fd_made((uint64_t)st.st_dev, (uint64_t)st.st_ino))
    return 0;
  uint64_t dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
  struct memfd_object *o = object_for(dev, (uint64_t)st.st_ino, name);
  struct memfd_fd *more = o ? realloc(o->fds, (o->rec.n_fds + 1) * sizeof(*more)) : NULL;
  if (!more)
    return mana_fail(err, errlen, ENOMEM, "the application's memfd %s", name);
  o->fds = more;
  struct memfd_fd *f = &o->fds[o->rec.n_fds];
  *f = (struct memfd_fd){fd, 0, 0, -1, 0};
  if (mana_fd_info(fd, &f->flags, &f->pos) != 0)
    return mana_fail(err, errlen, errno, "cannot read /proc/self/fdinfo/%d", fd);
  pid_t self = getpid();
  for (uint32_t i = 0; i < o->rec.n_fds && f->dup_of < 0; i++)
    if (syscall(SYS_kcmp, self, self, KCMP_FILE, o->fds[i].fd, fd) == 0)
      f->dup_of = (int32_t)i;
  o->rec.n_fds++;
  o->rec.size = (uint64_t)st.st_size;
  int seals = fcntl(fd, F_GET_SEALS);
  o->rec.seals = seals > 0 ? seals : 0;
  struct statfs fs;
  if (fstatfs(fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC)
    o->rec.huge_shift = (uint32_t)__builtin_ctzl((unsigned long)fs.f_bsize);
  return 0;
}

static int note_map(const struct mana_mapping *m, void *why)
{
  char name[NAME_MAX_BYTES];
  if (!m->shared || !m->file_backed || !memfd_name(m->path, name, sizeof(name)))
    return 0;
  struct memfd_object *o = object_for(m->dev, m->inode, name);
  struct memfd_map *more = o ? realloc(o->maps, (o->rec.n_maps + 1) * sizeof(*more)) : NULL;
  if (!more)
    return mana_fail(why, 256, ENOMEM, "the application's memfd %s", name);
  o->maps = more;
  o->maps[o->rec.n_maps++] = (struct memfd_map){m->start, m->end, m->offset, m->prot, 0};
  return 0;
}

static int by_offset(const void *a, const void *b)
{
  const struct memfd_map *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* 1 when the readable ranges hold every byte of the file, so its content needs no copy. */
static int ranges_cover(struct memfd_object *o)
{
  struct memfd_map *sorted = malloc((o->rec.n_maps + 1) * sizeof(*sorted));
  if (!sorted)
    return 0;
  memcpy(sorted, o->maps, o->rec.n_maps * sizeof(*sorted));
  qsort(sorted, o->rec.n_maps, sizeof(*sorted), by_offset);
  uint64_t covered = 0;
  for (uint32_t i = 0; i < o->rec.n_maps; i++)
    if ((sorted[i].prot & PROT_READ) && sorted[i].offset <= covered &&
        sorted[i].offset + (sorted[i].end - sorted[i].start) > covered)
      covered = sorted[i].offset + (sorted[i].end - sorted[i].start);
  free(sorted);
  return covered >= o->rec.size;
}

static int read_content(struct memfd_object *o, uint64_t *total, char *err, size_t errlen)
{
  if (*total + o->rec.size > MANA_MEMFD_MAX)
    return mana_fail(err, errlen, 0,
                     "the application's memfd %s at descriptor %d holds %llu bytes that no "
                     "mapping shows: with the others more than the %llu mana copies into an "
                     "image",
                     o->rec.name, o->fds[0].fd, (unsigned long long)o->rec.size,
                     (unsigned long long)MANA_MEMFD_MAX);
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", o->fds[0].fd);
  int rd = open(link, O_RDONLY | O_CLOEXEC); /* the application's may be write-only */
  int e = rd < 0 ? errno : 0;
  o->content = malloc(o->rec.size ? o->rec.size : 1);
  if (!e && !o->content)
    e = ENOMEM;
  uint64_t got = 0;
  while (!e && got < o->rec.size) {
    ssize_t n = pread(rd, o->content + got, o->rec.size - got, (off_t)got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      e = n < 0 ? errno : EIO;
    else
      got += (uint64_t)n;
  }
  if (rd >= 0)
    close(rd);
  if (e)
    return mana_fail(err, errlen, e,
                     "cannot read the application's memfd %s at descriptor %d (%llu of %llu "
                     "bytes)",
                     o->rec.name, o->fds[0].fd, (unsigned long long)got,
                     (unsigned long long)o->rec.size);
  o->rec.content = o->rec.size;
  *total += o->rec.size;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  forget();
  err[0] = '\0';
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return mana_fail(err, errlen, errno, "cannot list /proc/self/fd");
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir)) != NULL)
    if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(dir))
      rc = note_fd(atoi(e->d_name), err, errlen);
  closedir(dir);
  if (rc != 0 || mana_upper_mappings_capture(note_map, err, errlen) != 0)
    return -1;
  uint64_t total = 0;
  for (size_t i = 0; i < n_objects; i++) {
    struct memfd_object *o = &objects[i];
    if (o->rec.n_fds == 0) { /* only mapped: what the ranges reach is the whole file */
      for (uint32_t k = 0; k < o->rec.n_maps; k++)
        if (o->maps[k].offset + (o->maps[k].end - o->maps[k].start) > o->rec.size)
          o->rec.size = o->maps[k].offset + (o->maps[k].end - o->maps[k].start);
    } else if (!ranges_cover(o) && read_content(o, &total, err, errlen) != 0) {
      return -1;
    }
  }
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_objects; i++) {
    const struct memfd_object *o = &objects[i];
    size_t fds = o->rec.n_fds * sizeof(*o->fds), maps = o->rec.n_maps * sizeof(*o->maps);
    size_t len = sizeof(o->rec) + fds + maps + o->rec.content;
    char *blob = malloc(len);
    if (!blob)
      return mana_fail(err, errlen, ENOMEM, "the application's memfd %s", o->rec.name);
    memcpy(blob, &o->rec, sizeof(o->rec));
    memcpy(blob + sizeof(o->rec), o->fds, fds);
    memcpy(blob + sizeof(o->rec) + fds, o->maps, maps);
    memcpy(blob + sizeof(o->rec) + fds + maps, o->content, o->rec.content);
    int rc = mana_image_add_blob(w, MANA_BLOB_MEMFD, blob, len);
    free(blob);
    if (rc != 0)
      return mana_fail(err, errlen, 0, "the application's memfd %s: %s", o->rec.name,
                       mana_image_writer_error(w));
  }
  return 0;
}

/* The new memfd's content: the recorded bytes, else each readable range's restored copy.
 * Through a mapping, which hugetlbfs needs (it has no write). */
static int fill(int fd, const struct memfd_record *rec, const struct memfd_map *maps,
                const char *content, char *err, size_t errlen)
{
  if (rec->size == 0)
    return 0;
  char *file = mmap(NULL, rec->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (file == MAP_FAILED)
    return mana_fail(err, errlen, errno, "cannot map the application's memfd %s (%llu bytes)",
                     rec->name, (unsigned long long)rec->size);
  memcpy(file, content, rec->content);
  for (uint32_t i = 0; rec->content == 0 && i < rec->n_maps; i++) {
    const struct memfd_map *m = &maps[i];
    if ((m->prot & PROT_READ) && m->offset < rec->size) {
      uint64_t len = m->end - m->start;
      if (len > rec->size - m->offset)
        len = rec->size - m->offset;
      memcpy(file + m->offset, (const void *)(uintptr_t)m->start, len);
    }
  }
  munmap(file, rec->size);
  return 0;
}

/* Every descriptor of the memfd `made`, at its number; `made` is above all of them. */
static int place_fds(int made, const struct memfd_record *rec, const struct memfd_fd *fds,
                     char *err, size_t errlen)
{
  for (uint32_t i = 0; i < rec->n_fds; i++) {
    const struct memfd_fd *f = &fds[i];
    char what[NAME_MAX_BYTES + 64], link[64];
    snprintf(what, sizeof(what), "the application's memfd %s at descriptor %d", rec->name, f->fd);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", made);
    int fd = f->dup_of >= 0 && (uint32_t)f->dup_of < i
                 ? fcntl(fds[f->dup_of].fd, F_DUPFD_CLOEXEC, 0)
                 : open(link, mana_fd_reopen_flags(f->flags));
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot open %s again", what);
    if (mana_fd_place(fd, f->fd, f->flags, f->pos, what, err, errlen) != 0)
      return -1;
    mana_app_fd_note(f->fd); /* the application's again, for the next checkpoint */
  }
  return 0;
}

static int restore_one(const struct memfd_record *rec, const struct memfd_fd *fds,
                       const struct memfd_map *maps, const char *content, char *err, size_t errlen)
{
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  if (rec->huge_shift)
    flags |= MFD_HUGETLB | (rec->huge_shift << MFD_HUGE_SHIFT);
  int first = memfd_create(rec->name, flags), top = 0;
  for (uint32_t i = 0; i < rec->n_fds; i++)
    top = fds[i].fd >= top ? fds[i].fd + 1 : top;
  int made = first >= 0 ? fcntl(first, F_DUPFD_CLOEXEC, top) : -1;
  if (first >= 0)
    close(first);
  if (made < 0 || ftruncate(made, (off_t)rec->size) != 0) {
    mana_fail(err, errlen, errno, "cannot make the application's memfd %s again (%llu bytes)",
              rec->name, (unsigned long long)rec->size);
    goto fail;
  }
  if (fill(made, rec, maps, content, err, errlen) != 0)
    goto fail;
  for (uint32_t i = 0; i < rec->n_maps; i++) {
    const struct memfd_map *m = &maps[i];
    if (mmap((void *)(uintptr_t)m->start, m->end - m->start, (int)m->prot, MAP_SHARED | MAP_FIXED,
             made, (off_t)m->offset) == MAP_FAILED) {
      mana_fail(err, errlen, errno, "cannot map the application's memfd %s again at %#llx",
                rec->name, (unsigned long long)m->start);
      goto fail;
    }
  }
  if (place_fds(made, rec, fds, err, errlen) != 0)
    goto fail;
  if (rec->seals && fcntl(made, F_ADD_SEALS, rec->seals) != 0) {
    mana_fail(err, errlen, errno, "cannot seal the application's memfd %s again (seals %#x)",
              rec->name, (unsigned)rec->seals);
    goto fail;
  }
  close(made);
  return 0;
fail:
  if (made >= 0)
    close(made);
  return -1;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_MEMFD, &at, &data, &len);) {
    const struct memfd_record *rec = data;
    size_t fds = len >= sizeof(*rec) ? rec->n_fds * sizeof(struct memfd_fd) : 0;
    size_t maps = len >= sizeof(*rec) ? rec->n_maps * sizeof(struct memfd_map) : 0;
    if (len < sizeof(*rec) || rec->n_fds > 65536 || rec->n_maps > 65536 ||
        len != sizeof(*rec) + fds + maps + rec->content || rec->content > rec->size ||
        memchr(rec->name, 0, sizeof(rec->name)) == NULL)
      return mana_fail(err, errlen, 0, "a memfd's record in the image is malformed");
    const char *p = (const char *)(rec + 1);
    if (restore_one(rec, (const struct memfd_fd *)p, (const struct memfd_map *)(p + fds),
                    p + fds + maps, err, errlen) != 0)
      return -1;
  }
  return 0;
}

const struct mana_state_ops mana_state_memfd = {"memfds", dump, restore, capture, NULL};
