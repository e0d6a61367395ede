/* coord_manifest: write and read a MANIFEST (see coord_manifest.h). */
#include "coord_manifest.h"

#include "coord_layout.h"
#include "coord_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mana/fail.h"

void manifest_time(int64_t ms, char *out, size_t len)
{
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  char base[32];

  gmtime_r(&secs, &tm);
  strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, len, "%s.%03dZ", base, (int)(ms % 1000));
}

/* Appends one finished line to the growing text. */
static int append(char **text, size_t *len, size_t *cap, struct coord_line *line)
{
  if (coord_line_end(line))
    return -1;
  if (*len + line->len + 1 > *cap) {
    size_t grown_cap = (*cap + line->len + 1) * 2;
    char *grown = realloc(*text, grown_cap);

    if (!grown)
      return -1;
    *text = grown;
    *cap = grown_cap;
  }
  memcpy(*text + *len, line->buf, line->len);
  *len += line->len;
  (*text)[*len] = '\0';
  return 0;
}

static uint64_t total_bytes(const struct manifest *m)
{
  uint64_t sum = 0;

  for (size_t i = 0; i < m->size; i++)
    sum += m->ranks[i].bytes;
  return sum;
}

static void time_line(struct coord_line *line, char *buf, size_t cap, const struct manifest *m)
{
  char started[40], committed[40], seconds[32];
  int64_t span = m->committed_ms - m->started_ms;

  manifest_time(m->started_ms, started, sizeof(started));
  manifest_time(m->committed_ms, committed, sizeof(committed));
  snprintf(seconds, sizeof(seconds), "%lld.%03lld", (long long)(span / 1000),
           (long long)(span % 1000));
  coord_line_start(line, buf, cap, "TIME");
  coord_line_str(line, "started", started);
  coord_line_str(line, "committed", committed);
  coord_line_str(line, "seconds", seconds);
}

static void rank_line(struct coord_line *line, char *buf, size_t cap, const struct manifest *m,
                      size_t rank)
{
  const struct manifest_rank *r = &m->ranks[rank];

  coord_line_start(line, buf, cap, "RANK");
  coord_line_u64(line, "rank", rank);
  coord_line_str(line, "file", r->file);
  coord_line_u64(line, "bytes", r->bytes);
  coord_line_str(line, "xxh", r->xxh);
  coord_line_str(line, "host", r->host);
  coord_line_u64(line, "pid", r->pid);
}

char *manifest_format(const struct manifest *m, size_t *len)
{
  char *buf = malloc(COORD_LINE_MAX), *text = NULL;
  size_t cap = 0, used = 0;
  struct coord_line line;
  int rc = 0;

  if (!buf)
    return NULL;
  coord_line_start(&line, buf, COORD_LINE_MAX, "MANA_MANIFEST");
  coord_line_u64(&line, "v", COORD_MANIFEST_VERSION);
  rc |= append(&text, &used, &cap, &line);

  coord_line_start(&line, buf, COORD_LINE_MAX, "GENERATION");
  coord_line_u64(&line, "gen", m->gen);
  coord_line_u64(&line, "previous", m->previous);
  coord_line_u64(&line, "size", m->size);
  coord_line_u64(&line, "bytes", total_bytes(m));
  coord_line_u64(&line, "needs", m->needs ? m->needs : m->gen);
  coord_line_u64(&line, "depth", m->depth);
  rc |= append(&text, &used, &cap, &line);

  time_line(&line, buf, COORD_LINE_MAX, m);
  rc |= append(&text, &used, &cap, &line);

  if (m->command) {
    coord_line_start(&line, buf, COORD_LINE_MAX, "COMMAND");
    coord_line_str(&line, "line", m->command);
    rc |= append(&text, &used, &cap, &line);
  }
  for (size_t i = 0; i < m->size && rc == 0; i++) {
    rank_line(&line, buf, COORD_LINE_MAX, m, i);
    rc |= append(&text, &used, &cap, &line);
  }
  coord_line_start(&line, buf, COORD_LINE_MAX, "END");
  coord_line_u64(&line, "ranks", m->size);
  rc |= append(&text, &used, &cap, &line);

  free(buf);
  if (rc) {
    free(text);
    return NULL;
  }
  *len = used;
  return text;
}

/* One RANK line: it must be the next rank's, name a plain file and carry size and checksum. */
static int read_rank_line(struct coord_msg *m, const char *path, uint32_t expected,
                          struct manifest_image *out, char *err, size_t errlen)
{
  uint64_t rank;
  const char *file, *hash;
  char perr[COORD_ERR_LEN], *end;

  if (coord_msg_u64(m, "rank", &rank, perr, sizeof(perr)) != 0 ||
      coord_msg_u64(m, "bytes", &out->bytes, perr, sizeof(perr)) != 0 ||
      coord_msg_str(m, "file", &file, perr, sizeof(perr)) != 0 || rank != expected ||
      strchr(file, '/') || strlen(file) >= sizeof(out->file)) {
    return mana_fail(err, errlen, 0, "%s: bad RANK line for rank %u", path, expected);
  }
  snprintf(out->file, sizeof(out->file), "%s", file);
  errno = 0;
  if (coord_msg_str(m, "xxh", &hash, perr, sizeof(perr)) != 0 ||
      (out->xxh = strtoull(hash, &end, 16), errno != 0 || *end != '\0' || end == hash)) {
    return mana_fail(err, errlen, 0, "%s: no image hash on the RANK line of rank %u", path,
                     expected);
  }
  return 0;
}

/* gen=, and needs= and depth= when present: absent, the generation is a full one. */
static int read_chain(const struct coord_msg *m, const char *path, struct manifest_chain *chain,
                      char *err, size_t errlen)
{
  char perr[COORD_ERR_LEN];

  chain->needs = chain->depth = 0;
  if (coord_msg_u64(m, "gen", &chain->gen, perr, sizeof(perr)) != 0 || chain->gen == 0 ||
      (coord_msg_get(m, "needs") &&
       coord_msg_u64(m, "needs", &chain->needs, perr, sizeof(perr)) != 0) ||
      (coord_msg_get(m, "depth") &&
       coord_msg_u64(m, "depth", &chain->depth, perr, sizeof(perr)) != 0))
    return mana_fail(err, errlen, 0, "%s: bad GENERATION line", path);
  if (!coord_msg_get(m, "needs"))
    chain->needs = chain->gen;
  if (chain->needs == 0 || chain->needs > chain->gen)
    return mana_fail(err, errlen, 0,
                     "%s: GENERATION says generation %" PRIu64 " needs generation %" PRIu64, path,
                     chain->gen, chain->needs);
  return 0;
}

int manifest_read(FILE *f, const char *path, uint32_t *world_size, struct manifest_image **images,
                  char *err, size_t errlen)
{
  return manifest_read_chain(f, path, world_size, images, NULL, err, errlen);
}

int manifest_chain_of(const char *gendir, struct manifest_chain *chain, char *err, size_t errlen)
{
  char path[PATH_MAX + 32];
  uint32_t size;
  FILE *f;
  int rc;

  snprintf(path, sizeof(path), "%s/%s", gendir, STORE_MANIFEST_FILE);
  f = fopen(path, "re");
  if (!f)
    return mana_fail(err, errlen, errno, "cannot open %s", path);
  rc = manifest_read_chain(f, path, &size, NULL, chain, err, errlen);
  fclose(f);
  return rc;
}

int manifest_read_chain(FILE *f, const char *path, uint32_t *world_size,
                        struct manifest_image **images, struct manifest_chain *chain, char *err,
                        size_t errlen)
{
  char line[COORD_LINE_MAX + 1], perr[COORD_ERR_LEN];
  struct manifest_image *list = NULL;
  uint32_t seen = 0, room = 0;
  int ended = 0, rc = 0, lineno = 0, chained = 0;

  *world_size = 0;
  if (images)
    *images = NULL;
  while (rc == 0 && !ended && fgets(line, sizeof(line), f)) {
    struct coord_msg m;
    uint64_t v;

    lineno++;
    if (coord_msg_parse(line, strcspn(line, "\n"), &m, perr, sizeof(perr)) != 0) {
      mana_fail(err, errlen, 0, "%s line %d: %s", path, lineno, perr);
      rc = -1;
    } else if (lineno == 1 && strcmp(m.verb, "MANA_MANIFEST") != 0) {
      mana_fail(err, errlen, 0, "%s is not a mana manifest", path);
      rc = -1;
    } else if (!strcmp(m.verb, "GENERATION")) {
      if (coord_msg_u64(&m, "size", &v, perr, sizeof(perr)) != 0 || v == 0 || v > 1u << 24) {
        mana_fail(err, errlen, 0, "%s: bad GENERATION line", path);
        rc = -1;
      }
      *world_size = (uint32_t)v;
      if (rc == 0 && chain) {
        rc = read_chain(&m, path, chain, err, errlen);
        chained = 1;
      }
    } else if (!strcmp(m.verb, "RANK")) {
      if (seen == room) { /* grown as lines come: GENERATION is not trusted */
        size_t more = room ? 2 * (size_t)room : 64;
        struct manifest_image *grown = realloc(list, more * sizeof(*list));

        if (!grown) {
          mana_fail(err, errlen, 0, "%s: no memory for the image list", path);
          rc = -1;
          continue;
        }
        list = grown;
        room = (uint32_t)more;
      }
      rc = read_rank_line(&m, path, seen, &list[seen], err, errlen);
      seen++;
    } else if (!strcmp(m.verb, "END")) {
      ended = 1;
    }
  }
  if (rc == 0 && (!ended || *world_size == 0 || seen != *world_size)) {
    mana_fail(err, errlen, 0, "%s is incomplete (%u of %u ranks listed%s)", path, seen, *world_size,
              ended ? "" : ", no END line");
    rc = -1;
  }
  if (rc == 0 && chain && !chained) {
    mana_fail(err, errlen, 0, "%s has no GENERATION line", path);
    rc = -1;
  }
  if (rc != 0 || !images)
    free(list);
  else
    *images = list;
  return rc;
}
