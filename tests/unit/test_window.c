/* The window allocator: placement, alignment, reuse of freed ranges, coalescing, exhaustion. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "mana/upper_window.h"

#define BASE 0x600000000000UL
#define MIB (1UL << 20)

static struct mana_window *w;

static void setup(void)
{
  w = calloc(1, sizeof(*w));
  mana_window_init(w, BASE, BASE + 64 * MIB);
}

static void teardown(void)
{
  free(w);
}

TestSuite(window, .init = setup, .fini = teardown);

Test(window, allocates_lowest_first_and_rounds_to_pages)
{
  uint64_t a = mana_window_alloc(w, 1, 0);
  uint64_t b = mana_window_alloc(w, 4097, 0);
  cr_assert_eq(a, BASE);
  cr_assert_eq(b, BASE + 4096);
  cr_assert_eq(mana_window_alloc(w, 4096, 0), BASE + 3 * 4096);
  cr_assert_eq(mana_window_free_bytes(w), 64 * MIB - 4 * 4096);
}

Test(window, honours_alignment)
{
  mana_window_alloc(w, 4096, 0);
  uint64_t a = mana_window_alloc(w, 4096, 2 * MIB);
  cr_assert_eq(a % (2 * MIB), 0);
  cr_assert_eq(a, BASE + 2 * MIB);
  /* The gap below the aligned block is still usable. */
  cr_assert_eq(mana_window_alloc(w, 4096, 0), BASE + 4096);
}

Test(window, reuses_freed_ranges_and_coalesces)
{
  uint64_t a = mana_window_alloc(w, 3 * 4096, 0);
  uint64_t b = mana_window_alloc(w, 4096, 0);
  uint64_t c = mana_window_alloc(w, 4096, 0);
  mana_window_free(w, b, 4096);
  cr_assert_eq(mana_window_alloc(w, 4096, 0), b, "a freed hole is reused first");
  mana_window_free(w, a, 3 * 4096);
  mana_window_free(w, b, 4096);
  /* a and b were adjacent: together they hold a 4-page request. */
  cr_assert_eq(mana_window_alloc(w, 4 * 4096, 0), a);
  mana_window_free(w, c, 4096);
  mana_window_free(w, a, 4 * 4096);
  cr_assert_eq(w->n_free, 1, "everything coalesced back into one extent");
  cr_assert_eq(mana_window_free_bytes(w), 64 * MIB);
}

Test(window, double_free_is_harmless)
{
  uint64_t a = mana_window_alloc(w, 8192, 0);
  mana_window_free(w, a, 8192);
  mana_window_free(w, a, 8192);
  mana_window_free(w, a + 4096, 4096);
  cr_assert_eq(mana_window_free_bytes(w), 64 * MIB);
  cr_assert_eq(w->n_free, 1);
}

Test(window, claim_takes_exact_free_ranges_only)
{
  uint64_t a = mana_window_alloc(w, 4096, 0);
  cr_assert_neq(mana_window_claim(w, a, 4096), 0, "an allocated range cannot be claimed");
  cr_assert_eq(mana_window_claim(w, BASE + 10 * MIB, 3 * 4096), 0);
  cr_assert_neq(mana_window_claim(w, BASE + 10 * MIB + 4096, 4096), 0);
  cr_assert_eq(mana_window_free_bytes(w), 64 * MIB - 4 * 4096);
}

Test(window, reports_exhaustion_and_never_leaves_the_window)
{
  cr_assert_eq(mana_window_alloc(w, 65 * MIB, 0), 0);
  uint64_t a = mana_window_alloc(w, 64 * MIB, 0);
  cr_assert_eq(a, BASE);
  cr_assert_eq(mana_window_alloc(w, 4096, 0), 0);
  mana_window_free(w, BASE - 4096, 8192); /* clipped to the window */
  cr_assert_eq(mana_window_free_bytes(w), 4096);
  cr_assert_eq(mana_window_alloc(w, 4096, 0), BASE);
}

Test(window, survives_heavy_fragmentation)
{
  /* Free every other page of a large run: thousands of extents, then all the rest. */
  enum { N = 4000 };
  uint64_t a = mana_window_alloc(w, N * 4096UL, 0);
  for (uint64_t i = 0; i < N; i += 2)
    mana_window_free(w, a + i * 4096, 4096);
  cr_assert_geq(w->n_free, N / 2);
  for (uint64_t i = 0; i < N / 2; i++)
    cr_assert_neq(mana_window_alloc(w, 4096, 0), 0);
  for (uint64_t i = 0; i < N; i++)
    mana_window_free(w, a + i * 4096, 4096);
  cr_assert_eq(w->n_free, 1);
  cr_assert_eq(mana_window_free_bytes(w), 64 * MIB);
}

Test(window, contains)
{
  cr_assert(mana_window_contains(w, BASE, 64 * MIB));
  cr_assert_not(mana_window_contains(w, BASE - 1, 2));
  cr_assert_not(mana_window_contains(w, BASE + 64 * MIB - 4096, 8192));
  cr_assert_not(mana_window_contains(w, UINT64_MAX - 10, 100));
}
