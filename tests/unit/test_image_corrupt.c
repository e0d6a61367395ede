/* Every kind of damage is found, and reported in one line that names the file and the place:
 * flipped bytes in the header, each table, blob and region data; truncation at several
 * points; foreign files; other format versions. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_image_helpers.h"

static struct tmpdir dir;
static struct std_image img;
static struct img_header hdr;
#define NAME "rank-0003.img"

static void setup(void)
{
  tmpdir_make(&dir);
  write_std_image(&dir, NAME, &img);
  hdr = read_header(&dir, NAME);
}

static void teardown(void)
{
  free_std_image(&img);
  tmpdir_remove(&dir);
}

TestSuite(image_corrupt, .init = setup, .fini = teardown);

static void expect_open_error(const char *want)
{
  const char *got = open_error(&dir, NAME);
  cr_assert_not_null(got, "the damaged image opened");
  cr_assert_str_eq(got, want);
}

static void expect_open_error_start(const char *prefix)
{
  const char *got = open_error(&dir, NAME);
  cr_assert_not_null(got, "the damaged image opened");
  cr_assert_eq(strncmp(got, prefix, strlen(prefix)), 0, "got: %s", got);
}

Test(image_corrupt, pristine_image_opens)
{
  cr_assert_null(open_error(&dir, NAME));
  cr_assert_eq(hdr.file_size, img.file_size);
}

Test(image_corrupt, flipped_byte_in_the_header)
{
  flip_byte(&dir, NAME, offsetof(struct img_header, rank));
  expect_open_error_start(NAME ": header checksum mismatch (stored ");
}

Test(image_corrupt, flipped_byte_in_the_header_checksum)
{
  flip_byte(&dir, NAME, offsetof(struct img_header, header_hash) + 3);
  expect_open_error_start(NAME ": header checksum mismatch");
}

Test(image_corrupt, wrong_magic)
{
  flip_byte(&dir, NAME, 0);
  expect_open_error(NAME ": not a mana image: it starts with \"mANAIMG\\x0a\", not "
                         "\"MANAIMG\\n\"");
}

Test(image_corrupt, not_an_image_at_all)
{
  int fd = openat(dir.fd, NAME, O_WRONLY | O_TRUNC);
  static char text[1000];
  memset(text, 'x', sizeof(text));
  cr_assert_eq(write(fd, text, sizeof(text)), (ssize_t)sizeof(text));
  close(fd);
  expect_open_error(NAME ": not a mana image: it starts with \"xxxxxxxx\", not \"MANAIMG\\n\"");
}

Test(image_corrupt, other_format_version)
{
  hdr.version = 3;
  write_header(&dir, NAME, &hdr, 1);
  expect_open_error(NAME ": image format version 3 is not supported (this build reads versions "
                         "1 to 2)");
  hdr.version = 0;
  write_header(&dir, NAME, &hdr, 0); /* version is judged before the checksum */
  expect_open_error(NAME ": image format version 0 is not supported (this build reads versions "
                         "1 to 2)");
}

Test(image_corrupt, flipped_byte_in_each_table)
{
  struct {
    const char *what;
    uint64_t off;
  } tables[] = {
      {"region table", hdr.regions.offset + 9},
      {"run table", hdr.runs.offset + 1},
      {"blob table", hdr.blobs.offset + hdr.blobs.size - 1},
      {"page hash table", hdr.page_hashes.offset + 13},
  };
  for (size_t i = 0; i < 4; i++) {
    flip_byte(&dir, NAME, tables[i].off);
    char want[256];
    snprintf(want, sizeof(want), NAME ": %s checksum mismatch (stored ", tables[i].what);
    expect_open_error_start(want);
    const char *got = open_error(&dir, NAME);
    char where[64];
    snprintf(where, sizeof(where), "the table at offset %llu is damaged",
             (unsigned long long)(i == 0   ? hdr.regions.offset
                                  : i == 1 ? hdr.runs.offset
                                  : i == 2 ? hdr.blobs.offset
                                           : hdr.page_hashes.offset));
    cr_assert(strstr(got, where), "got: %s", got);
    flip_byte(&dir, NAME, tables[i].off); /* repaired */
    cr_assert_null(open_error(&dir, NAME));
  }
}

Test(image_corrupt, flipped_byte_in_blob_data)
{
  struct img_blob b;
  int fd = openat(dir.fd, NAME, O_RDONLY);
  cr_assert_eq(pread(fd, &b, sizeof(b), (off_t)hdr.blobs.offset), (ssize_t)sizeof(b));
  close(fd);
  flip_byte(&dir, NAME, b.offset + 4);
  expect_open_error_start(NAME ": blob 0 (type 7): checksum mismatch (stored ");
  cr_assert(strstr(open_error(&dir, NAME), "its 10 bytes at offset 4096 are damaged"));
}

static struct img_region region0(void)
{
  struct img_region g;
  int fd = openat(dir.fd, NAME, O_RDONLY);
  cr_assert_eq(pread(fd, &g, sizeof(g), (off_t)hdr.regions.offset), (ssize_t)sizeof(g));
  close(fd);
  return g;
}

Test(image_corrupt, flipped_byte_in_region_data_is_found_by_verify_and_restore)
{
  struct img_region g = region0();
  flip_byte(&dir, NAME, g.data_offset + 5 * PAGE + 77);
  struct mana_image_reader *r;
  char err[1024], want[256], where[64];
  cr_assert_eq(mana_image_open(&r, dir.fd, NAME, NULL, err, sizeof(err)), 0,
               "region data is checked by verify and restore, not open: %s", err);
  snprintf(want, sizeof(want), NAME ": region 0 'mixed' [%p, +0x28000): page ", (void *)img.base);
  /* The page named is the sixth stored one, where the byte was flipped. */
  snprintf(where, sizeof(where), "(stored at offset %llu) is damaged",
           (unsigned long long)(g.data_offset + 5 * PAGE));
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1);
  cr_assert_eq(errno, EBADMSG);
  cr_assert_eq(strncmp(err, want, strlen(want)), 0, "got: %s", err);
  cr_assert(strstr(err, where), "got: %s", err);
  cr_assert(strstr(err, "the page hash table says"), "got: %s", err);

  cr_assert_eq(mana_image_restore_region(r, 0, MAP_FIXED, err, sizeof(err)), -1);
  cr_assert_eq(strncmp(err, want, strlen(want)), 0, "got: %s", err);
  cr_assert_str_eq(maps_perms(img.base), "---p", "the caller's reservation is put back");
  cr_assert_eq(mana_image_restore_region(r, 1, MAP_FIXED, err, sizeof(err)), 0, "%s", err);
  mana_image_close(r);
}

Test(image_corrupt, damaged_restore_without_reservation_unmaps)
{
  struct img_region g = region0();
  flip_byte(&dir, NAME, g.data_offset);
  struct mana_image_reader *r;
  char err[1024];
  cr_assert_eq(mana_image_open(&r, dir.fd, NAME, NULL, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1); /* and the reader is ready */
  munmap(img.base, STD_RESERVE);
  cr_assert_eq(mana_image_restore_region(r, 0, 0, err, sizeof(err)), -1);
  cr_assert(strstr(err, "page 0 (stored at offset 8192) is damaged"), "got: %s", err);
  cr_assert_str_eq(maps_perms(img.base), "", "nothing is left mapped");
  mana_image_close(r);
}

Test(image_corrupt, truncated_at_several_points)
{
  char want[256];
  truncate_file(&dir, NAME, hdr.file_size - 1);
  snprintf(want, sizeof(want),
           NAME ": truncated: page hash table ends at %llu but the file has %llu "
                "bytes",
           (unsigned long long)hdr.file_size, (unsigned long long)hdr.file_size - 1);
  expect_open_error(want);

  truncate_file(&dir, NAME, hdr.runs.offset + 3);
  snprintf(want, sizeof(want),
           NAME ": truncated: run table ends at %llu but the file has %llu "
                "bytes",
           (unsigned long long)(hdr.runs.offset + hdr.runs.size),
           (unsigned long long)hdr.runs.offset + 3);
  expect_open_error(want);

  truncate_file(&dir, NAME, 3 * PAGE); /* inside the data area */
  snprintf(want, sizeof(want),
           NAME ": truncated: region table ends at %llu but the file has "
                "12288 bytes",
           (unsigned long long)(hdr.regions.offset + hdr.regions.size));
  expect_open_error(want);

  truncate_file(&dir, NAME, 1200);
  snprintf(want, sizeof(want),
           NAME ": truncated: region table ends at %llu but the file has "
                "1200 bytes",
           (unsigned long long)(hdr.regions.offset + hdr.regions.size));
  expect_open_error(want);

  truncate_file(&dir, NAME, 100);
  expect_open_error(NAME ": truncated: the header needs 512 bytes but the file has 100 bytes");
  truncate_file(&dir, NAME, 0);
  expect_open_error(NAME ": truncated: the header needs 512 bytes but the file has 0 bytes");
}

Test(image_corrupt, trailing_bytes)
{
  truncate_file(&dir, NAME, hdr.file_size + 10);
  char want[256];
  snprintf(want, sizeof(want), NAME ": 10 unexpected bytes after the end of the image at %llu",
           (unsigned long long)hdr.file_size);
  expect_open_error(want);
}

Test(image_corrupt, inconsistent_tables_behind_valid_checksums)
{
  /* A header that lies consistently (checksum recomputed) is still caught by the layout
   * checks. */
  hdr.runs.count += 1;
  hdr.runs.size += 8;
  write_header(&dir, NAME, &hdr, 1);
  char want[256];
  snprintf(want, sizeof(want), NAME ": blob table: starts at %llu, expected %llu",
           (unsigned long long)hdr.blobs.offset, (unsigned long long)hdr.blobs.offset + 8);
  expect_open_error(want);
}

Test(image_corrupt, missing_file)
{
  unlinkat(dir.fd, NAME, 0);
  expect_open_error(NAME ": cannot open: No such file or directory");
}

Test(image_corrupt, file_shrinking_after_open_is_reported_by_restore)
{
  struct img_region g = region0();
  struct mana_image_reader *r;
  char err[1024];
  cr_assert_eq(mana_image_open(&r, dir.fd, NAME, NULL, err, sizeof(err)), 0, "%s", err);
  truncate_file(&dir, NAME, g.data_offset + PAGE);
  cr_assert_eq(mana_image_restore_region(r, 0, MAP_FIXED, err, sizeof(err)), -1);
  cr_assert_eq(errno, EIO);
  cr_assert(strstr(err, "the file ends before offset"), "got: %s", err);
  cr_assert_str_eq(maps_perms(img.base), "---p");
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), -1);
  cr_assert(strstr(err, "region 0 'mixed'"), "got: %s", err);
  mana_image_close(r);
}
