/* Descriptors are kernel state both halves share; these helpers read one the application
 * holds and put one back at its old number before the restarted MPI opens anything. */
#define _GNU_SOURCE
#include "app_fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "mana/fail.h"

int mana_fd_info(int fd, int32_t *flags, int64_t *pos)
{
  char name[64], line[256];
  snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(name, "r");
  if (!f)
    return -1;
  *flags = 0;
  *pos = 0;
  while (fgets(line, sizeof(line), f)) {
    long long v;
    unsigned long long octal;
    if (sscanf(line, "pos: %lld", &v) == 1)
      *pos = v;
    else if (sscanf(line, "flags: %llo", &octal) == 1)
      *flags = (int32_t)octal;
  }
  fclose(f);
  return 0;
}

/* Moves whatever the launcher left on `fd` to a free number, keeping PMI_FD accurate. */
static int vacate(int fd, char *err, size_t errlen)
{
  if (fcntl(fd, F_GETFD) == -1)
    return 0;
  int moved = fcntl(fd, F_DUPFD, 64);
  if (moved < 0) {
    return mana_fail(err, errlen, errno, "cannot move descriptor %d out of the way", fd);
  }
  const char *pmi = getenv("PMI_FD");
  if (pmi && atoi(pmi) == fd) {
    char v[16];
    snprintf(v, sizeof(v), "%d", moved);
    setenv("PMI_FD", v, 1);
  }
  close(fd);
  return 0;
}

int mana_fd_place(int fd, int at, int32_t flags, int64_t pos, const char *what, char *err,
                  size_t errlen)
{
  if (fd != at) {
    if (vacate(at, err, errlen) != 0) {
      close(fd);
      return -1;
    }
    if (dup3(fd, at, flags & O_CLOEXEC) < 0) {
      mana_fail(err, errlen, errno, "cannot place %s at descriptor %d", what, at);
      close(fd);
      return -1;
    }
    close(fd);
  }
  if (pos >= 0 && !(flags & O_APPEND) && lseek(at, pos, SEEK_SET) != pos) {
    return mana_fail(err, errlen, errno, "cannot seek %s to offset %lld", what, (long long)pos);
  }
  return 0;
}

int mana_fd_write_all(int fd, const char *data, uint64_t bytes)
{
  for (uint64_t put = 0; put < bytes;) {
    ssize_t w = write(fd, data + put, bytes - put);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    put += (uint64_t)w;
  }
  return 0;
}

int mana_app_anon_fds(uint64_t kind, int (*fn)(int fd, int dup_of, char *err, size_t errlen),
                      char *err, size_t errlen)
{
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return mana_fail(err, errlen, errno, "cannot list /proc/self/fd");
  int *firsts = NULL, rc = 0;
  size_t n_firsts = 0, cap = 0;
  pid_t self = getpid();
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir)) != NULL) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(dir) || (mana_app_anon_identity(fd) & 0xff) != kind ||
        !mana_app_anon_fd_made(fd))
      continue;
    int dup_of = -1;
    for (size_t i = 0; i < n_firsts && dup_of < 0; i++)
      if (syscall(SYS_kcmp, self, self, KCMP_FILE, firsts[i], fd) == 0)
        dup_of = firsts[i];
    if (dup_of < 0) {
      if (n_firsts == cap) {
        cap = cap ? 2 * cap : 8;
        int *more = realloc(firsts, cap * sizeof(*more));
        if (!more) {
          rc = mana_fail(err, errlen, ENOMEM, "cannot list /proc/self/fd");
          break;
        }
        firsts = more;
      }
      firsts[n_firsts++] = fd;
    }
    rc = fn(fd, dup_of, err, errlen) ? -1 : 0;
  }
  free(firsts);
  closedir(dir);
  return rc;
}

int mana_room_for(void **arr, size_t *cap, size_t n, size_t size)
{
  if (n < *cap)
    return 0;
  size_t more = *cap ? 2 * *cap : 8;
  void *bigger = realloc(*arr, more * size);
  if (!bigger)
    return -1;
  *arr = bigger;
  *cap = more;
  return 0;
}

int mana_fd_info_field(int fd, const char *name, const char *format, void *out)
{
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t len = strlen(name);
  int found = 0;
  while (!found && fgets(line, sizeof(line), f))
    found = strncmp(line, name, len) == 0 && line[len] == ':' &&
            sscanf(line + len + 1, format, out) == 1;
  fclose(f);
  return found ? 0 : -1;
}
