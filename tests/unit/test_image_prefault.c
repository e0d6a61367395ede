/* The helper that faults a restored region's pages in ahead of the reads: it touches exactly
 * the extents it was given, and a big region restored with it (or without it) comes back
 * byte for byte with the pages the image does not store still unallocated. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "image_prefault.h"
#include "test_image_helpers.h"

#define MIB (1UL << 20)

/* Waits until the helper has faulted `bytes` in, or fails saying how far it got. The limit
 * only ends a hung test; a loaded machine takes a small fraction of it. */
static void wait_done(struct img_prefault *pf, uint64_t bytes)
{
  struct timespec tick = {0, 1000000};
  for (int ms = 0; ms < 120000 && atomic_load(&pf->done) < bytes; ms++)
    nanosleep(&tick, NULL);
  cr_assert_eq(atomic_load(&pf->done), bytes, "the helper faulted %llu of %llu bytes in 120 s",
               (unsigned long long)atomic_load(&pf->done), (unsigned long long)bytes);
}

static int count_threads(void)
{
  DIR *d = opendir("/proc/self/task");
  cr_assert_not_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void assert_resident(const char *base, size_t from_page, size_t to_page, int want)
{
  for (size_t p = from_page; p < to_page; p++)
    cr_assert_eq(page_resident(base + p * PAGE), want, "page %zu: resident %d, expected %d", p,
                 !want, want);
}

Test(image_prefault, faults_in_exactly_the_planned_extents)
{
  size_t len = 8 * MIB;
  char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(base, MAP_FAILED);
  struct img_prefault *pf = img_prefault_open();
  cr_assert_not_null(pf);
  /* Extents as a restore plans them: in file order, adjacent ones merged. */
  cr_assert_eq(img_prefault_add(pf, base, MIB / 2), 0);
  cr_assert_eq(img_prefault_add(pf, base + MIB / 2, MIB / 2), 0);
  cr_assert_eq(img_prefault_add(pf, base + 3 * MIB + 5 * PAGE, PAGE), 0);
  cr_assert_eq(img_prefault_add(pf, base + 5 * MIB, 3 * MIB), 0);
  cr_assert_eq(pf->count, 3, "adjacent extents are one");
  cr_assert(img_prefault_start(pf), "the helper walks the plan");
  wait_done(pf, MIB + PAGE + 3 * MIB);
  img_prefault_finish(pf);
  cr_assert_eq(pf->count, 0, "finish forgets the plan");
  size_t mib_pages = MIB / PAGE;
  assert_resident(base, 0, mib_pages, 1);
  assert_resident(base, mib_pages, 3 * mib_pages + 5, 0);
  assert_resident(base, 3 * mib_pages + 5, 3 * mib_pages + 6, 1);
  assert_resident(base, 3 * mib_pages + 6, 5 * mib_pages, 0);
  assert_resident(base, 5 * mib_pages, 8 * mib_pages, 1);

  /* The same thread takes the next plan. */
  cr_assert_eq(img_prefault_add(pf, base + 2 * MIB, PAGE), 0);
  cr_assert(img_prefault_start(pf));
  wait_done(pf, PAGE);
  img_prefault_finish(pf);
  assert_resident(base, 2 * mib_pages, 2 * mib_pages + 1, 1);
  assert_resident(base, 2 * mib_pages + 1, 3 * mib_pages + 5, 0);
  img_prefault_close(pf);
  munmap(base, len);
}

Test(image_prefault, an_empty_plan_or_the_environment_keeps_it_off)
{
  struct img_prefault *pf = img_prefault_open();
  cr_assert_not_null(pf);
  cr_assert_not(img_prefault_start(pf), "nothing to do: no walk");
  img_prefault_finish(pf);
  char page[PAGE];
  cr_assert_eq(img_prefault_add(pf, page, PAGE), 0);
  setenv("MANA_IMAGE_PREFAULT", "0", 1);
  cr_assert_not(img_prefault_start(pf), "MANA_IMAGE_PREFAULT=0: no walk");
  img_prefault_finish(pf);
  unsetenv("MANA_IMAGE_PREFAULT");
  img_prefault_close(pf);
}

/* A region big enough for the helper (its stored pages alone are over IMG_PREFAULT_MIN), with
 * holes: 40 MiB of data at the start, one page in the middle, 30 MiB at the end. */
#define BIG (128 * MIB)
#define HEAD (40 * MIB)
#define TAIL (30 * MIB)
_Static_assert(HEAD + TAIL >= IMG_PREFAULT_MIN, "the helper must be planned");

static void restore_big_region(const char *prefault)
{
  struct tmpdir dir;
  tmpdir_make(&dir);
  char *base = reserve(BIG);
  map_rw_at(base, BIG);
  fill_random(base, HEAD, 1);
  fill_random(base + BIG / 2, PAGE, 2);
  fill_random(base + BIG - TAIL, TAIL, 3);
  char *expect = malloc(HEAD + PAGE + TAIL);
  cr_assert_not_null(expect);
  memcpy(expect, base, HEAD);
  memcpy(expect + HEAD, base + BIG / 2, PAGE);
  memcpy(expect + HEAD + PAGE, base + BIG - TAIL, TAIL);

  char err[512];
  struct mana_image_writer *w;
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "big.img", &info, err, sizeof(err)), 0, "%s",
               err);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)base, BIG, PROT_READ | PROT_WRITE, 0, "big"), 0,
               "%s", mana_image_writer_error(w));
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, BIG);

  setenv("MANA_IMAGE_PREFAULT", prefault, 1);
  struct mana_image_reader *r;
  cr_assert_eq(mana_image_open(&r, dir.fd, "big.img", NULL, err, sizeof(err)), 0, "%s", err);
  /* The reader's threads exist from the first verify on: a restore starts none, whose stack
   * could land where a region still to be restored belongs. */
  int before = count_threads();
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
  int threads = count_threads();
  cr_assert_eq(threads, before + 2, "the reader's worker and its prefault helper");
  cr_assert_eq(mana_image_restore_region(r, 0, MAP_FIXED, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(count_threads(), threads, "the restore started no thread");
  mana_image_close(r);
  unsetenv("MANA_IMAGE_PREFAULT");

  cr_assert_eq(memcmp(base, expect, HEAD), 0, "the head");
  cr_assert_eq(memcmp(base + BIG / 2, expect + HEAD, PAGE), 0, "the page in the middle");
  cr_assert_eq(memcmp(base + BIG - TAIL, expect + HEAD + PAGE, TAIL), 0, "the tail");
  size_t pages = BIG / PAGE, head = HEAD / PAGE, tail = TAIL / PAGE;
  assert_resident(base, 0, head, 1);
  assert_resident(base, head, pages / 2, 0);
  assert_resident(base, pages / 2, pages / 2 + 1, 1);
  assert_resident(base, pages / 2 + 1, pages - tail, 0);
  assert_resident(base, pages - tail, pages, 1);
  free(expect);
  munmap(base, BIG);
  tmpdir_remove(&dir);
}

Test(image_prefault, a_big_region_comes_back_with_its_holes_unallocated)
{
  restore_big_region("1");
}

Test(image_prefault, the_same_without_the_helper)
{
  restore_big_region("0");
}
