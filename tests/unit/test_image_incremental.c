/* Incremental images: a generation written against a base stores only the pages that
 * changed and refers to the rest where it is stored; a restore reads every page from the
 * image that holds it and checks it against the newest image's page hashes. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_image_helpers.h"

#define NPAGES 64
#define REGION_LEN (NPAGES * PAGE)

static struct tmpdir dir;
static char *mem;    /* the live region, inside a reservation of 2 * REGION_LEN */
static char *expect; /* what it held at the last write */

static void name_of(uint64_t gen, char *out, size_t len)
{
  snprintf(out, len, "gen%llu.img", (unsigned long long)gen);
}

static struct mana_image_reader *open_gen(uint64_t gen)
{
  char name[32], err[1024];
  struct mana_image_reader *r;
  name_of(gen, name, sizeof(name));
  cr_assert_eq(mana_image_open(&r, dir.fd, name, NULL, err, sizeof(err)), 0, "%s", err);
  return r;
}

static int resolve(void *arg, uint64_t gen, struct mana_image_reader **base, char *err,
                   size_t errlen)
{
  (void)arg;
  char name[32];
  name_of(gen, name, sizeof(name));
  return mana_image_open(base, dir.fd, name, NULL, err, errlen);
}

/* Writes generation `gen` of `mem` (rank 3), against base generation `base` (0: none). */
static struct mana_image_stats write_gen(uint64_t gen, uint64_t base_gen, uint64_t *size)
{
  char name[32], err[1024];
  name_of(gen, name, sizeof(name));
  struct mana_image_info info = test_info();
  info.generation = gen;
  struct mana_image_writer *w;
  struct mana_image_reader *base = base_gen ? open_gen(base_gen) : NULL;
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, name, &info, err, sizeof(err)), 0, "%s", err);
  if (base)
    cr_assert_eq(mana_image_writer_set_base(w, base, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)mem, REGION_LEN, PROT_READ | PROT_WRITE, 0, "data"), 0,
      "%s", mana_image_writer_error(w));
  cr_assert_eq(mana_image_add_blob(w, 1, "blob", 4), 0);
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(mana_image_writer_commit(w, size, NULL, err, sizeof(err)), 0, "%s", err);
  mana_image_close(base);
  memcpy(expect, mem, REGION_LEN);
  return st;
}

static void setup(void)
{
  tmpdir_make(&dir);
  char *res = reserve(2 * REGION_LEN);
  mem = map_rw_at(res, REGION_LEN);
  expect = malloc(REGION_LEN);
  /* Pages 0-47 data, 48-55 zero but touched, 56-63 never touched. */
  for (int i = 0; i < 48; i++)
    fill_random(mem + i * PAGE, PAGE, 1000 + (uint64_t)i);
  memset(mem + 48 * PAGE, 0, 8 * PAGE);
}

static void teardown(void)
{
  munmap(mem, 2 * REGION_LEN);
  free(expect);
  tmpdir_remove(&dir);
}

TestSuite(image_incremental, .init = setup, .fini = teardown);

/* Restores generation gen over `mem` (its range given back first) and compares. */
static void restore_and_compare(uint64_t gen)
{
  char err[1024];
  struct mana_image_reader *r = open_gen(gen);
  mana_image_set_resolver(r, resolve, NULL);
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
  rereserve(mem, REGION_LEN);
  cr_assert_eq(mana_image_restore_region(r, 0, MAP_FIXED, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(memcmp(mem, expect, REGION_LEN), 0, "generation %llu restored other content",
               (unsigned long long)gen);
  mana_image_close(r);
}

Test(image_incremental, unchanged_pages_are_referred_to_where_they_are_stored)
{
  uint64_t size1, size2, size3;
  struct mana_image_stats s1 = write_gen(1, 0, &size1);
  cr_assert_eq(s1.pages_saved, 48);
  cr_assert_eq(s1.pages_referenced, 0);
  cr_assert_eq(s1.oldest_generation, 1);

  /* Three pages change, one becomes zero. */
  fill_random(mem + 3 * PAGE, PAGE, 7);
  fill_random(mem + 4 * PAGE, PAGE, 8);
  fill_random(mem + 40 * PAGE, PAGE, 9);
  memset(mem + 20 * PAGE, 0, PAGE);
  struct mana_image_stats s2 = write_gen(2, 1, &size2);
  cr_assert_eq(s2.pages_saved, 3, "changed pages stored: %llu", (unsigned long long)s2.pages_saved);
  cr_assert_eq(s2.pages_referenced, 44);
  /* 0-2, 5-19, 21-39, 41-47 */
  cr_assert_eq(s2.refs, 4);
  cr_assert_eq(s2.oldest_generation, 1);
  cr_assert_lt(size2, size1 / 4, "incremental image of %llu bytes, full one %llu",
               (unsigned long long)size2, (unsigned long long)size1);

  /* Page 3 changes again, page 10 changes: page 4 and 40 now live in generation 2. */
  fill_random(mem + 3 * PAGE, PAGE, 10);
  fill_random(mem + 10 * PAGE, PAGE, 11);
  struct mana_image_stats s3 = write_gen(3, 2, &size3);
  cr_assert_eq(s3.pages_saved, 2);
  cr_assert_eq(s3.pages_referenced, 45);
  cr_assert_eq(s3.oldest_generation, 1);

  struct mana_image_reader *r = open_gen(3);
  cr_assert_eq(mana_image_oldest_generation(r), 1);
  cr_assert_eq(mana_image_referenced_pages(r), 45);
  mana_image_close(r);
  restore_and_compare(3);
  restore_and_compare(3); /* the base images are opened afresh by a new reader */
}

Test(image_incremental, an_unchanged_memory_writes_no_page)
{
  uint64_t size1, size2;
  write_gen(1, 0, &size1);
  struct mana_image_stats s = write_gen(2, 1, &size2);
  cr_assert_eq(s.pages_saved, 0);
  cr_assert_eq(s.pages_referenced, 48);
  cr_assert_eq(s.refs, 1, "one reference covers the one run of generation 1");
  cr_assert_lt(size2, 2 * PAGE, "%llu bytes", (unsigned long long)size2);
  restore_and_compare(2);
}

Test(image_incremental, a_damaged_page_in_an_older_image_is_found_and_named)
{
  uint64_t size;
  write_gen(1, 0, &size);
  fill_random(mem, PAGE, 5);
  write_gen(2, 1, &size);
  /* Page 30 is kept in generation 1: damage it there. */
  /* Generation 1's region is its first data: pages 0-47 back to back from the data area. */
  uint64_t page30 = IMG_DATA_START + 30 * PAGE;
  char name[32], err[1024], want[128];
  name_of(1, name, sizeof(name));
  int fd = openat(dir.fd, name, O_RDWR);
  cr_assert_geq(fd, 0);
  char c;
  cr_assert_eq(pread(fd, &c, 1, (off_t)page30 + 100), 1);
  c ^= 0x40;
  cr_assert_eq(pwrite(fd, &c, 1, (off_t)page30 + 100), 1);
  close(fd);

  struct mana_image_reader *r = open_gen(2);
  mana_image_set_resolver(r, resolve, NULL);
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1);
  cr_assert_eq(errno, EBADMSG);
  snprintf(want, sizeof(want), "page 30 (kept in generation 1's image at offset %llu) is damaged",
           (unsigned long long)page30);
  cr_assert(strstr(err, want), "got: %s", err);
  mana_image_close(r);
}

Test(image_incremental, a_replaced_older_image_is_refused)
{
  uint64_t size;
  write_gen(1, 0, &size);
  fill_random(mem, PAGE, 5);
  write_gen(2, 1, &size);
  /* Another generation 1, written again with the same content: another digest (its time). */
  memcpy(mem, expect, REGION_LEN);
  fill_random(mem + 47 * PAGE, PAGE, 6);
  write_gen(1, 0, &size);
  struct mana_image_reader *r = open_gen(2);
  mana_image_set_resolver(r, resolve, NULL);
  char err[1024];
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1);
  cr_assert_eq(errno, ESTALE);
  cr_assert(strstr(err, "wants rank 3's image of generation 1 with digest"), "got: %s", err);
  cr_assert(strstr(err, "(replaced since?)"), "got: %s", err);
  mana_image_close(r);
}

Test(image_incremental, without_a_resolver_the_older_pages_cannot_be_read)
{
  uint64_t size;
  write_gen(1, 0, &size);
  write_gen(2, 1, &size);
  struct mana_image_reader *r = open_gen(2);
  char err[1024];
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1);
  cr_assert(strstr(err, "gen2.img: refers to pages kept in generation 1, and nothing says where"),
            "got: %s", err);
  mana_image_close(r);
}

Test(image_incremental, a_base_of_another_rank_or_a_newer_generation_is_refused)
{
  uint64_t size;
  write_gen(5, 0, &size);
  char err[1024];
  struct mana_image_reader *base = open_gen(5);
  struct mana_image_writer *w;
  struct mana_image_info info = test_info();
  info.generation = 4;
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "x.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_writer_set_base(w, base, err, sizeof(err)), -1);
  cr_assert_str_eq(err, "x.img: gen5.img cannot be its base: it is not of an older generation");
  mana_image_writer_abort(w);
  info.generation = 6;
  info.rank = 2;
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "x.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_writer_set_base(w, base, err, sizeof(err)), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_str_eq(err, "x.img: gen5.img cannot be its base: it is of another rank or world size");
  /* The writer goes on as a full image. */
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)mem, REGION_LEN, PROT_READ | PROT_WRITE, 0, "data"), 0);
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.pages_saved, 48);
  mana_image_writer_abort(w);
  mana_image_close(base);
}

/* An image of format version 1 (no reference or page hash table), as mana 0.1 wrote them,
 * made from a version 2 image by dropping its last two tables. */
Test(image_incremental, a_version_1_image_still_restores)
{
  uint64_t size;
  write_gen(1, 0, &size);
  struct img_header h = read_header(&dir, "gen1.img");
  h.version = 1;
  h.file_size = h.refs.offset;
  memset(&h.refs, 0, sizeof(h.refs));
  memset(&h.page_hashes, 0, sizeof(h.page_hashes));
  write_header(&dir, "gen1.img", &h, 1);
  truncate_file(&dir, "gen1.img", h.file_size);
  restore_and_compare(1);
  /* and it cannot serve as a base: it records no page hashes */
  struct mana_image_reader *base = open_gen(1);
  struct mana_image_writer *w;
  struct mana_image_info info = test_info();
  char err[512];
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "x.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_writer_set_base(w, base, err, sizeof(err)), -1);
  cr_assert(strstr(err, "format version 1, which records no page hashes"), "got: %s", err);
  mana_image_writer_abort(w);
  mana_image_close(base);
}
