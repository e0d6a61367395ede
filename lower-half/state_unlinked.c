/* Regular files the application keeps open after removing them: Fortran's scratch units
 * (OPEN(STATUS='SCRATCH') makes a file and removes it at once), tmpfile(), and the
 * open-then-unlink idiom of temporary files.  No path leads to them any more, so a restart
 * cannot reopen them as state_files.c does the others: their content goes into the image, one
 * blob per file, and a restart makes an unnamed file in the same directory (O_TMPFILE, else a
 * file removed as soon as it is made) with that content, at the old descriptor, with the old
 * flags and offset.  Descriptors of one file stay one file: a duplicate (one open file
 * description, by kcmp) comes back as a duplicate, another opening as another opening of the
 * new file.  The content is copied when the checkpoint captures (the application may write
 * the file as soon as it resumes, also while a forked writer writes the image), up to
 * MANA_UNLINKED_MAX bytes in all; more fails the checkpoint, naming the file.  Removed files in
 * /dev/shm are MPI's, not the application's, and stay out; memfds are state_memfd.c's. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

#define MANA_UNLINKED_MAX (1ull << 30)

/* A blob: this record, then `size` bytes of content. */
struct unlinked_file {
  int32_t fd, flags;
  int64_t pos;
  uint64_t size;   /* content bytes after the record; 0 for a record that refers */
  uint32_t mode;   /* permission bits */
  int32_t same_as; /* -1, or the descriptor of an earlier record of the same file */
  uint32_t shared; /* with same_as: 1 when the two are one open file description */
  uint32_t reserved;
  char dir[PATH_MAX]; /* where the file was, for the new one */
};

struct captured {
  struct unlinked_file *rec; /* malloc'd with its content */
  uint64_t dev, ino;
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct captured *files;
static size_t n_files, files_cap;

static void forget(void)
{
  for (size_t i = 0; i < n_files; i++)
    free(files[i].rec);
  n_files = 0;
}

/* 1 with the directory the file was in when `fd` is a removed regular file of the
 * application's. */
static int is_unlinked_file(int fd, const struct stat *st, char *dir, size_t len)
{
  static const char deleted[] = " (deleted)";
  char link[64], path[PATH_MAX + 16];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof(path) - 1);
  if (n <= 0 || !S_ISREG(st->st_mode))
    return 0;
  path[n] = '\0';
  size_t dl = sizeof(deleted) - 1;
  if (path[0] != '/' || (size_t)n <= dl || strcmp(path + n - dl, deleted) != 0 ||
      strncmp(path, "/dev/shm/", 9) == 0 || strncmp(path, "/memfd:", 7) == 0 ||
      strstr(path, ".img.tmp"))
    return 0;
  path[n - dl] = '\0';
  char *slash = strrchr(path, '/');
  *slash = '\0';
  const char *where = slash == path ? "/" : path;
  if (strlen(where) >= len)
    return 0;
  strcpy(dir, where);
  return 1;
}

static int read_content(int fd, struct unlinked_file *rec, char *err, size_t errlen)
{
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  int rd = open(link, O_RDONLY | O_CLOEXEC); /* the application's may be write-only */
  if (rd < 0)
    return mana_fail(err, errlen, errno,
                     "cannot read the application's removed file at "
                     "descriptor %d",
                     fd);
  char *data = (char *)(rec + 1);
  uint64_t got = 0;
  while (got < rec->size) {
    ssize_t n = pread(rd, data + got, rec->size - got, (off_t)got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(rd);
      return mana_fail(err, errlen, e,
                       "cannot read the application's removed file at "
                       "descriptor %d (%llu of %llu bytes)",
                       fd, (unsigned long long)got, (unsigned long long)rec->size);
    }
    got += (uint64_t)n;
  }
  close(rd);
  return 0;
}

/* The earlier record of the same file, or NULL. */
static const struct captured *same_file(const struct stat *st)
{
  for (size_t i = 0; i < n_files; i++)
    if (files[i].dev == st->st_dev && files[i].ino == st->st_ino)
      return &files[i];
  return NULL;
}

static int capture_one(int fd, const struct stat *st, const char *dir, uint64_t *total, char *err,
                       size_t errlen)
{
  const struct captured *first = same_file(st);
  uint64_t size = first ? 0 : (uint64_t)st->st_size;
  if (*total + size > MANA_UNLINKED_MAX)
    return mana_fail(err, errlen, 0,
                     "the application's removed file at descriptor %d (in %s) holds "
                     "%llu bytes: with the others more than the %llu mana copies "
                     "into an image",
                     fd, dir, (unsigned long long)size, (unsigned long long)MANA_UNLINKED_MAX);
  if (n_files == files_cap) {
    size_t cap = files_cap ? 2 * files_cap : 8;
    struct captured *bigger = realloc(files, cap * sizeof(*files));
    if (!bigger)
      return mana_fail(err, errlen, ENOMEM, "removed files");
    files = bigger;
    files_cap = cap;
  }
  struct unlinked_file *rec = calloc(1, sizeof(*rec) + size);
  if (!rec)
    return mana_fail(err, errlen, ENOMEM, "the application's removed file at descriptor %d", fd);
  rec->fd = fd;
  rec->size = size;
  rec->mode = st->st_mode & 07777;
  rec->same_as = first ? first->rec->fd : -1;
  pid_t self = getpid();
  rec->shared = first && syscall(SYS_kcmp, self, self, KCMP_FILE, first->rec->fd, fd) == 0;
  snprintf(rec->dir, sizeof(rec->dir), "%s", dir);
  if (mana_fd_info(fd, &rec->flags, &rec->pos) != 0 ||
      (!first && read_content(fd, rec, err, errlen) != 0)) {
    if (!err[0])
      mana_fail(err, errlen, errno, "cannot read /proc/self/fdinfo/%d", fd);
    free(rec);
    return -1;
  }
  files[n_files++] = (struct captured){rec, st->st_dev, st->st_ino};
  *total += size;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  forget();
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return mana_fail(err, errlen, errno, "cannot list /proc/self/fd");
  uint64_t total = 0;
  int rc = 0;
  struct dirent *e;
  err[0] = '\0';
  while (rc == 0 && (e = readdir(dir)) != NULL) {
    int fd = atoi(e->d_name);
    struct stat st;
    char where[PATH_MAX];
    if (e->d_name[0] == '.' || fd == dirfd(dir) || fstat(fd, &st) != 0 ||
        !is_unlinked_file(fd, &st, where, sizeof(where)))
      continue;
    rc = capture_one(fd, &st, where, &total, err, errlen);
  }
  closedir(dir);
  return rc;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_files; i++) {
    const struct unlinked_file *rec = files[i].rec;
    if (mana_image_add_blob(w, MANA_BLOB_UNLINKED_FILE, rec, sizeof(*rec) + rec->size) != 0)
      return mana_fail(err, errlen, 0, "removed files: %s", mana_image_writer_error(w));
  }
  return 0;
}

/* An unnamed file in `dir`, else in TMPDIR or /tmp (the directory may be gone): O_TMPFILE,
 * or where the file system has none, a file removed as soon as it is made. */
static int new_unnamed_file(const char *dir, uint32_t mode)
{
  const char *tmp = getenv("TMPDIR");
  const char *where[] = {dir, tmp && *tmp ? tmp : "/tmp", "/tmp"};
  for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
    int fd = open(where[i], O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd >= 0)
      return fd;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/.mana-unlinked-XXXXXX", where[i]);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0) {
      unlink(path);
      fchmod(fd, mode);
      return fd;
    }
  }
  return -1;
}

/* The descriptor `rec` describes, opened anew: a duplicate, another opening of an earlier
 * record's file, or a new file with the content. */
static int open_again(const struct unlinked_file *rec, char *err, size_t errlen)
{
  char link[64];
  int flags = mana_fd_reopen_flags(rec->flags);
  if (rec->same_as >= 0 && rec->shared)
    return fcntl(rec->same_as, F_DUPFD_CLOEXEC, 0);
  if (rec->same_as >= 0) {
    snprintf(link, sizeof(link), "/proc/self/fd/%d", rec->same_as);
    return open(link, flags);
  }
  int made = new_unnamed_file(rec->dir, rec->mode);
  if (made < 0 || mana_fd_write_all(made, (const char *)(rec + 1), rec->size) != 0) {
    mana_fail(err, errlen, errno,
              "cannot make the application's removed file of descriptor %d "
              "again (%llu bytes, in %s)",
              rec->fd, (unsigned long long)rec->size, rec->dir);
    if (made >= 0)
      close(made);
    return -2;
  }
  snprintf(link, sizeof(link), "/proc/self/fd/%d", made);
  int fd = open(link, flags); /* the application's flags, not O_RDWR */
  close(made);
  return fd;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_UNLINKED_FILE, &at, &data, &len);) {
    const struct unlinked_file *rec = data;
    if (len < sizeof(*rec) || len != sizeof(*rec) + rec->size)
      return mana_fail(err, errlen, 0, "a removed file's record in the image is malformed");
    char what[PATH_MAX + 64];
    snprintf(what, sizeof(what), "the removed file of descriptor %d (in %s)", rec->fd, rec->dir);
    int fd = open_again(rec, err, errlen);
    if (fd == -2)
      return -1;
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot open %s again", what);
    if (mana_fd_place(fd, rec->fd, rec->flags, rec->pos, what, err, errlen) != 0)
      return -1;
  }
  return 0;
}

const struct mana_state_ops mana_state_unlinked = {"removed open files", dump, restore, capture,
                                                   NULL};
