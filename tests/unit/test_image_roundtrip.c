/* Image round trips: what is written comes back byte for byte, at the same address, with its
 * protection, and pages that were not saved stay untouched after the restore. */
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

static struct tmpdir dir;

static void setup(void)
{
  tmpdir_make(&dir);
}

static void teardown(void)
{
  tmpdir_remove(&dir);
}

TestSuite(image_roundtrip, .init = setup, .fini = teardown);

static struct mana_image_reader *open_ok(const char *name, struct mana_image_info *info)
{
  struct mana_image_reader *r;
  char err[512];
  cr_assert_eq(mana_image_open(&r, dir.fd, name, info, err, sizeof(err)), 0, "%s", err);
  return r;
}

static void restore_ok(struct mana_image_reader *r, size_t i, int extra)
{
  char err[512];
  cr_assert_eq(mana_image_restore_region(r, i, extra, err, sizeof(err)), 0, "%s", err);
}

Test(image_roundtrip, mixed_content_comes_back_and_unsaved_pages_stay_untouched)
{
  struct std_image img;
  write_std_image(&dir, "rank-0003.img", &img);

  struct mana_image_info info;
  struct mana_image_reader *r = open_ok("rank-0003.img", &info);
  cr_assert_eq(mana_image_digest(r), img.digest);
  cr_assert_eq(mana_image_region_count(r), 2);
  restore_ok(r, 0, MAP_FIXED);
  restore_ok(r, 1, MAP_FIXED);
  /* Zero (Z) and untouched (U) pages of the pattern were not saved, so they are not even
   * faulted in by the restore; data pages (D) are. (Checked before anything reads them.) */
  cr_assert(page_resident(img.base + 0 * PAGE));
  cr_assert_not(page_resident(img.base + 3 * PAGE), "zero page faulted in");
  cr_assert_not(page_resident(img.base + 4 * PAGE), "untouched page faulted in");
  cr_assert_eq(memcmp(img.base, img.expect, img.region0_len), 0);
  char expect1[3 * PAGE];
  fill_random(expect1, sizeof(expect1), 99);
  cr_assert_eq(memcmp(img.base + 48 * PAGE, expect1, sizeof(expect1)), 0);
  cr_assert_str_eq(maps_perms(img.base), "rw-p");
  cr_assert_str_eq(maps_perms(img.base + 48 * PAGE), "r--p");
  mana_image_close(r);
  free_std_image(&img);
}

Test(image_roundtrip, header_info_and_region_table)
{
  struct std_image img;
  write_std_image(&dir, "rank-0003.img", &img);
  struct mana_image_info info, want = test_info();
  struct mana_image_reader *r = open_ok("rank-0003.img", &info);
  cr_assert_eq(info.rank, 3);
  cr_assert_eq(info.world_size, 8);
  cr_assert_eq(info.generation, 42);
  cr_assert_eq(info.window_base, want.window_base);
  cr_assert_eq(info.window_end, want.window_end);
  cr_assert_eq(info.vdso_base, want.vdso_base);
  cr_assert_eq(info.thread_level, 2);
  cr_assert_eq(info.created_unix_ns, want.created_unix_ns);
  cr_assert_str_eq(info.hostname, "node-17");
  cr_assert_str_eq(info.kernel_release, "6.1.0-test");

  uint64_t start, len;
  uint32_t prot, flags;
  const char *label;
  cr_assert_eq(mana_image_region_info(r, 1, &start, &len, &prot, &flags, &label), 0);
  cr_assert_eq(start, (uintptr_t)img.base + 48 * PAGE);
  cr_assert_eq(len, 3 * PAGE);
  cr_assert_eq(prot, PROT_READ);
  cr_assert_eq(flags, 0x10000, "the caller's flag bits come back");
  cr_assert_str_eq(label, "readonly");
  cr_assert_eq(mana_image_region_info(r, 2, NULL, NULL, NULL, NULL, NULL), -1);
  mana_image_close(r);
  free_std_image(&img);
}

Test(image_roundtrip, empty_info_fields_are_filled_from_this_process)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = {.rank = 1, .world_size = 2};
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "a.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  struct mana_image_reader *r = open_ok("a.img", &info);
  char host[128];
  gethostname(host, sizeof(host));
  cr_assert_str_eq(info.hostname, host);
  cr_assert_neq(info.kernel_release[0], '\0');
  cr_assert_neq(info.vdso_base, 0);
  cr_assert_gt(info.created_unix_ns, 1600000000000000000);
  cr_assert_eq(mana_image_region_count(r), 0);
  mana_image_close(r);
}

Test(image_roundtrip, blobs_by_type_and_in_order)
{
  struct std_image img;
  write_std_image(&dir, "b.img", &img);
  struct mana_image_reader *r = open_ok("b.img", NULL);
  const void *data;
  size_t len;
  uint32_t type;
  cr_assert_eq(mana_image_blob_count(r), 2);
  cr_assert_eq(mana_image_blob(r, STD_BLOB_TYPE, &data, &len), 0);
  cr_assert_eq(len, 10);
  cr_assert_eq(memcmp(data, "hello blob", 10), 0);
  cr_assert_eq(mana_image_blob_at(r, 1, &type, &data, &len), 0);
  cr_assert_eq(type, 8);
  cr_assert_eq(memcmp(data, "second", 6), 0);
  errno = 0;
  cr_assert_eq(mana_image_blob(r, 1234, &data, &len), -1);
  cr_assert_eq(errno, ENOENT);
  mana_image_close(r);
  free_std_image(&img);
}

Test(image_roundtrip, repeated_and_empty_blobs)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "c.img", &info, err, sizeof(err)), 0);
  static char big[100000];
  fill_random(big, sizeof(big), 5);
  cr_assert_eq(mana_image_add_blob(w, 1, "t0", 2), 0);
  cr_assert_eq(mana_image_add_blob(w, 1, "t1", 2), 0);
  cr_assert_eq(mana_image_add_blob(w, 2, NULL, 0), 0);
  cr_assert_eq(mana_image_add_blob(w, 3, big, sizeof(big)), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  struct mana_image_reader *r = open_ok("c.img", NULL);
  const void *data;
  size_t len;
  cr_assert_eq(mana_image_blob_at(r, 1, NULL, &data, &len), 0);
  cr_assert_eq(memcmp(data, "t1", 2), 0);
  cr_assert_eq(mana_image_blob(r, 2, &data, &len), 0);
  cr_assert_eq(len, 0);
  cr_assert_eq(mana_image_blob(r, 3, &data, &len), 0);
  cr_assert_eq(len, sizeof(big));
  cr_assert_eq(memcmp(data, big, sizeof(big)), 0);
  /* every blob of a type, in order, and none of a type not there */
  size_t at = 0, seen = 0;
  while (mana_image_next_blob(r, 1, &at, &data, &len)) {
    cr_assert_eq(len, 2);
    cr_assert_eq(memcmp(data, seen ? "t1" : "t0", 2), 0);
    seen++;
  }
  cr_assert_eq(seen, 2);
  at = 0;
  cr_assert_eq(mana_image_next_blob(r, 4, &at, &data, &len), 0);
  mana_image_close(r);
}

Test(image_roundtrip, length_is_rounded_up_to_whole_pages)
{
  char *base = reserve(8 * PAGE);
  char *p = map_rw_at(base, 3 * PAGE);
  fill_random(p, 3 * PAGE, 11);
  char expect[3 * PAGE];
  memcpy(expect, p, sizeof(expect));
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "d.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)p, 2 * PAGE + 100, PROT_READ | PROT_WRITE, 0, "odd"), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 8 * PAGE);

  struct mana_image_reader *r = open_ok("d.img", NULL);
  uint64_t len;
  cr_assert_eq(mana_image_region_info(r, 0, NULL, &len, NULL, NULL, NULL), 0);
  cr_assert_eq(len, 3 * PAGE, "2 pages + 100 bytes is rounded to 3 pages");
  restore_ok(r, 0, MAP_FIXED);
  cr_assert_eq(memcmp(p, expect, sizeof(expect)), 0, "the whole last page is kept");
  mana_image_close(r);
}

Test(image_roundtrip, protections_come_back_and_unreadable_regions_are_saved)
{
  char *base = reserve(16 * PAGE);
  char *ro = map_rw_at(base, 2 * PAGE), *rx = map_rw_at(base + 4 * PAGE, PAGE);
  char *none = map_rw_at(base + 8 * PAGE, 2 * PAGE);
  fill_random(ro, 2 * PAGE, 1);
  fill_random(rx, PAGE, 2);
  fill_random(none, 2 * PAGE, 3);
  cr_assert_eq(mprotect(ro, 2 * PAGE, PROT_READ), 0);
  cr_assert_eq(mprotect(rx, PAGE, PROT_READ | PROT_EXEC), 0);
  cr_assert_eq(mprotect(none, 2 * PAGE, PROT_NONE), 0);

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "e.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)ro, 2 * PAGE, PROT_READ, 0, "ro"), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)rx, PAGE, PROT_READ | PROT_EXEC, 0, "rx"), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)none, 2 * PAGE, PROT_NONE, 0, "none"), 0, "%s",
               mana_image_writer_error(w));
  cr_assert_str_eq(maps_perms(none), "---p", "the writer puts PROT_NONE back");
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.pages_saved, 5, "the PROT_NONE pages held data and were saved");
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 16 * PAGE);

  struct mana_image_reader *r = open_ok("e.img", NULL);
  for (size_t i = 0; i < 3; i++)
    restore_ok(r, i, MAP_FIXED);
  cr_assert_str_eq(maps_perms(ro), "r--p");
  cr_assert_str_eq(maps_perms(rx), "r-xp");
  cr_assert_str_eq(maps_perms(none), "---p");
  char expect[2 * PAGE];
  fill_random(expect, 2 * PAGE, 1);
  cr_assert_eq(memcmp(ro, expect, 2 * PAGE), 0);
  cr_assert_eq(mprotect(none, 2 * PAGE, PROT_READ), 0);
  fill_random(expect, 2 * PAGE, 3);
  cr_assert_eq(memcmp(none, expect, 2 * PAGE), 0);
  mana_image_close(r);
}

Test(image_roundtrip, file_backed_pages_are_read_with_scan_all)
{
  char path[300];
  snprintf(path, sizeof(path), "%s/backing", dir.path);
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  static char content[4 * PAGE];
  fill_random(content, sizeof(content), 21);
  cr_assert_eq(write(fd, content, sizeof(content)), (ssize_t)sizeof(content));
  char *base = reserve(8 * PAGE);
  /* Mapped but never touched: the page table has nothing, the file has everything. */
  char *p = mmap(base, 4 * PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  cr_assert_eq(p, base);
  close(fd);

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "f.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)p, 4 * PAGE, PROT_READ,
                                     MANA_IMAGE_REGION_SCAN_ALL, "file"),
               0);
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.pages_saved, 4);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 8 * PAGE);
  struct mana_image_reader *r = open_ok("f.img", NULL);
  restore_ok(r, 0, MAP_FIXED);
  cr_assert_eq(memcmp(p, content, sizeof(content)), 0);
  mana_image_close(r);
}

Test(image_roundtrip, stats_progress_and_sparse_regions)
{
  /* 1 GiB of address space with 3 pages of data: the image holds those 3 pages. */
  size_t big = 1UL << 30;
  char *base = reserve(big);
  char *p = map_rw_at(base, big);
  fill_random(p + 5 * PAGE, PAGE, 1);
  fill_random(p + 100000 * PAGE, 2 * PAGE, 2);
  memset(p + 7 * PAGE, 0, PAGE); /* present, zero */

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "g.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)p, big, PROT_READ | PROT_WRITE, 0, "big"), 0);
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.pages, big / PAGE);
  cr_assert_eq(st.pages_saved, 3);
  cr_assert_eq(st.pages_zero, 1);
  cr_assert_eq(st.pages_absent, big / PAGE - 4);
  cr_assert_eq(st.runs, 2);
  uint64_t progress;
  mana_image_progress(w, &progress);
  cr_assert_eq(progress, 3 * PAGE);
  uint64_t size;
  cr_assert_eq(mana_image_writer_commit(w, &size, NULL, err, sizeof(err)), 0, "%s", err);
  cr_assert_leq(size, 4 * PAGE + 3 * PAGE + 1024, "image of %lu bytes", (unsigned long)size);
  rereserve(base, big);

  struct mana_image_reader *r = open_ok("g.img", NULL);
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
  restore_ok(r, 0, MAP_FIXED | MAP_NORESERVE);
  char expect[2 * PAGE];
  fill_random(expect, PAGE, 1);
  cr_assert_eq(memcmp(p + 5 * PAGE, expect, PAGE), 0);
  fill_random(expect, 2 * PAGE, 2);
  cr_assert_eq(memcmp(p + 100000 * PAGE, expect, 2 * PAGE), 0);
  cr_assert_not(page_resident(p + 7 * PAGE));
  mana_image_close(r);
}

Test(image_roundtrip, run_budget_fills_holes_instead_of_growing)
{
  char *base = reserve(32 * PAGE);
  char *p = map_rw_at(base, 32 * PAGE);
  static char expect[32 * PAGE];
  for (size_t i = 0; i < 32; i += 2) /* data on even pages, odd pages untouched */
    fill_random(expect + i * PAGE, PAGE, i + 1);
  for (size_t i = 0; i < 32; i += 2)
    memcpy(p + i * PAGE, expect + i * PAGE, PAGE);

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "h.img", &info, err, sizeof(err)), 0);
  mana_image_writer_set_run_budget(w, 3);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)p, 32 * PAGE, PROT_READ | PROT_WRITE, 0, "striped"), 0);
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.runs, 3, "runs: %lu", (unsigned long)st.runs);
  cr_assert_eq(st.pages_saved, 16);
  cr_assert_eq(st.pages_filler, 31 - 16 - 2, "holes after the budget ran out are filled");
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 32 * PAGE);
  struct mana_image_reader *r = open_ok("h.img", NULL);
  restore_ok(r, 0, MAP_FIXED);
  cr_assert_eq(memcmp(p, expect, sizeof(expect)), 0);
  mana_image_close(r);
}

Test(image_roundtrip, commit_hash_is_the_digest_and_verify_passes)
{
  struct std_image img;
  write_std_image(&dir, "i.img", &img);
  struct mana_image_reader *r = open_ok("i.img", NULL);
  char err[512];
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(mana_image_digest(r), img.digest);
  cr_assert_eq(read_header(&dir, "i.img").file_size, img.file_size);
  mana_image_close(r);
  free_std_image(&img);
}

Test(image_roundtrip, bad_region_arguments_are_refused_and_poison_the_writer)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "j.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, 0x600000000100, PAGE, PROT_READ, 0, "crooked"), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_str_eq(mana_image_writer_error(w),
                   "j.img.tmp: region 'crooked' at 0x600000000100: start is not page-aligned");
  cr_assert_eq(mana_image_add_blob(w, 1, "x", 1), -1);
  cr_assert_eq(errno, ECANCELED);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), -1);
  cr_assert_str_eq(err,
                   "j.img.tmp: region 'crooked' at 0x600000000100: start is not "
                   "page-aligned",
                   "commit reports the first error");
  cr_assert_eq(tmpdir_count(&dir), 0, "a failed commit leaves nothing behind");
}

Test(image_roundtrip, unknown_flags_are_refused)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "k.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, 0x600000000000, PAGE, PROT_READ, 0x4, "x"), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert(strstr(mana_image_writer_error(w), "unknown flags 0x4"));
  mana_image_writer_abort(w);
}

Test(image_roundtrip, untouched_regions_store_nothing_and_come_back_empty)
{
  char *base = reserve(64 * PAGE);
  char *rw = map_rw_at(base, 16 * PAGE); /* mapped, never touched */
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "u.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)rw, 16 * PAGE, PROT_READ | PROT_WRITE, 0, "empty"), 0);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)base + 32 * PAGE, 32 * PAGE, PROT_NONE, 0, "guard"), 0,
      "%s", mana_image_writer_error(w));
  struct mana_image_stats st;
  mana_image_writer_stats(w, &st);
  cr_assert_eq(st.pages_saved + st.runs, 0);
  cr_assert_eq(st.pages_absent, 48);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 64 * PAGE);
  struct mana_image_reader *r = open_ok("u.img", NULL);
  restore_ok(r, 0, MAP_FIXED);
  restore_ok(r, 1, MAP_FIXED);
  cr_assert_not(page_resident(rw));
  cr_assert_str_eq(maps_perms(rw), "rw-p");
  cr_assert_str_eq(maps_perms(base + 40 * PAGE), "---p");
  cr_assert_eq(rw[5 * PAGE], 0);
  mana_image_close(r);
}

/* A snapshot region is saved as it was when add_region copied it; the flag is not stored. */
Test(image_roundtrip, snapshot_region_saves_one_instant_and_is_not_flagged)
{
  char *base = reserve(8 * PAGE);
  char *p = map_rw_at(base, 4 * PAGE);
  fill_random(p, 2 * PAGE, 21);
  memset(p + 2 * PAGE, 0, 2 * PAGE);
  char expect[4 * PAGE];
  memcpy(expect, p, sizeof(expect));
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "s.img", &info, err, sizeof(err)), 0);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)p, 4 * PAGE, PROT_READ | PROT_WRITE,
                                     MANA_IMAGE_REGION_SNAPSHOT, "control"),
               0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, 8 * PAGE);

  struct mana_image_reader *r = open_ok("s.img", NULL);
  uint32_t flags = 99;
  cr_assert_eq(mana_image_region_info(r, 0, NULL, NULL, NULL, &flags, NULL), 0);
  cr_assert_eq(flags & MANA_IMAGE_REGION_SNAPSHOT, 0, "a writer-side flag only");
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
  restore_ok(r, 0, MAP_FIXED);
  cr_assert_eq(memcmp(p, expect, sizeof(expect)), 0);
  mana_image_close(r);
}

/* The writer tells its caller how far it is while a large image is written. */
struct progress_log {
  uint64_t calls, last;
  int decreasing;
};

static void log_progress(uint64_t bytes, void *arg)
{
  struct progress_log *l = arg;
  if (bytes < l->last)
    l->decreasing = 1;
  l->last = bytes;
  l->calls++;
}

Test(image_roundtrip, progress_reports_during_the_write)
{
  /* four of the writer's 16 MiB batches: the first ones are on their way to the file
   * while the last is filled */
  size_t len = 64UL << 20, every = 4UL << 20;
  char *base = reserve(len);
  char *p = map_rw_at(base, len);
  fill_random(p, len, 3);

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  struct progress_log log = {0};
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "p.img", &info, err, sizeof(err)), 0);
  mana_image_writer_on_progress(w, log_progress, &log, every);
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)p, len, PROT_READ | PROT_WRITE, 0, "data"), 0);
  cr_assert_geq(log.calls, 1, "no progress report while %zu bytes were written", len);
  cr_assert_leq(log.calls, len / every, "more reports than one per %zu bytes", every);
  cr_assert_not(log.decreasing);
  cr_assert_leq(log.last, len);
  uint64_t size;
  cr_assert_eq(mana_image_writer_commit(w, &size, NULL, err, sizeof(err)), 0, "%s", err);
  rereserve(base, len);
}
