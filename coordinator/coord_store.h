/* coord_store: the checkpoint directory on disk (its layout: coord_layout.h), owned by one
 * coordinator at a time.
 *
 * Every file that readers rely on (port file, MANIFEST, LATEST) is replaced atomically:
 * written to a temporary name, fsync'ed, renamed, and the directory fsync'ed.
 */
#ifndef MANA_COORD_STORE_H
#define MANA_COORD_STORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord_layout.h"

struct coord_store {
  char dir[PATH_MAX];  /* the checkpoint directory, absolute */
  char meta[PATH_MAX]; /* dir/.mana */
  int lock_fd;
};

/* Creates DIR (and its parents) and DIR/.mana as needed and takes the lock, waiting up to
 * lock_wait_ms for a coordinator that is shutting down. Returns 0 or -1 with err (another
 * live coordinator names its pid). */
int store_open(struct coord_store *s, const char *dir, int lock_wait_ms, char *err, size_t errlen);
/* Writes this process's pid into the lock file (after detaching, the daemon's). */
void store_record_pid(const struct coord_store *s);
/* Releases the lock. */
void store_close(struct coord_store *s);

/* mkdir -p; the last component gets mode. */
int store_mkdirs(const char *path, mode_t mode, char *err, size_t errlen);

/* Writes data to path atomically with the given mode. */
int store_write_atomic(const char *path, const char *data, size_t len, mode_t mode, char *err,
                       size_t errlen);

/* Path of a file in DIR/.mana. */
void store_meta_path(const struct coord_store *s, const char *name, char *out, size_t len);

/* The generation in LATEST (0 when there is none). A LATEST that does not hold a number
 * is an error. */
int store_latest(const struct coord_store *s, uint64_t *gen, char *err, size_t errlen);

/* The highest generation number of any gen-N directory, complete or not (0 if none). */
uint64_t store_newest_dir(const struct coord_store *s);

/* Removes generation directories without a MANIFEST (attempts that never committed), other
 * than keep, and leftovers of aborted attempts. Logs each one. */
void store_remove_incomplete(const struct coord_store *s, uint64_t keep);

void store_gen_path(const struct coord_store *s, uint64_t gen, char *out, size_t len);

/* Creates gen-N (mode 0700); an existing one is an error. */
int store_gen_create(const struct coord_store *s, uint64_t gen, char *err, size_t errlen);

/* Removes gen-N and everything in it. It is renamed away first, so a rank still writing
 * cannot create files in it any more. */
int store_gen_remove(const struct coord_store *s, uint64_t gen, char *err, size_t errlen);

/* Checks that gen-N/file is a regular file of the reported size. */
int store_check_image(const struct coord_store *s, uint64_t gen, const char *file, uint64_t bytes,
                      char *err, size_t errlen);

/* Writes gen-N/MANIFEST, then points LATEST at gen. Only after both are durable is the
 * generation committed; on failure LATEST is unchanged. */
int store_commit(const struct coord_store *s, uint64_t gen, const char *manifest, size_t len,
                 char *err, size_t errlen);

#endif
