/* Commit atomicity: an image exists under its final name only once it is complete. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

TestSuite(image_commit, .init = setup, .fini = teardown);

static struct mana_image_writer *start(const char *name)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, name, &info, err, sizeof(err)), 0, "%s", err);
  return w;
}

Test(image_commit, final_name_appears_only_at_commit)
{
  static char data[3 * PAGE] __attribute__((aligned(4096)));
  fill_random(data, sizeof(data), 1);
  struct mana_image_writer *w = start("rank-0000.img");
  cr_assert(file_exists(&dir, "rank-0000.img.tmp"));
  cr_assert_not(file_exists(&dir, "rank-0000.img"));
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)data, sizeof(data), PROT_READ | PROT_WRITE, 0, "data"),
      0);
  cr_assert_eq(mana_image_add_blob(w, 1, "x", 1), 0);
  cr_assert_not(file_exists(&dir, "rank-0000.img"));
  char err[512];
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  cr_assert(file_exists(&dir, "rank-0000.img"));
  cr_assert_not(file_exists(&dir, "rank-0000.img.tmp"));
  cr_assert_eq(tmpdir_count(&dir), 1);
  struct stat st;
  cr_assert_eq(fstatat(dir.fd, "rank-0000.img", &st, 0), 0);
  cr_assert_eq(st.st_mode & 0777, 0600, "images hold process memory: owner only");
}

Test(image_commit, abort_leaves_nothing)
{
  struct mana_image_writer *w = start("rank-0001.img");
  cr_assert_eq(mana_image_add_blob(w, 1, "x", 1), 0);
  mana_image_writer_abort(w);
  cr_assert_eq(tmpdir_count(&dir), 0);
  mana_image_writer_abort(NULL);
}

Test(image_commit, abort_keeps_the_previous_image)
{
  char err[512];
  struct mana_image_writer *w = start("rank-0002.img");
  cr_assert_eq(mana_image_add_blob(w, 1, "old", 3), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  w = start("rank-0002.img");
  cr_assert_eq(mana_image_add_blob(w, 1, "new", 3), 0);
  mana_image_writer_abort(w);
  cr_assert_eq(tmpdir_count(&dir), 1);
  struct mana_image_reader *r;
  cr_assert_eq(mana_image_open(&r, dir.fd, "rank-0002.img", NULL, err, sizeof(err)), 0, "%s", err);
  const void *data;
  size_t len;
  cr_assert_eq(mana_image_blob(r, 1, &data, &len), 0);
  cr_assert_eq(memcmp(data, "old", 3), 0);
  mana_image_close(r);
}

Test(image_commit, commit_replaces_an_older_image_of_the_same_name)
{
  char err[512];
  struct mana_image_writer *w = start("same.img");
  cr_assert_eq(mana_image_add_blob(w, 1, "old", 3), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  w = start("same.img");
  cr_assert_eq(mana_image_add_blob(w, 1, "new", 3), 0);
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  struct mana_image_reader *r;
  cr_assert_eq(mana_image_open(&r, dir.fd, "same.img", NULL, err, sizeof(err)), 0, "%s", err);
  const void *data;
  size_t len;
  cr_assert_eq(mana_image_blob(r, 1, &data, &len), 0);
  cr_assert_eq(memcmp(data, "new", 3), 0);
  mana_image_close(r);
  cr_assert_eq(tmpdir_count(&dir), 1);
}

Test(image_commit, leftover_temporary_file_is_replaced)
{
  int fd = openat(dir.fd, "x.img.tmp", O_WRONLY | O_CREAT, 0600);
  cr_assert_eq(write(fd, "garbage", 7), 7);
  close(fd);
  char err[512];
  struct mana_image_writer *w = start("x.img");
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(open_error(&dir, "x.img"), NULL);
  cr_assert_eq(tmpdir_count(&dir), 1);
}

Test(image_commit, unwritable_directory_is_reported)
{
  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, dir.fd, "no/such/dir.img", &info, err, sizeof(err)), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_str_eq(err, "no/such/dir.img.tmp: cannot create: No such file or directory");
  cr_assert_null(w);
}

Test(image_commit, write_errors_name_the_region_and_leave_nothing)
{
  /* Files may not grow past 64 KiB here: the region's data cannot be written. */
  struct rlimit lim = {64 << 10, 64 << 10};
  signal(SIGXFSZ, SIG_IGN);
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  size_t len = 64 * PAGE;
  char *p = aligned_alloc(PAGE, len);
  fill_random(p, len, 3);
  struct mana_image_writer *w = start("big.img");
  cr_assert_eq(mana_image_add_region(w, (uintptr_t)p, len, PROT_READ | PROT_WRITE, 0, "heap"), -1);
  cr_assert_eq(errno, EFBIG);
  char want[256];
  snprintf(want, sizeof(want),
           "big.img.tmp: region 0 'heap' [%p, +0x40000): write at offset "
           "4096: File too large",
           (void *)p);
  cr_assert_str_eq(mana_image_writer_error(w), want);
  char err[512];
  cr_assert_eq(mana_image_writer_commit(w, NULL, NULL, err, sizeof(err)), -1);
  cr_assert_str_eq(err, want);
  cr_assert_eq(tmpdir_count(&dir), 0);
  free(p);
}
