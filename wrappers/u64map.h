/* A small hash map from 64-bit keys to 64-bit values, for the stub's records: real handle to
 * record (datatypes, error handlers), group id to creation count (communicators).  Open
 * addressing with linear probing, power-of-two capacity, at most half full; deletion shifts
 * the following entries back, so there are no tombstones.  Key 0 is reserved (empty). */
#ifndef MANA_U64MAP_H
#define MANA_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct mana_u64map_entry {
  uint64_t key;
  uint64_t value;
};

struct mana_u64map {
  struct mana_u64map_entry *slots;
  size_t mask; /* capacity - 1; 0 with no slots */
  size_t count;
};

/* Returns 1 and sets *value if key is present, else 0. */
int mana_u64map_get(const struct mana_u64map *m, uint64_t key, uint64_t *value);
/* Inserts or replaces.  *old (if not NULL) gets the replaced value and 1 is returned; 0 for a
 * new key; -1 when out of memory (the map is unchanged). */
int mana_u64map_put(struct mana_u64map *m, uint64_t key, uint64_t value, uint64_t *old);
/* Removes key; returns 1 and sets *value (if not NULL) if it was present. */
int mana_u64map_remove(struct mana_u64map *m, uint64_t key, uint64_t *value);
/* Visits every entry (in no particular order); the map must not change meanwhile. */
void mana_u64map_each(const struct mana_u64map *m,
                      void (*fn)(uint64_t key, uint64_t value, void *ctx), void *ctx);
void mana_u64map_free(struct mana_u64map *m);

#endif
