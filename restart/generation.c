/* Generation lookup (see generation.h).  The MANIFEST format is the coordinator's
 * (docs/coordinator-protocol.md section 7); it is read with the protocol's own line parser. */
#define _GNU_SOURCE
#include "generation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_manifest.h"
#include "coord_trust.h"
#include "image.h"
#include "coord_layout.h"
#include "mana/fail.h"

static int read_latest(const char *ckptdir, uint64_t *gen, char *err, size_t errlen)
{
  char path[4200], why[4300];
  snprintf(path, sizeof(path), "%s/" STORE_LATEST_FILE, ckptdir);
  if (access(path, F_OK) == 0 && coord_trusted(path, 0, 0, err, errlen) != 0)
    return -1;
  int rc = store_read_latest(ckptdir, gen, why, sizeof(why));
  if (rc == -1) {
    return mana_fail(err, errlen, 0, "%s", why);
  }
  if (rc == -2 || (*gen == 0 && access(path, F_OK) == 0)) {
    return mana_fail(err, errlen, 0,
                     "%s is damaged (it must hold a generation number); a generation "
                     "can still be named with --generation N (the gen-N directories in %s)",
                     path, ckptdir);
  }
  if (*gen == 0) {
    return mana_fail(err, errlen, 0, "%s holds no committed checkpoint (no " STORE_LATEST_FILE ")",
                     ckptdir);
  }
  return 0;
}

/* rank's image is there, trusted and of the size MANIFEST records. */
static int check_image_file(const struct mana_generation *g, uint32_t rank,
                            const struct manifest_image *im, char *err, size_t errlen)
{
  char path[4400];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", g->dir, im->file);
  if (stat(path, &st) != 0) {
    return mana_fail(err, errlen, errno, "image of rank %u is missing: %s", rank, path);
  }
  if (coord_trusted(path, 0, 0, err, errlen) != 0)
    return -1;
  if ((uint64_t)st.st_size != im->bytes) {
    return mana_fail(err, errlen, 0,
                     "image of rank %u is %lld bytes but the manifest says %llu: %s", rank,
                     (long long)st.st_size, (unsigned long long)im->bytes, path);
  }
  return 0;
}

/* Reads g's MANIFEST into g (world size, every image's hash); stat_images also checks that
 * every image is there, trusted and of its recorded size (one stat each: a restarting rank
 * needs only its own). */
static int read_manifest(struct mana_generation *g, int stat_images, char *err, size_t errlen)
{
  char path[4200];
  snprintf(path, sizeof(path), "%s/" STORE_MANIFEST_FILE, g->dir);
  if (coord_trusted(g->dir, 1, 0, err, errlen) != 0 ||
      (access(path, F_OK) == 0 && coord_trusted(path, 0, 0, err, errlen) != 0))
    return -1;
  FILE *f = fopen(path, "r");
  if (!f) {
    return mana_fail(err, errlen, 0, "generation %llu was never committed (%s: %s)",
                     (unsigned long long)g->number, path, strerror(errno));
  }
  struct manifest_image *images = NULL;
  int rc = manifest_read(f, path, &g->world_size, &images, err, errlen);
  fclose(f);
  free(g->hashes);
  g->hashes = rc == 0 ? malloc(g->world_size * sizeof(uint64_t)) : NULL;
  if (rc == 0 && !g->hashes) {
    mana_fail(err, errlen, 0, "%s: no memory for the image hashes", path);
    rc = -1;
  }
  for (uint32_t i = 0; rc == 0 && i < g->world_size; i++) {
    g->hashes[i] = images[i].xxh;
    if (stat_images)
      rc = check_image_file(g, i, &images[i], err, errlen);
  }
  free(images);
  return rc;
}

int mana_generation_find(const char *ckptdir, uint64_t wanted, struct mana_generation *g, char *err,
                         size_t errlen)
{
  struct stat st;
  g->hashes = NULL;
  if (stat(ckptdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return mana_fail(err, errlen, 0, "checkpoint directory %s: %s", ckptdir,
                     errno ? strerror(errno) : "not a directory");
  }
  if (coord_trusted(ckptdir, 1, 1, err, errlen) != 0)
    return -1;
  g->number = wanted;
  if (wanted == 0 && read_latest(ckptdir, &g->number, err, errlen) != 0)
    return -1;
  store_gen_dir(ckptdir, g->number, g->dir, sizeof(g->dir));
  if (stat(g->dir, &st) != 0) {
    return mana_fail(err, errlen, 0, "generation %llu does not exist in %s",
                     (unsigned long long)g->number, ckptdir);
  }
  return read_manifest(g, 1, err, errlen);
}

void mana_generation_release(struct mana_generation *g)
{
  free(g->hashes);
  g->hashes = NULL;
}

int mana_generation_check_image(const struct mana_generation *g, const char *name,
                                const struct mana_image_info *info, char *err, size_t errlen)
{
  char path[4200];
  if (info->generation != g->number) {
    return mana_fail(err, errlen, 0,
                     "%s in %s is an image of generation %llu, not %llu: images of different "
                     "checkpoints are mixed",
                     name, g->dir, (unsigned long long)info->generation,
                     (unsigned long long)g->number);
  }
  if (info->rank >= g->world_size || !g->hashes || g->hashes[info->rank] != info->header_hash) {
    snprintf(
        err, errlen,
        "%s in %s is not the image this checkpoint wrote for rank %u (its header hash is "
        "%016llx, the MANIFEST lists %016llx)",
        name, g->dir, info->rank, (unsigned long long)info->header_hash,
        (unsigned long long)(info->rank < g->world_size && g->hashes ? g->hashes[info->rank] : 0));
    return -1;
  }
  snprintf(path, sizeof(path), "%s/%s", g->dir, name);
  return coord_trusted(path, 0, 0, err, errlen);
}

int mana_generation_of_dir(const char *gendir, struct mana_generation *g, char *err, size_t errlen)
{
  const char *base = strrchr(gendir, '/');
  base = base ? base + 1 : gendir;
  unsigned long long number = 0;
  int used = 0;
  if (sscanf(base, "gen-%llu%n", &number, &used) != 1 || base[used] != '\0' || number == 0) {
    return mana_fail(err, errlen, 0, "%s is not a generation directory (gen-NNNNNN)", gendir);
  }
  g->number = number;
  g->hashes = NULL;
  snprintf(g->dir, sizeof(g->dir), "%s", gendir);
  return read_manifest(g, 0, err, errlen);
}

void mana_generation_resolver_init(struct mana_generation_resolver *res, const char *gendir,
                                   uint32_t rank)
{
  snprintf(res->ckptdir, sizeof(res->ckptdir), "%s", gendir);
  char *slash = strrchr(res->ckptdir, '/');
  if (slash && slash != res->ckptdir)
    *slash = '\0';
  else
    snprintf(res->ckptdir, sizeof(res->ckptdir), "%s", slash ? "/" : ".");
  res->rank = rank;
}

int mana_generation_resolve(void *arg, uint64_t generation, struct mana_image_reader **base,
                            char *err, size_t errlen)
{
  const struct mana_generation_resolver *res = arg;
  char dir[4200], name[64], path[4300];
  store_gen_dir(res->ckptdir, generation, dir, sizeof(dir));
  mana_image_name(res->rank, name, sizeof(name));
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  if (coord_trusted(path, 0, 0, err, errlen) != 0)
    return -1;
  return mana_image_open(base, AT_FDCWD, path, NULL, err, errlen);
}

int mana_generation_verify(const struct mana_generation *g, char *err, size_t errlen)
{
  int dirfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    return mana_fail(err, errlen, errno, "%s", g->dir);
  }
  int rc = 0;
  for (uint32_t rank = 0; rc == 0 && rank < g->world_size; rank++) {
    char name[64];
    struct mana_image_reader *r = NULL;
    struct mana_image_info info;
    mana_image_name(rank, name, sizeof(name));
    struct mana_generation_resolver older;
    mana_generation_resolver_init(&older, g->dir, rank);
    rc = mana_image_open(&r, dirfd, name, &info, err, errlen);
    if (rc == 0)
      rc = mana_generation_check_image(g, name, &info, err, errlen);
    if (rc == 0) {
      mana_image_set_resolver(r, mana_generation_resolve, &older);
      rc = mana_image_verify(r, err, errlen);
    }
    if (rc == 0 && (info.rank != rank || info.world_size != g->world_size)) {
      mana_fail(err, errlen, 0, "%s is the image of rank %u of %u, not of rank %u of %u", name,
                info.rank, info.world_size, rank, g->world_size);
      rc = -1;
    }
    mana_image_close(r);
  }
  close(dirfd);
  return rc;
}
