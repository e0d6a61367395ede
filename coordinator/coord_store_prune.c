/* coord_store_prune: committed generations no longer needed (see coord_store_prune.h). */
#include "coord_store_prune.h"

#include "coord_log.h"
#include "coord_manifest.h"
#include "coord_proto.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t prune_floor(const struct prune_entry *e, size_t n, unsigned keep, uint64_t latest)
{
  uint64_t floor = UINT64_MAX;
  size_t first;

  if (keep == 0 || n == 0 || e[n - 1].gen != latest)
    return 0;
  first = n > keep ? n - keep : 0;
  for (size_t i = first; i < n; i++) {
    if (!e[i].readable)
      return 0; /* what it needs is unknown: it may need anything older */
    if (e[i].needs < floor)
      floor = e[i].needs;
  }
  return floor;
}

static int by_gen(const void *a, const void *b)
{
  const struct prune_entry *x = a, *y = b;

  return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* The committed generations up to latest, read; ascending.  NULL with *n = 0 when there
 * are none or no memory (then nothing is removed). */
static struct prune_entry *list_committed(const struct coord_store *s, uint64_t latest, size_t *n)
{
  struct prune_entry *list = NULL;
  size_t room = 0;
  struct dirent *d;
  DIR *dir = opendir(s->dir);

  *n = 0;
  if (!dir) {
    coord_log("pruning skipped: cannot read %s", s->dir);
    return NULL;
  }
  while ((d = readdir(dir))) {
    char path[PATH_MAX + 300], err[COORD_ERR_LEN * 2];
    struct manifest_chain chain;
    uint64_t gen;

    if (!store_gen_dir_number(d->d_name, &gen) || gen > latest)
      continue;
    snprintf(path, sizeof(path), "%s/%s/" STORE_MANIFEST_FILE, s->dir, d->d_name);
    if (access(path, F_OK) != 0)
      continue; /* never committed: the sweep at start is for those */
    if (*n == room) {
      size_t more = room ? 2 * room : 16;
      struct prune_entry *grown = realloc(list, more * sizeof(*list));

      if (!grown) {
        coord_log("pruning skipped: out of memory");
        free(list);
        closedir(dir);
        *n = 0;
        return NULL;
      }
      list = grown;
      room = more;
    }
    store_gen_path(s, gen, path, sizeof(path));
    list[*n] = (struct prune_entry){.gen = gen};
    if (manifest_chain_of(path, &chain, err, sizeof(err)) != 0)
      coord_log("generation %" PRIu64 ": %s", gen, err);
    else if (chain.gen != gen)
      coord_log("generation %" PRIu64 ": its MANIFEST names generation %" PRIu64, gen, chain.gen);
    else
      list[*n].readable = true, list[*n].needs = chain.needs;
    (*n)++;
  }
  closedir(dir);
  qsort(list, *n, sizeof(*list), by_gen);
  return list;
}

void store_prune(const struct coord_store *s, uint64_t latest, unsigned keep)
{
  struct prune_entry *list;
  uint64_t floor;
  size_t n;

  if (keep == 0)
    return;
  list = list_committed(s, latest, &n);
  floor = prune_floor(list, n, keep, latest);
  if (floor == 0 && n > keep)
    coord_log("pruning skipped: what generation %" PRIu64 " or one of the %u newest needs is "
              "unknown (its MANIFEST does not read)",
              latest, keep);
  for (size_t i = 0; i < n && list[i].gen < floor; i++) {
    char err[COORD_ERR_LEN * 2];

    if (!list[i].readable) {
      coord_log("generation %" PRIu64 " kept: its MANIFEST does not read", list[i].gen);
    } else if (store_gen_remove(s, list[i].gen, err, sizeof(err)) != 0) {
      coord_log("generation %" PRIu64 " could not be removed: %s", list[i].gen, err);
    } else {
      coord_log("removed generation %" PRIu64 " (--keep %u: the newest need generation %" PRIu64
                " and later)",
                list[i].gen, keep, floor);
    }
  }
  free(list);
}
