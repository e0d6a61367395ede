/* Unit tests for coordinator/coord_secret.c: creating, loading and refusing job secrets,
 * and comparing them. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_secret.h"

static char dir[64];
static char path[128];
static char err[512];

static void setup(void)
{
  snprintf(dir, sizeof(dir), "/tmp/test_coord_secret.XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/secret", dir);
}

static void teardown(void)
{
  char cmd[128];

  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(coord_secret, .init = setup, .fini = teardown);

static void write_file(const char *text, mode_t mode)
{
  FILE *f = fopen(path, "w");

  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  cr_assert_eq(chmod(path, mode), 0);
}

Test(coord_secret, create_then_load)
{
  char made[COORD_SECRET_HEX + 1], loaded[COORD_SECRET_HEX + 1];
  struct stat st;

  cr_assert_eq(coord_secret_create(path, made, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(strlen(made), COORD_SECRET_HEX);
  cr_assert_eq(strspn(made, "0123456789abcdef"), COORD_SECRET_HEX);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  cr_assert_eq(st.st_size, COORD_SECRET_HEX + 1);
  cr_assert_eq(coord_secret_load(path, loaded, err, sizeof(err)), 0, "%s", err);
  cr_assert_str_eq(made, loaded);
}

Test(coord_secret, create_refuses_existing)
{
  char s[COORD_SECRET_HEX + 1];

  write_file("x", 0600);
  cr_assert_eq(coord_secret_create(path, s, err, sizeof(err)), -1);
  cr_assert(strstr(err, path), "%s", err);
}

Test(coord_secret, load_or_create)
{
  char a[COORD_SECRET_HEX + 1], b[COORD_SECRET_HEX + 1], c[COORD_SECRET_HEX + 1];
  bool created;

  cr_assert_eq(coord_secret_load_or_create(path, a, &created, err, sizeof(err)), 0);
  cr_assert(created);
  cr_assert_eq(coord_secret_load_or_create(path, b, &created, err, sizeof(err)), 0);
  cr_assert(!created);
  cr_assert_str_eq(a, b);
  unlink(path);
  cr_assert_eq(coord_secret_load_or_create(path, c, &created, err, sizeof(err)), 0);
  cr_assert_str_neq(a, c, "two secrets must differ");
}

Test(coord_secret, refuses_readable_by_others)
{
  static const mode_t modes[] = {0640, 0604, 0660, 0644, 0610, 0601};
  char s[COORD_SECRET_HEX + 1];

  for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
    write_file("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", modes[i]);
    cr_assert_eq(coord_secret_load(path, s, err, sizeof(err)), -1, "mode %o accepted", modes[i]);
    cr_assert(strstr(err, "refusing secret file"), "%s", err);
    cr_assert(strstr(err, "chmod 600"), "%s", err);
    unlink(path);
  }
}

Test(coord_secret, accepts_owner_only_modes)
{
  char s[COORD_SECRET_HEX + 1];

  write_file("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 0400);
  cr_assert_eq(coord_secret_load(path, s, err, sizeof(err)), 0, "%s", err);
  cr_assert_str_eq(s, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
}

Test(coord_secret, refuses_bad_contents)
{
  static const char *const bad[] = {
      "",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", /* 63 */
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n",
      "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\n",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg\n",
  };
  char s[COORD_SECRET_HEX + 1];

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    write_file(bad[i], 0600);
    cr_assert_eq(coord_secret_load(path, s, err, sizeof(err)), -1, "accepted '%s'", bad[i]);
    cr_assert(strstr(err, "hex digits"), "%s", err);
    unlink(path);
  }
}

Test(coord_secret, refuses_missing_and_symlinks)
{
  char s[COORD_SECRET_HEX + 1], target[160];

  cr_assert_eq(coord_secret_load(path, s, err, sizeof(err)), -1);
  cr_assert(strstr(err, "No such file"), "%s", err);
  snprintf(target, sizeof(target), "%s/real", dir);
  cr_assert_eq(coord_secret_create(target, s, err, sizeof(err)), 0);
  cr_assert_eq(symlink(target, path), 0);
  cr_assert_eq(coord_secret_load(path, s, err, sizeof(err)), -1);
  cr_assert_eq(coord_secret_load(dir, s, err, sizeof(err)), -1);
}

Test(coord_secret, compare)
{
  const char *secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  char other[COORD_SECRET_HEX + 1];

  cr_assert(coord_secret_equal(secret, secret));
  strcpy(other, secret);
  other[COORD_SECRET_HEX - 1] = '0';
  cr_assert(!coord_secret_equal(secret, other));
  other[COORD_SECRET_HEX - 1] = 'f';
  other[0] = '1';
  cr_assert(!coord_secret_equal(secret, other));
  cr_assert(!coord_secret_equal(secret, ""));
  cr_assert(!coord_secret_equal(secret, "00112233"));
  cr_assert(!coord_secret_equal(secret, "00112233445566778899aabbccddeeff00112233445566778899"
                                        "aabbccddeeff00"));
}
