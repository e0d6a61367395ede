/* Where restored regions go: exactly their address, never over an existing mapping unless
 * the caller reserved the range, with a message naming whatever is in the way. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "test_image_helpers.h"

static struct tmpdir dir;
static struct std_image img;
static struct mana_image_reader *r;
#define NAME "rank-0005.img"

static void setup(void)
{
  tmpdir_make(&dir);
  write_std_image(&dir, NAME, &img);
  char err[512];
  cr_assert_eq(mana_image_open(&r, dir.fd, NAME, NULL, err, sizeof(err)), 0, "%s", err);
  /* Also makes the reader's buffers and thread now, before any test opens a hole. */
  cr_assert_eq(mana_image_verify(r, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
  mana_image_close(r);
  free_std_image(&img);
  tmpdir_remove(&dir);
}

TestSuite(image_restore, .init = setup, .fini = teardown);

Test(image_restore, occupied_range_names_the_collision)
{
  /* Something else sits in the middle of region 0's range. */
  char *intruder = mmap(img.base + 10 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  cr_assert_eq(intruder, img.base + 10 * PAGE);
  munmap(img.base, 10 * PAGE);
  char err[1024], want[512];
  cr_assert_eq(mana_image_restore_region(r, 0, 0, err, sizeof(err)), -1);
  cr_assert_eq(errno, EEXIST);
  snprintf(want, sizeof(want),
           NAME ": region 0 'mixed' [%p, +0x28000): the address range is taken by the mapping "
                "%lx-%lx rw-p 00000000 00:00 0",
           (void *)img.base, (unsigned long)intruder, (unsigned long)(intruder + 2 * PAGE));
  cr_assert_eq(strncmp(err, want, strlen(want)), 0, "got:  %s\nwant: %s", err, want);
  cr_assert(strstr(err, "(mmap MAP_FIXED_NOREPLACE: File exists)"), "got: %s", err);
  cr_assert_str_eq(maps_perms(img.base), "", "nothing was mapped");
  cr_assert_str_eq(maps_perms(intruder), "rw-p", "the intruder is untouched");
}

Test(image_restore, reserved_range_without_map_fixed_collides_with_the_reservation)
{
  char err[1024];
  cr_assert_eq(mana_image_restore_region(r, 0, 0, err, sizeof(err)), -1);
  cr_assert(strstr(err, "the address range is taken by the mapping "), "got: %s", err);
  cr_assert(strstr(err, " ---p "), "the reservation is named: %s", err);
}

Test(image_restore, map_fixed_restores_into_the_callers_reservation)
{
  char err[512];
  cr_assert_eq(mana_image_restore_region(r, 0, MAP_FIXED, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(memcmp(img.base, img.expect, img.region0_len), 0);
  cr_assert_str_eq(maps_perms(img.base + 40 * PAGE), "---p", "the rest stays reserved");
}

Test(image_restore, free_range_restores_without_map_fixed)
{
  munmap(img.base, STD_RESERVE);
  char err[512];
  cr_assert_eq(mana_image_restore_region(r, 0, 0, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(memcmp(img.base, img.expect, img.region0_len), 0);
}

Test(image_restore, restoring_twice_collides_with_itself)
{
  munmap(img.base, STD_RESERVE);
  char err[1024];
  cr_assert_eq(mana_image_restore_region(r, 1, 0, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(mana_image_restore_region(r, 1, 0, err, sizeof(err)), -1);
  cr_assert(strstr(err, "region 1 'readonly'"), "got: %s", err);
  cr_assert(strstr(err, " r--p "), "got: %s", err);
}

Test(image_restore, bad_flags_and_index_are_refused)
{
  char err[512];
  cr_assert_eq(mana_image_restore_region(r, 0, MAP_SHARED, err, sizeof(err)), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert(strstr(err, "mapping flags 0x1 are not allowed"), "got: %s", err);
  cr_assert_eq(mana_image_restore_region(r, 9, 0, err, sizeof(err)), -1);
  cr_assert_str_eq(err, NAME ": no region 9 (the image has 2)");
  cr_assert_str_eq(maps_perms(img.base), "---p");
}
