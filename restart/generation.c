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

#include "coord_proto.h"
#include "coord_trust.h"
#include "image.h"
#include "coord_layout.h"

static int read_latest(const char *ckptdir, uint64_t *gen, char *err, size_t errlen)
{
  char path[4200], why[4300];
  snprintf(path, sizeof(path), "%s/" STORE_LATEST_FILE, ckptdir);
  if (access(path, F_OK) == 0 && coord_trusted(path, 0, 0, err, errlen) != 0)
    return -1;
  int rc = store_read_latest(ckptdir, gen, why, sizeof(why));
  if (rc == -1) {
    snprintf(err, errlen, "%s", why);
    return -1;
  }
  if (rc == -2 || (*gen == 0 && access(path, F_OK) == 0)) {
    snprintf(err, errlen,
             "%s is damaged (it must hold a generation number); a generation "
             "can still be named with --generation N (the gen-N directories in %s)",
             path, ckptdir);
    return -1;
  }
  if (*gen == 0) {
    snprintf(err, errlen, "%s holds no committed checkpoint (no " STORE_LATEST_FILE ")", ckptdir);
    return -1;
  }
  return 0;
}

/* One RANK line: its image hash, and (stat_images) the image there with its recorded size. */
static int check_rank_line(struct mana_generation *g, struct coord_msg *m, uint32_t expected,
                           int stat_images, uint64_t *xxh, char *err, size_t errlen)
{
  uint64_t rank, bytes;
  const char *file, *hash;
  char perr[COORD_ERR_LEN], path[4400];
  struct stat st;
  if (coord_msg_u64(m, "rank", &rank, perr, sizeof(perr)) != 0 ||
      coord_msg_u64(m, "bytes", &bytes, perr, sizeof(perr)) != 0 ||
      coord_msg_str(m, "file", &file, perr, sizeof(perr)) != 0 || rank != expected ||
      strchr(file, '/')) {
    snprintf(err, errlen, "%s/MANIFEST: bad RANK line for rank %u", g->dir, expected);
    return -1;
  }
  char *end;
  errno = 0;
  if (coord_msg_str(m, "xxh", &hash, perr, sizeof(perr)) != 0 ||
      (*xxh = strtoull(hash, &end, 16), errno != 0 || *end != '\0' || end == hash)) {
    snprintf(err, errlen, "%s/MANIFEST: no image hash on the RANK line of rank %u", g->dir,
             expected);
    return -1;
  }
  if (!stat_images)
    return 0;
  snprintf(path, sizeof(path), "%s/%s", g->dir, file);
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "image of rank %u is missing: %s: %s", expected, path, strerror(errno));
    return -1;
  }
  if (coord_trusted(path, 0, 0, err, errlen) != 0)
    return -1;
  if ((uint64_t)st.st_size != bytes) {
    snprintf(err, errlen, "image of rank %u is %lld bytes but the manifest says %llu: %s", expected,
             (long long)st.st_size, (unsigned long long)bytes, path);
    return -1;
  }
  return 0;
}

/* Reads g's MANIFEST into g (world size, every image's hash); stat_images also checks that
 * every image is there, trusted and of its recorded size (one stat each: a restarting rank
 * needs only its own). */
static int read_manifest(struct mana_generation *g, int stat_images, char *err, size_t errlen)
{
  char path[4200], line[COORD_LINE_MAX + 1], perr[COORD_ERR_LEN];
  snprintf(path, sizeof(path), "%s/" STORE_MANIFEST_FILE, g->dir);
  if (coord_trusted(g->dir, 1, 0, err, errlen) != 0 ||
      (access(path, F_OK) == 0 && coord_trusted(path, 0, 0, err, errlen) != 0))
    return -1;
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "generation %llu was never committed (%s: %s)",
             (unsigned long long)g->number, path, strerror(errno));
    return -1;
  }
  uint32_t ranks_seen = 0, room = 0;
  int ended = 0, rc = 0, lineno = 0;
  g->world_size = 0;
  free(g->hashes);
  g->hashes = NULL;
  while (rc == 0 && !ended && fgets(line, sizeof(line), f)) {
    struct coord_msg m;
    uint64_t v;
    lineno++;
    size_t len = strcspn(line, "\n");
    if (coord_msg_parse(line, len, &m, perr, sizeof(perr)) != 0) {
      snprintf(err, errlen, "%s line %d: %s", path, lineno, perr);
      rc = -1;
    } else if (lineno == 1 && strcmp(m.verb, "MANA_MANIFEST") != 0) {
      snprintf(err, errlen, "%s is not a mana manifest", path);
      rc = -1;
    } else if (!strcmp(m.verb, "GENERATION")) {
      if (coord_msg_u64(&m, "size", &v, perr, sizeof(perr)) != 0 || v == 0 || v > 1u << 24) {
        snprintf(err, errlen, "%s: bad GENERATION line", path);
        rc = -1;
      }
      g->world_size = (uint32_t)v;
    } else if (!strcmp(m.verb, "RANK")) {
      if (ranks_seen == room) { /* grown as lines come: the GENERATION line is not trusted */
        uint64_t *more = realloc(g->hashes, (room ? 2 * (size_t)room : 64) * sizeof(uint64_t));
        if (!more) {
          snprintf(err, errlen, "%s: no memory for the image hashes", path);
          rc = -1;
          continue;
        }
        g->hashes = more;
        room = room ? 2 * room : 64;
      }
      rc = check_rank_line(g, &m, ranks_seen, stat_images, &g->hashes[ranks_seen], err, errlen);
      ranks_seen++;
    } else if (!strcmp(m.verb, "END")) {
      ended = 1;
    }
  }
  fclose(f);
  if (rc == 0 && (!ended || g->world_size == 0 || ranks_seen != g->world_size)) {
    snprintf(err, errlen, "%s is incomplete (%u of %u ranks listed%s)", path, ranks_seen,
             g->world_size, ended ? "" : ", no END line");
    rc = -1;
  }
  return rc;
}

int mana_generation_find(const char *ckptdir, uint64_t wanted, struct mana_generation *g, char *err,
                         size_t errlen)
{
  struct stat st;
  g->hashes = NULL;
  if (stat(ckptdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "checkpoint directory %s: %s", ckptdir,
             errno ? strerror(errno) : "not a directory");
    return -1;
  }
  if (coord_trusted(ckptdir, 1, 1, err, errlen) != 0)
    return -1;
  g->number = wanted;
  if (wanted == 0 && read_latest(ckptdir, &g->number, err, errlen) != 0)
    return -1;
  store_gen_dir(ckptdir, g->number, g->dir, sizeof(g->dir));
  if (stat(g->dir, &st) != 0) {
    snprintf(err, errlen, "generation %llu does not exist in %s", (unsigned long long)g->number,
             ckptdir);
    return -1;
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
    snprintf(err, errlen,
             "%s in %s is an image of generation %llu, not %llu: images of different "
             "checkpoints are mixed",
             name, g->dir, (unsigned long long)info->generation, (unsigned long long)g->number);
    return -1;
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
    snprintf(err, errlen, "%s is not a generation directory (gen-NNNNNN)", gendir);
    return -1;
  }
  g->number = number;
  g->hashes = NULL;
  snprintf(g->dir, sizeof(g->dir), "%s", gendir);
  return read_manifest(g, 0, err, errlen);
}

int mana_generation_verify(const struct mana_generation *g, char *err, size_t errlen)
{
  int dirfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    snprintf(err, errlen, "%s: %s", g->dir, strerror(errno));
    return -1;
  }
  int rc = 0;
  for (uint32_t rank = 0; rc == 0 && rank < g->world_size; rank++) {
    char name[64];
    struct mana_image_reader *r = NULL;
    struct mana_image_info info;
    mana_image_name(rank, name, sizeof(name));
    rc = mana_image_open(&r, dirfd, name, &info, err, errlen);
    if (rc == 0)
      rc = mana_generation_check_image(g, name, &info, err, errlen);
    if (rc == 0)
      rc = mana_image_verify(r, err, errlen);
    if (rc == 0 && (info.rank != rank || info.world_size != g->world_size)) {
      snprintf(err, errlen, "%s is the image of rank %u of %u, not of rank %u of %u", name,
               info.rank, info.world_size, rank, g->world_size);
      rc = -1;
    }
    mana_image_close(r);
  }
  close(dirfd);
  return rc;
}
