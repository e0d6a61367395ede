/* coord_store: the checkpoint directory (see coord_store.h). */
#include "coord_store.h"
#include "coord_store_sweep.h"
#include "coord_trust.h"

#include "coord_log.h"
#include "coord_net.h"
#include "coord_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "mana/fail.h"

/* ------------------------------------------------------------------------------------- */
/* Durable files                                                                         */
/* ------------------------------------------------------------------------------------- */

static int write_all(int fd, const char *data, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, data, len);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* A rename is durable only once the directory holding it is synced. */
static int sync_parent(const char *path)
{
  char dir[PATH_MAX];
  char *slash;
  int fd, rc;

  snprintf(dir, sizeof(dir), "%s", path);
  slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof(dir), ".");
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  rc = fsync(fd);
  close(fd);
  return rc;
}

int store_write_atomic(const char *path, const char *data, size_t len, mode_t mode, char *err,
                       size_t errlen)
{
  char tmp[PATH_MAX + 16];
  int fd;

  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return mana_fail(err, errlen, errno, "cannot create %s", tmp);
  if (fchmod(fd, mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    mana_fail(err, errlen, errno, "cannot write %s", tmp);
    close(fd);
    unlink(tmp);
    return -1;
  }
  if (close(fd) != 0) {
    mana_fail(err, errlen, errno, "cannot write %s", tmp);
    unlink(tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    mana_fail(err, errlen, errno, "cannot rename %s to %s", tmp, path);
    unlink(tmp);
    return -1;
  }
  if (sync_parent(path) != 0)
    return mana_fail(err, errlen, errno, "cannot sync the directory of %s", path);
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Opening and locking                                                                   */
/* ------------------------------------------------------------------------------------- */

int store_mkdirs(const char *path, mode_t mode, char *err, size_t errlen)
{
  char buf[PATH_MAX];
  struct stat st;

  if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
    return mana_fail(err, errlen, 0, "path too long: %s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return mana_fail(err, errlen, errno, "cannot create directory %s", buf);
    *p = '/';
  }
  if (mkdir(buf, mode) != 0 && errno != EEXIST)
    return mana_fail(err, errlen, errno, "cannot create directory %s", buf);
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return mana_fail(err, errlen, 0, "%s is not a directory", buf);
  return 0;
}

void store_meta_path(const struct coord_store *s, const char *name, char *out, size_t len)
{
  snprintf(out, len, "%s/%s", s->meta, name);
}

/* The metadata directory holds the secret: it must be private whatever DIR's mode is. */
static int make_meta_dir(struct coord_store *s, char *err, size_t errlen)
{
  struct stat st;

  if (mkdir(s->meta, 0700) != 0 && errno != EEXIST)
    return mana_fail(err, errlen, errno, "cannot create %s", s->meta);
  if (lstat(s->meta, &st) != 0 || !S_ISDIR(st.st_mode))
    return mana_fail(err, errlen, 0, "%s is not a directory", s->meta);
  if (st.st_uid != geteuid())
    return mana_fail(err, errlen, 0, "%s belongs to another user", s->meta);
  if ((st.st_mode & 077) && chmod(s->meta, 0700) != 0)
    return mana_fail(err, errlen, errno, "cannot make %s private", s->meta);
  return 0;
}

static void lock_holder(int fd, char *out, size_t len)
{
  ssize_t n = pread(fd, out, len - 1, 0);

  out[n > 0 ? n : 0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  if (!out[0])
    snprintf(out, len, "unknown");
}

static int take_lock(struct coord_store *s, int wait_ms, char *err, size_t errlen)
{
  char path[PATH_MAX + 8], holder[32];
  long long deadline = coord_now_ms() + wait_ms;

  store_meta_path(s, STORE_LOCK_FILE, path, sizeof(path));
  s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (s->lock_fd < 0)
    return mana_fail(err, errlen, errno, "cannot open %s", path);
  /* A coordinator that is exiting releases the lock within moments. */
  while (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || coord_now_ms() >= deadline) {
      lock_holder(s->lock_fd, holder, sizeof(holder));
      mana_fail(err, errlen, 0,
                "checkpoint directory %s is in use by another "
                "coordinator (pid %s)",
                s->dir, holder);
      close(s->lock_fd);
      s->lock_fd = -1;
      return -1;
    }
    nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000}, NULL);
  }
  store_record_pid(s);
  return 0;
}

void store_record_pid(const struct coord_store *s)
{
  char pid[32];
  int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

  /* only informative: it names the holder in the "in use" error of a second one */
  if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, pid, (size_t)n, 0) != n)
    coord_log("cannot record the pid in %s/" STORE_LOCK_FILE ": %s", s->meta, strerror(errno));
}

int store_open(struct coord_store *s, const char *dir, int lock_wait_ms, char *err, size_t errlen)
{
  memset(s, 0, sizeof(*s));
  s->lock_fd = -1;
  if (dir[0] != '/')
    return mana_fail(err, errlen, 0, "checkpoint directory must be absolute: %s", dir);
  if (snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir) ||
      snprintf(s->meta, sizeof(s->meta), "%s/" STORE_META_DIR, dir) >= (int)sizeof(s->meta))
    return mana_fail(err, errlen, 0, "checkpoint directory path too long: %s", dir);
  if (store_mkdirs(s->dir, 0700, err, errlen) || coord_trusted(s->dir, 1, 1, err, errlen) ||
      make_meta_dir(s, err, errlen))
    return -1;
  return take_lock(s, lock_wait_ms, err, errlen);
}

void store_close(struct coord_store *s)
{
  if (s->lock_fd >= 0)
    close(s->lock_fd);
  s->lock_fd = -1;
}

/* ------------------------------------------------------------------------------------- */
/* Generations                                                                           */
/* ------------------------------------------------------------------------------------- */

void store_gen_path(const struct coord_store *s, uint64_t gen, char *out, size_t len)
{
  store_gen_dir(s->dir, gen, out, len);
}

int store_latest(const struct coord_store *s, uint64_t *gen, char *err, size_t errlen)
{
  return store_read_latest(s->dir, gen, err, errlen) == 0 ? 0 : -1;
}

uint64_t store_newest_dir(const struct coord_store *s)
{
  DIR *d = opendir(s->dir);
  struct dirent *e;
  uint64_t newest = 0, gen;

  if (!d)
    return 0;
  while ((e = readdir(d)))
    if (store_gen_dir_number(e->d_name, &gen) && gen > newest)
      newest = gen;
  closedir(d);
  return newest;
}

static void log_removed(void *arg, const char *path, int err)
{
  (void)arg;
  if (err)
    coord_log("cannot remove the incomplete checkpoint %s: %s", path, strerror(err));
  else
    coord_log("removed the incomplete checkpoint %s", path);
}

void store_remove_incomplete(const struct coord_store *s, uint64_t keep)
{
  store_sweep_incomplete(s->dir, keep, log_removed, NULL);
}

int store_gen_create(const struct coord_store *s, uint64_t gen, char *err, size_t errlen)
{
  char path[PATH_MAX + 32];

  store_gen_path(s, gen, path, sizeof(path));
  if (mkdir(path, 0700) != 0)
    return mana_fail(err, errlen, errno, "cannot create %s", path);
  return 0;
}

int store_gen_remove(const struct coord_store *s, uint64_t gen, char *err, size_t errlen)
{
  return store_discard_gen(s->dir, gen, err, errlen) < 0 ? -1 : 0;
}

int store_check_image(const struct coord_store *s, uint64_t gen, const char *file, uint64_t bytes,
                      char *err, size_t errlen)
{
  char path[PATH_MAX + 200];
  struct stat st;
  int fd;

  store_gen_path(s, gen, path, sizeof(path));
  strncat(path, "/", sizeof(path) - strlen(path) - 1);
  strncat(path, file, sizeof(path) - strlen(path) - 1);
  /* open, not stat: on NFS, open revalidates what another node wrote */
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return mana_fail(err, errlen, errno, "image %s", path);
  if (fstat(fd, &st) != 0) {
    mana_fail(err, errlen, errno, "image %s", path);
    close(fd);
    return -1;
  }
  close(fd);
  if (!S_ISREG(st.st_mode))
    return mana_fail(err, errlen, 0, "image %s is not a regular file", path);
  if ((uint64_t)st.st_size != bytes)
    return mana_fail(err, errlen, 0, "image %s has %lld bytes, the rank reported %" PRIu64, path,
                     (long long)st.st_size, bytes);
  return 0;
}

int store_commit(const struct coord_store *s, uint64_t gen, const char *manifest, size_t len,
                 char *err, size_t errlen)
{
  char path[PATH_MAX + 32], number[32];
  int n;

  store_gen_path(s, gen, path, sizeof(path));
  strncat(path, "/" STORE_MANIFEST_FILE, sizeof(path) - strlen(path) - 1);
  if (store_write_atomic(path, manifest, len, 0600, err, errlen))
    return -1;
  snprintf(path, sizeof(path), "%s/" STORE_LATEST_FILE, s->dir);
  n = snprintf(number, sizeof(number), "%" PRIu64 "\n", gen);
  return store_write_atomic(path, number, (size_t)n, 0600, err, errlen);
}
