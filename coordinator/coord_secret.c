/* coord_secret: create, load and compare the job secret (see coord_secret.h). */
#include "coord_secret.h"
#include "coord_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mana/fail.h"

static bool is_lower_hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The file must be ours, regular, and private: anything else means the secret may have
 * leaked, and a leaked secret lets anyone kill or checkpoint the job. */
static int check_file(int fd, const char *path, char *err, size_t errlen)
{
  struct stat st;

  if (fstat(fd, &st) != 0)
    return mana_fail(err, errlen, errno, "cannot stat secret file %s", path);
  if (!S_ISREG(st.st_mode))
    return mana_fail(err, errlen, 0, "secret file %s is not a regular file", path);
  if (st.st_uid != geteuid())
    return mana_fail(err, errlen, 0, "secret file %s belongs to uid %u, not to this user", path,
                     (unsigned)st.st_uid);
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    return mana_fail(err, errlen, 0,
                     "refusing secret file %s: its mode %03o lets group or "
                     "others read it (chmod 600 %s)",
                     path, (unsigned)(st.st_mode & 0777), path);
  return 0;
}

static int read_secret(int fd, const char *path, char out[COORD_SECRET_HEX + 1], char *err,
                       size_t errlen)
{
  char buf[COORD_SECRET_HEX + 2];
  size_t got = 0;

  while (got < sizeof(buf)) {
    ssize_t n = read(fd, buf + got, sizeof(buf) - got);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return mana_fail(err, errlen, errno, "cannot read secret file %s", path);
    if (n == 0)
      break;
    got += (size_t)n;
  }
  /* exactly 64 hex digits, optionally followed by one newline */
  if (got == COORD_SECRET_HEX + 1 && buf[COORD_SECRET_HEX] == '\n')
    got--;
  if (got != COORD_SECRET_HEX)
    return mana_fail(err, errlen, 0, "secret file %s does not hold %d hex digits", path,
                     COORD_SECRET_HEX);
  for (size_t i = 0; i < COORD_SECRET_HEX; i++)
    if (!is_lower_hex(buf[i]))
      return mana_fail(err, errlen, 0, "secret file %s does not hold %d hex digits", path,
                       COORD_SECRET_HEX);
  memcpy(out, buf, COORD_SECRET_HEX);
  out[COORD_SECRET_HEX] = '\0';
  return 0;
}

int coord_secret_load(const char *path, char out[COORD_SECRET_HEX + 1], char *err, size_t errlen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int rc;

  if (fd < 0)
    return mana_fail(err, errlen, errno, "cannot open secret file %s", path);
  rc = check_file(fd, path, err, errlen);
  if (rc == 0)
    rc = read_secret(fd, path, out, err, errlen);
  close(fd);
  return rc;
}

static int random_bytes(unsigned char *buf, size_t len, char *err, size_t errlen)
{
  size_t got = 0;

  while (got < len) {
    ssize_t n = getrandom(buf + got, len - got, 0);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return mana_fail(err, errlen, errno, "getrandom failed");
    got += (size_t)n;
  }
  return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, buf, len);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int coord_secret_create(const char *path, char out[COORD_SECRET_HEX + 1], char *err, size_t errlen)
{
  static const char hex[] = "0123456789abcdef";
  unsigned char raw[COORD_SECRET_BYTES];
  char text[COORD_SECRET_HEX + 1];
  int fd;

  if (random_bytes(raw, sizeof(raw), err, errlen))
    return -1;
  for (size_t i = 0; i < COORD_SECRET_BYTES; i++) {
    text[2 * i] = hex[raw[i] >> 4];
    text[2 * i + 1] = hex[raw[i] & 15];
  }
  text[COORD_SECRET_HEX] = '\n';

  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return mana_fail(err, errlen, errno, "cannot create secret file %s", path);
  /* umask cannot widen 0600, but a restrictive one could narrow it to unreadable */
  if (fchmod(fd, 0600) != 0 || write_all(fd, text, sizeof(text)) != 0 || fsync(fd) != 0) {
    mana_fail(err, errlen, errno, "cannot write secret file %s", path);
    close(fd);
    unlink(path);
    return -1;
  }
  close(fd);
  memcpy(out, text, COORD_SECRET_HEX);
  out[COORD_SECRET_HEX] = '\0';
  return 0;
}

int coord_secret_load_or_create(const char *path, char out[COORD_SECRET_HEX + 1], bool *created,
                                char *err, size_t errlen)
{
  *created = false;
  if (access(path, F_OK) == 0 || errno != ENOENT)
    return coord_secret_load(path, out, err, errlen);
  if (coord_secret_create(path, out, err, errlen) == 0) {
    *created = true;
    return 0;
  }
  /* someone created it between access() and open(O_EXCL): use theirs */
  if (errno == EEXIST || access(path, F_OK) == 0)
    return coord_secret_load(path, out, err, errlen);
  return -1;
}

bool coord_secret_equal(const char *expected, const char *given)
{
  size_t n = strlen(expected);
  size_t given_len = strnlen(given, n + 1);
  unsigned char diff = given_len != n;

  for (size_t i = 0; i < n; i++) {
    /* reading past the end of a short 'given' is avoided by the index clamp */
    unsigned char g = i < given_len ? (unsigned char)given[i] : 0;

    diff |= (unsigned char)(g ^ (unsigned char)expected[i]);
  }
  return diff == 0;
}
