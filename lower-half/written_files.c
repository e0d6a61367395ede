/* Which regular files the application has opened for writing, kept or closed since: the
 * files whose growth after a checkpoint a restart takes back (state_written_files.c).  A
 * descriptor says nothing once it is closed, and programs often open their log for each
 * record (stdio's "a", Fortran's position='append') and close it again, so the seccomp filter
 * traps the opens that ask for writing from upper-half code (sigsys.c), and the handler makes
 * the call and notes the file by device and inode with its absolute path (read back from
 * /proc/self/fd), in a ring of the last MANA_WRITTEN_FILES different files. */
#define _GNU_SOURCE
#include "written_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"

#define MANA_WRITTEN_FILES 1024
#define PATH_BYTES 1024 /* a longer path is not noted */

static struct {
  uint64_t dev, ino; /* ino 0: a free entry */
  char path[PATH_BYTES];
} files[MANA_WRITTEN_FILES];
static uint32_t next;

static int noted(uint64_t dev, uint64_t ino)
{
  for (uint32_t i = 0; i < MANA_WRITTEN_FILES; i++)
    if (__atomic_load_n(&files[i].ino, __ATOMIC_ACQUIRE) == ino && files[i].dev == dev)
      return 1;
  return 0;
}

/* The entry's path is written before its inode is published; a reader runs only while the
 * application's threads are parked (none is inside the handler then). */
static void note_raw(uint64_t dev, uint64_t ino, const char *path, long len)
{
  if (ino == 0 || len <= 0 || len >= PATH_BYTES || path[0] != '/' || noted(dev, ino))
    return;
  uint32_t at = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MANA_WRITTEN_FILES;
  __atomic_store_n(&files[at].ino, 0, __ATOMIC_RELEASE);
  for (long i = 0; i < len; i++)
    files[at].path[i] = path[i];
  files[at].path[len] = '\0';
  files[at].dev = dev;
  __atomic_store_n(&files[at].ino, ino, __ATOMIC_RELEASE);
}

void mana_written_files_note(uint64_t dev, uint64_t ino, const char *path)
{
  long len = 0;
  while (len < PATH_BYTES && path[len])
    len++;
  note_raw(dev, ino, path, len);
}

static void note_fd(long fd)
{
  struct stat st;
  if (mana_raw_syscall4(SYS_fstat, fd, (long)&st, 0, 0) != 0 || !S_ISREG(st.st_mode))
    return;
  char link[32] = "/proc/self/fd/", digits[12];
  int n = 0, at = 14;
  for (long v = fd; n == 0 || v > 0; v /= 10)
    digits[n++] = (char)('0' + v % 10);
  while (n > 0)
    link[at++] = digits[--n];
  link[at] = '\0';
  char path[PATH_BYTES];
  long len = mana_raw_syscall4(SYS_readlink, (long)link, (long)path, sizeof(path) - 1, 0);
  static const char deleted[] = " (deleted)"; /* O_TMPFILE, or removed already */
  long dlen = (long)sizeof(deleted) - 1, same = 0;
  for (long i = 0; len >= dlen && i < dlen; i++)
    same += path[len - dlen + i] == deleted[i];
  if (same == dlen)
    return;
  note_raw((uint64_t)st.st_dev, (uint64_t)st.st_ino, path, len);
}

long mana_written_files_open(long nr, const long args[6])
{
  long fd = mana_raw_syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
  if (fd >= 0)
    note_fd(fd);
  return fd;
}

int mana_written_files_each(int (*fn)(uint64_t dev, uint64_t ino, const char *path, void *arg),
                            void *arg)
{
  for (uint32_t i = 0; i < MANA_WRITTEN_FILES; i++) {
    uint64_t ino = __atomic_load_n(&files[i].ino, __ATOMIC_ACQUIRE);
    int rc = ino ? fn(files[i].dev, ino, files[i].path, arg) : 0;
    if (rc != 0)
      return rc;
  }
  return 0;
}
