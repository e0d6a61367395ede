/* Descriptors are kernel state both halves share; these helpers read one the application
 * holds and put one back at its old number before the restarted MPI opens anything. */
#define _GNU_SOURCE
#include "app_fds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
