/* Open regular files and directories of the application.  File descriptors are kernel state
 * shared by both halves; at checkpoint the lower half's own are sockets, pipes, shared memory
 * (removed once mapped), the image being written and the directories of the checkpoints, so
 * the other regular files are the application's (POSIX shared memory in /dev/shm among them,
 * but mana's), and so are its directories (opendir, or a descriptor for openat) and
 * /dev/null, /dev/zero, /dev/full and /dev/(u)random past the standard streams.
 * They are reopened at restart by path, with their flags and offsets (a directory's is where
 * its reading stands), at their old numbers, before the new MPI opens anything (a descriptor
 * inherited from the launcher that sits on one of those numbers, such as PMI_FD, is moved out
 * of the way first).  Files the application has removed are state_unlinked.c's. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app_fds.h"
#include "coord_client.h"
#include "coord_layout.h"
#include "image.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "mana/fail.h"

struct saved_file {
  int32_t fd, flags;
  int64_t pos;
  char path[PATH_MAX];
};

/* Devices that hold no state and that anyone may open again: a program keeps /dev/null open
 * to write into, /dev/urandom to read seeds from.  Standard streams stay the launcher's. */
static int is_stateless_device(int fd, const struct stat *st, const char *path)
{
  static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                        "/dev/urandom"};
  if (fd <= 2 || !S_ISCHR(st->st_mode))
    return 0;
  for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
    if (strcmp(path, devices[i]) == 0)
      return 1;
  return 0;
}

/* mana's own directories: the checkpoint directory and everything in it, and any generation
 * directory (a restart reads its images through one, a local checkpoint writes into one).  A
 * restart from a later generation would otherwise open an older one again, maybe pruned. */
int mana_is_mana_path(const char *path)
{
  const char *ckptdir = getenv(COORD_ENV_CKPTDIR);
  size_t n = ckptdir ? strlen(ckptdir) : 0;
  while (n > 1 && ckptdir[n - 1] == '/')
    n--;
  if (n && strncmp(path, ckptdir, n) == 0 && (path[n] == '\0' || path[n] == '/'))
    return 1;
  const char *base = strrchr(path, '/');
  uint64_t gen;
  return base && store_gen_dir_number(base + 1, &gen);
}

static int is_application_file(int fd, char *path, size_t pathlen)
{
  char link[64];
  struct stat st;
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, pathlen - 1);
  if (n <= 0 || fstat(fd, &st) != 0)
    return 0;
  path[n] = '\0';
  if (is_stateless_device(fd, &st, path))
    return 1;
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return 0;
  /* MPI's files in /dev/shm are removed once mapped, and mana's are named "mana-": the others
   * are the application's POSIX shared memory, which state_file_maps.c makes again at restart
   * when it maps them (before the descriptors come back). */
  if (path[0] != '/' || strncmp(path, "/dev/shm/mana-", 14) == 0 ||
      strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/sys/", 5) == 0 ||
      strstr(path, " (deleted)"))
    return 0;
  /* Directories of the kernel's file systems are the libraries' (UCX reads /sys), or a device
   * directory's; those of the checkpoints are mana's. */
  if (S_ISDIR(st.st_mode) && (strcmp(path, "/proc") == 0 || strcmp(path, "/sys") == 0 ||
                              strncmp(path, "/dev", 4) == 0 || mana_is_mana_path(path)))
    return 0;
  /* mana's own images and manifests are never the application's. */
  return strstr(path, ".img.tmp") == NULL;
}

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct saved_file *saved;
static size_t n_saved, saved_cap;

static int capture(char *err, size_t errlen)
{
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) {
    return mana_fail(err, errlen, errno, "cannot list /proc/self/fd");
  }
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(dir))
      continue;
    if (n == saved_cap) {
      size_t cap = saved_cap ? 2 * saved_cap : 16;
      struct saved_file *bigger = realloc(saved, cap * sizeof(*saved));
      if (!bigger) {
        closedir(dir);
        return mana_fail(err, errlen, ENOMEM, "cannot list the application's open files");
      }
      saved = bigger;
      saved_cap = cap;
    }
    struct saved_file *s = &saved[n];
    if (!is_application_file(fd, s->path, sizeof(s->path)) ||
        mana_fd_info(fd, &s->flags, &s->pos) != 0)
      continue;
    s->fd = fd;
    n++;
  }
  closedir(dir);
  n_saved = n;
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  static const char none;
  const void *table = n_saved ? (const void *)saved : &none;
  if (mana_image_add_blob(w, MANA_BLOB_FILES, table, n_saved * sizeof(saved[0])) != 0) {
    return mana_fail(err, errlen, 0, "open files: %s", mana_image_writer_error(w));
  }
  return 0;
}

/* A directory is read to its end before it is sought to where the application's reading
 * stood, as its descriptor had been: on ext4, a new descriptor sought straight to the end of
 * a directory and read there (glibc's next readdir once its buffer is used up) then reads
 * nothing at all after a rewinddir (dir_handles found every later pass of its stream empty). */
static void read_through(int fd)
{
  char buf[32768];
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
    return;
  while (syscall(SYS_getdents64, fd, buf, sizeof(buf)) > 0)
    ;
}

static int reopen(const struct saved_file *s, char *err, size_t errlen)
{
  int fd = open(s->path, mana_fd_reopen_flags(s->flags));
  if (fd < 0) {
    return mana_fail(err, errlen, errno,
                     "cannot reopen the application's file %s (descriptor %d), which it had "
                     "open at this checkpoint",
                     s->path, s->fd);
  }
  read_through(fd);
  return mana_fd_place(fd, s->fd, s->flags, s->pos, s->path, err, errlen);
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_file *saved;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_FILES, (const void **)&saved, &len) != 0 ||
      len % sizeof(*saved) != 0) {
    return mana_fail(err, errlen, 0, "open-file table missing or malformed in the image");
  }
  for (size_t i = 0; i < len / sizeof(*saved); i++)
    if (reopen(&saved[i], err, errlen) != 0)
      return -1;
  return 0;
}

const struct mana_state_ops mana_state_files = {"open files", dump, restore, capture, NULL};
