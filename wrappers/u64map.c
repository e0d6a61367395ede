/* The 64-bit hash map of the stub's records (see u64map.h). */
#include "u64map.h"

#include <stdlib.h>

static size_t home(const struct mana_u64map *m, uint64_t key)
{
  /* Keys are real handles and small counters as often as well-mixed ids: spread them. */
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & m->mask;
}

static struct mana_u64map_entry *find(const struct mana_u64map *m, uint64_t key)
{
  if (!m->slots || key == 0)
    return NULL;
  for (size_t i = home(m, key);; i = (i + 1) & m->mask) {
    struct mana_u64map_entry *e = &m->slots[i];
    if (e->key == key)
      return e;
    if (e->key == 0)
      return NULL;
  }
}

int mana_u64map_get(const struct mana_u64map *m, uint64_t key, uint64_t *value)
{
  struct mana_u64map_entry *e = find(m, key);
  if (!e)
    return 0;
  *value = e->value;
  return 1;
}

static void insert_new(struct mana_u64map *m, uint64_t key, uint64_t value)
{
  size_t i = home(m, key);
  while (m->slots[i].key != 0)
    i = (i + 1) & m->mask;
  m->slots[i].key = key;
  m->slots[i].value = value;
  m->count++;
}

static int grow(struct mana_u64map *m)
{
  size_t old_cap = m->slots ? m->mask + 1 : 0;
  size_t cap = old_cap ? 2 * old_cap : 16;
  struct mana_u64map_entry *old = m->slots;
  m->slots = calloc(cap, sizeof(*m->slots));
  if (!m->slots) {
    m->slots = old;
    return -1;
  }
  m->mask = cap - 1;
  m->count = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].key != 0)
      insert_new(m, old[i].key, old[i].value);
  free(old);
  return 0;
}

int mana_u64map_put(struct mana_u64map *m, uint64_t key, uint64_t value, uint64_t *old)
{
  if (key == 0)
    return -1;
  struct mana_u64map_entry *e = find(m, key);
  if (e) {
    if (old)
      *old = e->value;
    e->value = value;
    return 1;
  }
  if ((!m->slots || 2 * (m->count + 1) > m->mask + 1) && grow(m) != 0)
    return -1;
  insert_new(m, key, value);
  return 0;
}

int mana_u64map_remove(struct mana_u64map *m, uint64_t key, uint64_t *value)
{
  struct mana_u64map_entry *e = find(m, key);
  if (!e)
    return 0;
  if (value)
    *value = e->value;
  /* Backward-shift deletion: move later members of the probe run into the hole when their
   * home position does not lie cyclically between the hole and themselves. */
  size_t hole = (size_t)(e - m->slots);
  for (size_t i = (hole + 1) & m->mask; m->slots[i].key != 0; i = (i + 1) & m->mask) {
    size_t h = home(m, m->slots[i].key);
    int movable = hole <= i ? (h <= hole || h > i) : (h <= hole && h > i);
    if (movable) {
      m->slots[hole] = m->slots[i];
      hole = i;
    }
  }
  m->slots[hole].key = 0;
  m->slots[hole].value = 0;
  m->count--;
  return 1;
}

void mana_u64map_each(const struct mana_u64map *m, void (*fn)(uint64_t, uint64_t, void *),
                      void *ctx)
{
  if (!m->slots)
    return;
  for (size_t i = 0; i <= m->mask; i++)
    if (m->slots[i].key != 0)
      fn(m->slots[i].key, m->slots[i].value, ctx);
}

void mana_u64map_free(struct mana_u64map *m)
{
  free(m->slots);
  m->slots = NULL;
  m->mask = m->count = 0;
}
