/* Unit tests of where a thread may park (lower-half/park_libc.c): never inside the upper half's
 * C library, unless it waits in a system call or runs a leaf function (memset, ...) the
 * application called; the library's code is found by file name and remembered for a restarted
 * process, whose code is anonymous memory. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mana/park.h"
#include "../../lower-half/park_libc.h"
#include "../../wrappers/libc_leaves.h"

#define LIBC_PATH "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define CODE_AT (MANA_WINDOW_BASE + 0x400000)

static size_t code_len;

/* A thread interrupted at ip with rax in its registers, outside any leaf function. */
static int may_park(uint64_t ip, uint64_t rax)
{
  struct mana_park_regs r = {.ip = ip, .ax = rax};
  return mana_park_libc_may_park(&r);
}

/* The park area, and the first part of the real libc mapped executable inside the window, as
 * the upper half's loader maps it. */
static void setup(void)
{
  void *area = mmap((void *)MANA_WINDOW_BASE, 0x20000, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  cr_assert_eq(area, (void *)MANA_WINDOW_BASE, "cannot map the park area: %s", strerror(errno));
  int fd = open(LIBC_PATH, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(fd, 0, "cannot open %s: %s", LIBC_PATH, strerror(errno));
  code_len = 0x100000;
  void *code = mmap((void *)CODE_AT, code_len, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
  close(fd);
  cr_assert_eq(code, (void *)CODE_AT, "cannot map %s: %s", LIBC_PATH, strerror(errno));
}

TestSuite(park_libc, .init = setup);

/* An address of the mapped code where the bytes `b0 b1` start, past its first two bytes. */
static uint64_t find_bytes(unsigned char b0, unsigned char b1)
{
  const unsigned char *p = (const unsigned char *)CODE_AT;
  for (size_t i = 2; i + 2 < code_len; i++)
    if (p[i] == b0 && p[i + 1] == b1)
      return CODE_AT + i;
  cr_assert_fail("no %02x %02x in the first MiB of libc", b0, b1);
  return 0;
}

/* An address inside the mapped code that is neither at nor right after a system call. */
static uint64_t plain_code(void)
{
  const unsigned char *p = (const unsigned char *)CODE_AT;
  for (size_t i = 0x1000; i + 2 < code_len; i++)
    if (!(p[i] == 0x0f && p[i + 1] == 0x05) && !(p[i - 2] == 0x0f && p[i - 1] == 0x05))
      return CODE_AT + i;
  return 0;
}

Test(park_libc, finds_the_library_by_name)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  cr_assert_geq(MANA_PARK->n_libc_code, 1);
  cr_assert_eq(MANA_PARK->libc_code[0].lo, CODE_AT);
}

Test(park_libc, declines_inside_the_library)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  cr_assert_eq(may_park(plain_code(), 0), 0, "parked inside libc's code");
}

Test(park_libc, parks_outside_the_library)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  cr_assert_eq(may_park(CODE_AT - 1, 0), 1);
  cr_assert_eq(may_park(CODE_AT + code_len, 0), 1);
  cr_assert_eq(may_park((uint64_t)(uintptr_t)&setup, 0), 1);
}

Test(park_libc, parks_in_a_waiting_system_call)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  uint64_t sc = find_bytes(0x0f, 0x05);
  /* rewound by the kernel to restart the call */
  cr_assert_eq(may_park(sc, 202 /* futex */), 1);
  /* the call returned EINTR to the thread */
  cr_assert_eq(may_park(sc + 2, (uint64_t)-EINTR), 1);
  /* the call returned a result: the thread runs libc's code again (maybe under a lock) */
  cr_assert_eq(may_park(sc + 2, 0), 0);
}

Test(park_libc, declines_before_a_call_that_never_waits)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  uint64_t sc = find_bytes(0x0f, 0x05);
  /* about to be made, not rewound: malloc's calls, made under its arena lock */
  cr_assert_eq(may_park(sc, 10 /* mprotect */), 0);
  cr_assert_eq(may_park(sc, 28 /* madvise */), 0);
  cr_assert_eq(may_park(sc, 11 /* munmap */), 0);
  cr_assert_eq(may_park(sc, 14 /* rt_sigprocmask */), 0);
  /* calls that wait are rewound when a signal interrupts them */
  cr_assert_eq(may_park(sc, 7 /* poll */), 1);
  cr_assert_eq(may_park(sc, 230 /* clock_nanosleep */), 1);
}

Test(park_libc, remembers_the_code_of_a_restarted_process)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  /* A restart maps the code back as anonymous memory: no name to find it by. */
  void *anon = mmap((void *)CODE_AT, code_len, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  cr_assert_eq(anon, (void *)CODE_AT);
  cr_assert_eq(mana_park_libc_scan(), 0);
  cr_assert_eq(MANA_PARK->n_libc_code, 1);
  cr_assert_eq(may_park(CODE_AT + 0x1000, 0), 0, "parked inside libc's code");
}

/* ---- leaf functions (memset, memcpy, ...): this process's own libc stands for the upper
 * half's, its leaves published as the stub publishes them ---- */

/* The executable mapping of this process's libc. */
static void own_libc_code(uint64_t *lo, uint64_t *hi)
{
  FILE *maps = fopen("/proc/self/maps", "re");
  cr_assert_not_null(maps);
  char line[512];
  *lo = *hi = 0;
  while (!*lo && fgets(line, sizeof(line), maps)) {
    unsigned long a, b;
    char perms[8] = "";
    if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && perms[2] == 'x' &&
        strstr(line, "/libc.so.6")) {
      *lo = a;
      *hi = b;
    }
  }
  fclose(maps);
  cr_assert_neq(*lo, 0, "no executable mapping of libc.so.6 in /proc/self/maps");
}

static void leaves_setup(void)
{
  void *area = mmap((void *)MANA_WINDOW_BASE, 0x20000, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  cr_assert_eq(area, (void *)MANA_WINDOW_BASE, "cannot map the park area: %s", strerror(errno));
  own_libc_code(&MANA_PARK->libc_code[0].lo, &MANA_PARK->libc_code[0].hi);
  MANA_PARK->n_libc_code = 1;
  mana_libc_leaves_publish();
}

TestSuite(park_leaves, .init = leaves_setup);

static void *(*volatile memset_resolved)(void *, int, size_t) = memset;
static void *(*volatile malloc_resolved)(size_t) = malloc;

/* The registers of a thread interrupted `into` bytes into memset, which was called from
 * `return_to`: the return address is on top of its stack, as memset pushes nothing. */
static int may_park_in_memset(uint64_t into, uint64_t return_to)
{
  uint64_t stack[4] = {return_to, 0, 0, 0};
  struct mana_park_regs r = {.ip = (uint64_t)(uintptr_t)memset_resolved + into,
                             .sp = (uint64_t)(uintptr_t)stack};
  return mana_park_libc_may_park(&r);
}

Test(park_leaves, finds_the_leaves_code)
{
  cr_assert_geq(MANA_PARK->n_libc_leaves, 4, "memset, memcpy, memcmp, strlen at least");
  cr_assert_geq(mana_park_libc_find_leaves(), MANA_PARK->n_libc_leaves - 1);
  uint64_t entry = (uint64_t)(uintptr_t)memset_resolved;
  int found = 0;
  for (uint32_t i = 0; i < MANA_PARK->n_libc_leaves; i++) {
    const struct mana_libc_leaf *l = &MANA_PARK->libc_leaves[i];
    if (l->entry != entry)
      continue;
    found = 1;
    cr_assert_neq(l->fde, 0);
    cr_assert(l->lo <= entry && entry < l->hi && l->hi - l->lo < 0x10000,
              "memset at %#lx, its code found at [%#lx, %#lx)", (unsigned long)entry,
              (unsigned long)l->lo, (unsigned long)l->hi);
  }
  cr_assert(found, "memset is not among the leaves published");
}

Test(park_leaves, parks_in_a_leaf_the_application_called)
{
  mana_park_libc_find_leaves();
  uint64_t app = (uint64_t)(uintptr_t)&may_park_in_memset + 8;
  cr_assert_eq(may_park_in_memset(0, app), 1);
  cr_assert_eq(may_park_in_memset(16, app), 1);
}

Test(park_leaves, declines_a_leaf_the_library_called)
{
  /* realloc copies with memcpy under malloc's arena lock */
  mana_park_libc_find_leaves();
  uint64_t in_libc = (uint64_t)(uintptr_t)malloc_resolved + 8;
  cr_assert_eq(may_park_in_memset(0, in_libc), 0);
  cr_assert_eq(may_park_in_memset(16, in_libc), 0);
}

Test(park_leaves, declines_a_leaf_the_stub_called)
{
  /* A wrapper copying a buffer parks at its next park point, not in the middle. */
  mana_park_libc_find_leaves();
  static const unsigned char stub_code[64];
  MANA_BOUNDARY->stub_text_lo = (uint64_t)(uintptr_t)stub_code;
  MANA_BOUNDARY->stub_text_hi = (uint64_t)(uintptr_t)stub_code + sizeof(stub_code);
  cr_assert_eq(may_park_in_memset(16, (uint64_t)(uintptr_t)stub_code + 8), 0);
  cr_assert_eq(may_park_in_memset(16, (uint64_t)(uintptr_t)&may_park_in_memset + 8), 1);
}

Test(park_leaves, declines_elsewhere_in_the_library)
{
  mana_park_libc_find_leaves();
  uint64_t app = (uint64_t)(uintptr_t)&may_park_in_memset + 8;
  uint64_t stack[4] = {app, 0, 0, 0};
  struct mana_park_regs r = {.ip = (uint64_t)(uintptr_t)malloc_resolved + 4,
                             .sp = (uint64_t)(uintptr_t)stack};
  cr_assert_eq(mana_park_libc_may_park(&r), 0, "parked inside malloc");
}

Test(park_leaves, declines_leaves_not_yet_found)
{
  /* Published by the stub, not yet looked up by the lower half: no extent to trust. */
  uint64_t app = (uint64_t)(uintptr_t)&may_park_in_memset + 8;
  cr_assert_eq(may_park_in_memset(16, app), 0);
}
