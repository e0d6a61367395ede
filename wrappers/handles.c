/* Virtual handle tables: slot allocation, retirement and the reverse lookup. */
#include "handles.h"

#include <stdio.h>
#include <stdlib.h>

#include "stub_lock.h"

struct mana_table mana_tables[MANA_KIND_COUNT];
mana_release_fn *mana_slot_release[MANA_KIND_COUNT];
mana_retain_fn *mana_slot_retain[MANA_KIND_COUNT];
void (*mana_request_retiring)(struct mana_slot *slot, uint32_t index);

void mana_handles_init(void)
{
  for (uint32_t k = 0; k < MANA_KIND_COUNT; k++) {
    mana_tables[k].kind = k;
    if (mana_tables[k].capacity == 0)
      mana_tables[k].free_head = UINT32_MAX;
  }
}

static int grow(struct mana_table *t)
{
  uint32_t chunk = t->capacity >> MANA_CHUNK_SHIFT;
  if (chunk >= MANA_MAX_CHUNKS)
    return -1;
  struct mana_slot *slots = calloc(MANA_CHUNK_SLOTS, sizeof(*slots));
  if (!slots)
    return -1;
  t->chunks[chunk] = slots;
  /* Thread the new slots onto the free list in ascending order so that handles are handed out
   * in the order an application would see from a fresh MPICH. */
  uint32_t base = t->capacity;
  uint32_t first = base == 0 ? mana_reserved_slots((uint32_t)(t - mana_tables)) : 0;
  for (uint32_t i = first; i < MANA_CHUNK_SLOTS; i++)
    slots[i].next_free = (i + 1 < MANA_CHUNK_SLOTS) ? base + i + 1 : t->free_head;
  t->free_head = base + first;
  t->capacity += MANA_CHUNK_SLOTS;
  return 0;
}

uint32_t mana_handle_new(enum mana_kind kind, uint64_t real)
{
  struct mana_table *t = &mana_tables[kind];
  mana_stub_lock_take();
  if (t->capacity == 0)
    t->free_head = UINT32_MAX;
  if (t->free_head == UINT32_MAX && grow(t) != 0) {
    fprintf(stderr, "mana: out of virtual handles of kind %#x (%u in use)\n", kind, t->in_use);
    abort();
  }
  uint32_t index = mana_slot_take(t, real);
  /* Requests, the only kind whose slots are also taken elsewhere, are never handed out again. */
  mana_slot_at(t, index)->shared_refs = 0;
  mana_stub_lock_give();
  return MANA_HANDLE_TAG | ((uint32_t)kind << MANA_HANDLE_KIND_SHIFT) | index;
}

void mana_handle_retire(enum mana_kind kind, uint32_t virt)
{
  struct mana_slot *s = mana_handle_slot(kind, virt);
  if (s)
    mana_handle_retire_slot(kind, s, virt);
}

void mana_handle_retire_slot(enum mana_kind kind, struct mana_slot *s, uint32_t virt)
{
  struct mana_table *t = &mana_tables[kind];
  mana_stub_lock_take();
  if (__builtin_expect(mana_request_retiring != NULL, 0) && kind == MANA_KIND_REQUEST)
    mana_request_retiring(s, virt & MANA_HANDLE_INDEX_MASK);
  if (mana_slot_retain[kind] && mana_slot_retain[kind](s, virt)) {
    mana_stub_lock_give();
    return;
  }
  if (s->meta) { /* most slots (requests) have none: no call on that path */
    if (mana_slot_release[kind])
      mana_slot_release[kind](s);
    else
      free(s->meta);
  }
  mana_slot_put(t, s, virt & MANA_HANDLE_INDEX_MASK);
  mana_stub_lock_give();
}

uint32_t mana_handle_virtual_of(enum mana_kind kind, uint64_t real)
{
  struct mana_table *t = &mana_tables[kind];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & (MANA_SLOT_USED | MANA_SLOT_FREED)) == MANA_SLOT_USED && s->real == real)
      return MANA_HANDLE_TAG | ((uint32_t)kind << MANA_HANDLE_KIND_SHIFT) | i;
  }
  return (uint32_t)real; /* predefined or unknown: the same value on both sides */
}
