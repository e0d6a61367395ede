/* coord_store_sweep: generations that can never be committed (see coord_store_sweep.h). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH/FTW_PHYS */
#include "coord_store_sweep.h"
#include "coord_layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "mana/fail.h"

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void)st;
  (void)ftw;
  if (type == FTW_DP)
    return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
  return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

int store_remove_tree(const char *path)
{
  return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool has_manifest(const char *gen_dir)
{
  char path[2 * PATH_MAX];

  snprintf(path, sizeof(path), "%s/" STORE_MANIFEST_FILE, gen_dir);
  return access(path, F_OK) == 0;
}

static bool is_leftover(const char *dir, const char *name, uint64_t keep)
{
  char path[PATH_MAX + 300];
  uint64_t gen;

  if (strncmp(name, STORE_ABORTED_PREFIX, strlen(STORE_ABORTED_PREFIX)) == 0)
    return true;
  if (!store_gen_dir_number(name, &gen) || gen == keep)
    return false;
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return !has_manifest(path);
}

int store_discard_gen(const char *dir, uint64_t gen, char *err, size_t errlen)
{
  char path[PATH_MAX + 32], away[PATH_MAX + 64];

  store_gen_dir(dir, gen, path, sizeof(path));
  snprintf(away, sizeof(away), "%s/" STORE_ABORTED_PREFIX "%06" PRIu64 "-%d", dir, gen,
           (int)getpid());
  if (rename(path, away) != 0) {
    if (errno == ENOENT)
      return 1;
    return mana_fail(err, errlen, errno, "cannot move %s away", path);
  }
  /* A rank that opened a file just before the rename may still create it: whatever is left
   * is removed at the next sweep. */
  if (store_remove_tree(away) != 0) {
    return mana_fail(err, errlen, errno, "cannot remove %s", away);
  }
  return 0;
}

/* Removes one leftover; 0, 1 when another process had removed it already, or -1 with errno. */
static int remove_leftover(const char *dir, const char *name)
{
  char path[PATH_MAX + 300], err[2 * PATH_MAX];
  uint64_t gen;

  if (store_gen_dir_number(name, &gen))
    return store_discard_gen(dir, gen, err, sizeof(err));
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  if (store_remove_tree(path) == 0)
    return 0;
  return errno == ENOENT ? 1 : -1;
}

void store_sweep_incomplete(const char *dir, uint64_t keep, store_sweep_note note, void *arg)
{
  DIR *d = opendir(dir);
  struct dirent *e;

  if (!d)
    return;
  /* An entry renamed during the walk may be seen again under its new name: then it is gone
   * already (1), and nothing is said of it. */
  while ((e = readdir(d))) {
    char path[PATH_MAX + 300];
    int rc;

    if (!is_leftover(dir, e->d_name, keep))
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    rc = remove_leftover(dir, e->d_name);
    if (note && rc != 1)
      note(arg, path, rc == 0 ? 0 : errno);
  }
  closedir(d);
}

int store_sweep_orphaned(const char *dir, store_sweep_note note, void *arg)
{
  char path[PATH_MAX + 32], err[PATH_MAX + 64];
  uint64_t latest;
  int fd, swept = 0;

  snprintf(path, sizeof(path), "%s/" STORE_META_DIR "/" STORE_LOCK_FILE, dir);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  /* Held: a coordinator serves DIR and sweeps for itself.  Not held: nobody can commit
   * while this process has it, so what has no MANIFEST now never will. */
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && store_read_latest(dir, &latest, err, sizeof(err)) == 0) {
    store_sweep_incomplete(dir, latest, note, arg);
    swept = 1;
  }
  close(fd); /* and with it the lock */
  return swept;
}
