/* ELF loading pieces: header inspection of real system objects and mapping at a chosen bias. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../upper-half/elf_load.h"
#include "../../upper-half/environment.h"

#define LDSO "/lib64/ld-linux-x86-64.so.2"

Test(elf, inspects_a_pie_executable)
{
  struct mana_elf_image img;
  char err[256];
  cr_assert_eq(mana_elf_inspect("/bin/true", &img, err, sizeof(err)), 0, "%s", err);
  cr_assert(img.is_pie, "Debian builds /bin/true as PIE");
  cr_assert_str_eq(img.interp, LDSO);
  cr_assert(img.has_dynamic);
  cr_assert_eq(img.lo, 0);
  cr_assert_gt(img.hi, img.lo);
  cr_assert_gt(img.phnum, 0);
}

Test(elf, ld_so_has_no_interpreter_and_phdrs_inside_its_first_segment)
{
  struct mana_elf_image img;
  char err[256];
  cr_assert_eq(mana_elf_inspect(LDSO, &img, err, sizeof(err)), 0, "%s", err);
  cr_assert_str_eq(img.interp, "");
  cr_assert_eq(img.phdr, 64, "ld.so has no PT_PHDR: headers right after the ELF header");
}

Test(elf, rejects_what_is_not_an_executable)
{
  struct mana_elf_image img;
  char err[256];
  cr_assert_neq(mana_elf_inspect("/etc/passwd", &img, err, sizeof(err)), 0);
  cr_assert(strstr(err, "not an ELF"), "%s", err);
  cr_assert_neq(mana_elf_inspect("/nonexistent/app", &img, err, sizeof(err)), 0);
  cr_assert(strstr(err, "cannot open"), "%s", err);
}

Test(elf, maps_ld_so_at_a_chosen_address)
{
  struct mana_elf_image probe, img;
  char err[256];
  cr_assert_eq(mana_elf_inspect(LDSO, &probe, err, sizeof(err)), 0);
  uint64_t span = probe.hi - probe.lo;
  void *area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(area, MAP_FAILED);
  uint64_t bias = (uint64_t)area - probe.lo;
  cr_assert_eq(mana_elf_map(LDSO, bias, &img, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(memcmp(area, "\177ELF", 4), 0, "first segment maps the ELF header");
  cr_assert_eq(img.entry, probe.entry + bias);
  cr_assert_eq(img.phdr, (uint64_t)area + 64);
  munmap(area, span);
}

Test(environment, stub_directory_first_and_rseq_off_for_the_upper_half_only)
{
  char *envp[] = {"PATH=/bin",
                  "LD_LIBRARY_PATH=/opt/lib",
                  "GLIBC_TUNABLES=glibc.malloc.check=1",
                  "UCX_ERROR_SIGNALS=",
                  "MANA_LH_ENV_ADDED=UCX_ERROR_SIGNALS,",
                  NULL};
  char **up = mana_upper_environment(envp, "/stubs");
  int saw_path = 0, saw_ld = 0, saw_tun = 0, saw_dir = 0;
  for (char **e = up; *e; e++) {
    saw_path |= !strcmp(*e, "PATH=/bin");
    saw_ld |= !strcmp(*e, "LD_LIBRARY_PATH=/stubs:/opt/lib");
    saw_tun |= !strcmp(*e, "GLIBC_TUNABLES=glibc.pthread.rseq=0:glibc.malloc.check=1");
    saw_dir |= !strcmp(*e, "MANA_UPPER_STUB_DIR=/stubs"); /* what the stub takes out again */
    cr_assert(strncmp(*e, "UCX_ERROR_SIGNALS", 17), "variables mana_lh added are removed");
    cr_assert(strncmp(*e, "MANA_LH_ENV_ADDED", 17));
  }
  cr_assert(saw_path && saw_ld && saw_tun && saw_dir);
}

/* A damaged executable: the message names the file, not just what is wrong with it. */
Test(elf, errors_name_the_file)
{
  char path[] = "/tmp/mana-elf-cut-XXXXXX", cmd[256], err[256];
  struct mana_elf_image img;
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  /* the ELF header and part of the program headers survive (300 bytes: libelf then fails
   * on the first program header) */
  snprintf(cmd, sizeof(cmd), "head -c 300 /bin/true > %s", path);
  cr_assert_eq(system(cmd), 0);
  int rc = mana_elf_inspect(path, &img, err, sizeof(err));
  unlink(path);
  cr_assert_neq(rc, 0, "a cut executable was accepted");
  cr_assert(strstr(err, path), "the message does not name %s: %s", path, err);
}
