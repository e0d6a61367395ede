/* The rebuild order of communicators (see comm_order.h). */
#include "comm_order.h"

#include <stdlib.h>

uint64_t mana_comm_next_index(struct mana_u64map *made, uint64_t ggid)
{
  uint64_t n = 0;
  mana_u64map_get(made, ggid, &n);
  return mana_u64map_put(made, ggid, n + 1, NULL) < 0 ? UINT64_MAX : n;
}

static int compare(const void *a, const void *b)
{
  const struct mana_comm_key *x = a, *y = b;
  if (x->ggid != y->ggid)
    return x->ggid < y->ggid ? -1 : 1;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

void mana_comm_sort(struct mana_comm_key *keys, size_t n)
{
  qsort(keys, n, sizeof(*keys), compare);
}
