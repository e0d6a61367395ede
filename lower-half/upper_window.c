/* Window allocator (see window.h for why it is shaped like this). */
#include "mana/upper_window.h"

#define PAGE 4096UL

struct mana_window mana_the_window;

static uint64_t page_up(uint64_t v)
{
  return (v + PAGE - 1) & ~(PAGE - 1);
}

static void lock(struct mana_window *w)
{
  while (__atomic_exchange_n(&w->lock, 1, __ATOMIC_ACQUIRE))
    __builtin_ia32_pause();
}

static void unlock(struct mana_window *w)
{
  __atomic_store_n(&w->lock, 0, __ATOMIC_RELEASE);
}

void mana_window_init(struct mana_window *w, uint64_t base, uint64_t end)
{
  w->base = base;
  w->end = end;
  w->lock = 0;
  w->n_free = 1;
  w->free[0].start = base;
  w->free[0].end = end;
}

static void remove_extent(struct mana_window *w, uint32_t i)
{
  for (uint32_t j = i; j + 1 < w->n_free; j++)
    w->free[j] = w->free[j + 1];
  w->n_free--;
}

static int insert_extent(struct mana_window *w, uint32_t i, uint64_t start, uint64_t end)
{
  if (w->n_free == MANA_WINDOW_MAX_EXTENTS)
    return -1;
  for (uint32_t j = w->n_free; j > i; j--)
    w->free[j] = w->free[j - 1];
  w->free[i].start = start;
  w->free[i].end = end;
  w->n_free++;
  return 0;
}

/* Removes [start, end) from free extent i, which contains it. */
static int carve(struct mana_window *w, uint32_t i, uint64_t start, uint64_t end)
{
  struct mana_extent e = w->free[i];
  if (e.start == start && e.end == end) {
    remove_extent(w, i);
    return 0;
  }
  if (e.start == start) {
    w->free[i].start = end;
    return 0;
  }
  if (e.end == end) {
    w->free[i].end = start;
    return 0;
  }
  if (insert_extent(w, i + 1, end, e.end) != 0)
    return -1; /* too fragmented to split: the caller fails the request */
  w->free[i].end = start;
  return 0;
}

uint64_t mana_window_alloc(struct mana_window *w, uint64_t len, uint64_t align)
{
  if (len == 0)
    return 0;
  len = page_up(len);
  if (align < PAGE)
    align = PAGE;
  uint64_t result = 0;
  lock(w);
  for (uint32_t i = 0; i < w->n_free; i++) {
    uint64_t start = (w->free[i].start + align - 1) & ~(align - 1);
    if (start < w->free[i].start || start + len > w->free[i].end || start + len < start)
      continue;
    if (carve(w, i, start, start + len) == 0)
      result = start;
    break;
  }
  unlock(w);
  return result;
}

int mana_window_claim(struct mana_window *w, uint64_t start, uint64_t len)
{
  uint64_t end = start + page_up(len);
  int rc = -1;
  lock(w);
  for (uint32_t i = 0; i < w->n_free; i++) {
    if (w->free[i].start <= start && end <= w->free[i].end) {
      rc = carve(w, i, start, end);
      break;
    }
  }
  unlock(w);
  return rc;
}

void mana_window_free(struct mana_window *w, uint64_t start, uint64_t len)
{
  uint64_t end = start + page_up(len);
  if (start < w->base)
    start = w->base;
  if (end > w->end)
    end = w->end;
  if (start >= end)
    return;
  lock(w);
  /* Merge with every free extent it touches or overlaps, then insert in order. */
  uint32_t i = 0;
  while (i < w->n_free && w->free[i].end < start)
    i++;
  while (i < w->n_free && w->free[i].start <= end) {
    if (w->free[i].start < start)
      start = w->free[i].start;
    if (w->free[i].end > end)
      end = w->free[i].end;
    remove_extent(w, i);
  }
  /* With the table full and nothing merged, the range stays reserved but unusable: a leak of
   * address space, never of memory, and never a hole the lower half could take. */
  (void)insert_extent(w, i, start, end);
  unlock(w);
}

uint64_t mana_window_free_bytes(struct mana_window *w)
{
  uint64_t sum = 0;
  lock(w);
  for (uint32_t i = 0; i < w->n_free; i++)
    sum += w->free[i].end - w->free[i].start;
  unlock(w);
  return sum;
}

int mana_window_contains(const struct mana_window *w, uint64_t start, uint64_t len)
{
  return start >= w->base && start + len <= w->end && start + len >= start;
}
