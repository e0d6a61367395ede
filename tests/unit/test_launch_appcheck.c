/* Unit tests for coordinator/app_check.c. The programs come from CMakeLists.launch.cmake
 * (LAUNCH_FIXTURE_*); odd files (scripts, patched headers, directories) are made here in
 * a private temporary directory. */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_check.h"

static char tmp[PATH_MAX / 2];
static struct app_check_result res;
static const struct app_check_env no_env = {.path = "/bin:/usr/bin"};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void make_tmp(void)
{
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  int n = snprintf(tmp, sizeof(tmp), "%s/mana-appcheck-XXXXXX", base);

  cr_assert(n > 0 && (size_t)n < sizeof(tmp), "TMPDIR too long");
  cr_assert_not_null(mkdtemp(tmp), "mkdtemp failed");
}

static void remove_tmp(void)
{
  nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(app_check, .init = make_tmp, .fini = remove_tmp);

/* tmp/name, in a static buffer that the next call reuses. */
static const char *in_tmp(const char *name)
{
  static char path[PATH_MAX];

  int n = snprintf(path, sizeof(path), "%s/%s", tmp, name);

  cr_assert(n > 0 && (size_t)n < sizeof(path), "path too long");
  return path;
}

static void write_file(const char *name, const void *data, size_t len, mode_t mode)
{
  int fd = open(in_tmp(name), O_WRONLY | O_CREAT | O_TRUNC, mode);

  cr_assert_geq(fd, 0, "cannot create %s", name);
  cr_assert_eq(write(fd, data, len), (ssize_t)len);
  close(fd);
  cr_assert_eq(chmod(in_tmp(name), mode), 0);
}

/* Copies a fixture into tmp, optionally patching two bytes of its ELF header. */
static void copy_fixture(const char *src, const char *name, mode_t mode, long patch_at,
                         unsigned short patch_value)
{
  FILE *in = fopen(src, "rb");
  static unsigned char buf[16 << 20];
  size_t len;

  cr_assert_not_null(in, "fixture %s missing", src);
  len = fread(buf, 1, sizeof(buf), in);
  fclose(in);
  cr_assert_gt(len, 64);
  if (patch_at >= 0) {
    buf[patch_at] = (unsigned char)(patch_value & 0xff);
    buf[patch_at + 1] = (unsigned char)(patch_value >> 8);
  }
  write_file(name, buf, len, mode);
}

static int check(const char *app, const char *wdir, const struct app_check_env *env)
{
  return app_check(app, wdir, env, &res);
}

static void expect_ok(int rc)
{
  cr_assert_eq(rc, 0, "unexpected error: %s", res.error);
}

static void expect_fail(int rc, int status, const char *part)
{
  cr_assert_eq(rc, status, "status %d, error '%s'", rc, res.error);
  cr_assert(strstr(res.error, part), "error '%s' lacks '%s'", res.error, part);
}

/* --- finding the program -------------------------------------------------------------- */

Test(app_check, mpi_program_passes)
{
  expect_ok(check(LAUNCH_FIXTURE_MPI, NULL, &no_env));
  cr_assert_str_eq(res.resolved, LAUNCH_FIXTURE_MPI);
}

Test(app_check, bare_name_is_searched_in_path)
{
  struct app_check_env env = {.path = NULL};
  char path[2 * PATH_MAX];

  copy_fixture(LAUNCH_FIXTURE_MPI, "hello_mpi", 0755, -1, 0);
  snprintf(path, sizeof(path), "/nonexistent:%s:/usr/bin", tmp);
  env.path = path;
  expect_ok(check("hello_mpi", NULL, &env));
  cr_assert_str_eq(res.resolved, in_tmp("hello_mpi"));

  expect_fail(check("hello_mpi", NULL, &no_env), APP_CHECK_NOT_FOUND,
              "hello_mpi: not found in PATH");
}

Test(app_check, path_search_skips_non_executables)
{
  char path[2 * PATH_MAX];

  mkdir(in_tmp("a"), 0755);
  mkdir(in_tmp("b"), 0755);
  copy_fixture(LAUNCH_FIXTURE_MPI, "a/prog", 0644, -1, 0);
  copy_fixture(LAUNCH_FIXTURE_MPI, "b/prog", 0755, -1, 0);
  snprintf(path, sizeof(path), "%s/a:%s/b", tmp, tmp);
  expect_ok(check("prog", NULL, &(struct app_check_env){.path = path}));
  cr_assert_str_eq(res.resolved, in_tmp("b/prog"));

  /* Only a non-executable match: reported as such, like execvp's EACCES. */
  snprintf(path, sizeof(path), "%s/a", tmp);
  expect_fail(check("prog", NULL, &(struct app_check_env){.path = path}), APP_CHECK_CANNOT_RUN,
              "not executable");
}

Test(app_check, missing_program)
{
  expect_fail(check("/nonexistent/app", NULL, &no_env), APP_CHECK_NOT_FOUND,
              "/nonexistent/app: not found");
  expect_fail(check("", NULL, &no_env), APP_CHECK_NOT_FOUND, "empty");
}

Test(app_check, relative_path_uses_wdir)
{
  copy_fixture(LAUNCH_FIXTURE_MPI, "rel_mpi", 0755, -1, 0);
  expect_ok(check("./rel_mpi", tmp, &no_env));
  cr_assert_str_eq(res.resolved, in_tmp("./rel_mpi"));
  cr_assert_eq(chdir("/"), 0);
  expect_fail(check("./rel_mpi", NULL, &no_env), APP_CHECK_NOT_FOUND, "./rel_mpi");
}

Test(app_check, directory_and_special_files)
{
  expect_fail(check(tmp, NULL, &no_env), APP_CHECK_CANNOT_RUN, "is a directory");
  cr_assert_eq(mkfifo(in_tmp("fifo"), 0755), 0);
  expect_fail(check(in_tmp("fifo"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "is not a regular file");
}

Test(app_check, not_executable)
{
  copy_fixture(LAUNCH_FIXTURE_MPI, "noexec", 0644, -1, 0);
  expect_fail(check(in_tmp("noexec"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "is not executable");
}

/* --- what kind of file ---------------------------------------------------------------- */

Test(app_check, script_is_refused)
{
  static const char script[] = "#!/bin/sh\nexec ./app \"$@\"\n";

  write_file("run.sh", script, sizeof(script) - 1, 0755);
  expect_fail(check(in_tmp("run.sh"), NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is a script, not an ELF program");
}

Test(app_check, not_elf)
{
  static const char text[] = "just some text\n";

  write_file("text", text, sizeof(text) - 1, 0755);
  expect_fail(check(in_tmp("text"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "is not an ELF program");
  write_file("empty", "", 0, 0755);
  expect_fail(check(in_tmp("empty"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "is not an ELF program");
}

Test(app_check, other_architecture)
{
  /* e_machine (offset 18) = EM_AARCH64 (183) */
  copy_fixture(LAUNCH_FIXTURE_MPI, "arm_app", 0755, 18, 183);
  expect_fail(check(in_tmp("arm_app"), NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is built for AArch64, not x86-64");
  copy_fixture(LAUNCH_FIXTURE_MPI, "odd_app", 0755, 18, 4242);
  expect_fail(check(in_tmp("odd_app"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "ELF machine 4242");
}

Test(app_check, object_file)
{
  /* e_type (offset 16) = ET_REL */
  copy_fixture(LAUNCH_FIXTURE_MPI, "obj", 0755, 16, 1);
  expect_fail(check(in_tmp("obj"), NULL, &no_env), APP_CHECK_CANNOT_RUN, "is not a linked program");
}

Test(app_check, static_program)
{
#ifdef LAUNCH_FIXTURE_STATIC
  expect_fail(check(LAUNCH_FIXTURE_STATIC, NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is statically linked; mana needs a dynamically linked MPI program");
#else
  cr_skip_test("the toolchain cannot link -static");
#endif
}

Test(app_check, static_pie_program)
{
#ifdef LAUNCH_FIXTURE_STATIC_PIE
  expect_fail(check(LAUNCH_FIXTURE_STATIC_PIE, NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is statically linked");
#else
  cr_skip_test("the toolchain cannot link -static-pie");
#endif
}

Test(app_check, shared_library)
{
  expect_fail(check(LAUNCH_FIXTURE_MPILIB, NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is a shared library, not a program");
}

/* --- is it MPI ------------------------------------------------------------------------ */

Test(app_check, dynamic_program_without_mpi)
{
  expect_fail(check(LAUNCH_FIXTURE_PLAIN, NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is not linked against MPICH (libmpich.so.12)");
  expect_fail(check("true", NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "true: is not linked against MPICH");
}

Test(app_check, mpi_through_own_library_via_runpath)
{
  expect_ok(check(LAUNCH_FIXTURE_VIA_LIB, NULL, &no_env));
}

Test(app_check, mpi_through_own_library_via_ld_library_path)
{
  struct app_check_env env = {.path = "/bin", .ld_library_path = "/nonexistent"};

  expect_fail(check(LAUNCH_FIXTURE_VIA_LIB_NORPATH, NULL, &env), APP_CHECK_CANNOT_RUN,
              "is not linked against MPICH");
  env.ld_library_path = "/nonexistent:" LAUNCH_FIXTURE_MPILIB_DIR;
  expect_ok(check(LAUNCH_FIXTURE_VIA_LIB_NORPATH, NULL, &env));
}

Test(app_check, other_mpi_is_named)
{
  expect_fail(check(LAUNCH_FIXTURE_VIA_OTHERMPI, NULL, &no_env), APP_CHECK_CANNOT_RUN,
              "is linked against libmpi.so.40, which is not MPICH");
}
