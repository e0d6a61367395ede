/* coord_store_prune: removing committed generations that are no longer needed (--keep N).
 *
 * A generation G is needed while one of the N newest committed generations reads images of
 * G: its MANIFEST says needs <= G (an incremental generation refers to pages stored in older
 * generations' images; a full one needs only itself).  So every generation from the smallest
 * needs among the N newest up to the newest stays; older ones go.  What cannot be known is
 * kept: a generation whose MANIFEST does not read, and everything when the MANIFEST of LATEST
 * or of one of the N newest does not read.
 *
 * The decision (prune_floor) is pure, for the unit tests; store_prune carries it out on the
 * checkpoint directory of the coordinator, which holds its lock.
 */
#ifndef MANA_COORD_STORE_PRUNE_H
#define MANA_COORD_STORE_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_store.h"

/* One committed generation (a gen-N directory with a MANIFEST). */
struct prune_entry {
  uint64_t gen;
  uint64_t needs; /* from its MANIFEST, when readable */
  bool readable;  /* its MANIFEST was read and names gen */
};

/* The oldest generation that must stay, given the committed generations e[0..n) in
 * ascending order, all <= latest: every generation below it that is readable may be removed.
 * 0 when nothing may be removed: keep is 0, latest is not among them, or a MANIFEST among
 * the keep newest does not read. */
uint64_t prune_floor(const struct prune_entry *e, size_t n, unsigned keep, uint64_t latest);

/* After the commit of latest: removes (store_gen_remove) every committed generation of the
 * directory below the floor, logging each one, and logs the ones it keeps because their
 * MANIFEST does not read.  Nothing happens when keep is 0. */
void store_prune(const struct coord_store *s, uint64_t latest, unsigned keep);

#endif
