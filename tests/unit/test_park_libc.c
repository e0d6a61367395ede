/* Unit tests of where a thread may park (lower-half/park_libc.c): never inside the upper half's
 * C library, unless it waits in a system call; the library's code is found by file name and
 * remembered for a restarted process, whose code is anonymous memory. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mana/park.h"
#include "../../lower-half/park_libc.h"

#define LIBC_PATH "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define CODE_AT (MANA_WINDOW_BASE + 0x400000)

static size_t code_len;

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
  cr_assert_eq(mana_park_libc_may_park(plain_code(), 0), 0, "parked inside libc's code");
}

Test(park_libc, parks_outside_the_library)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  cr_assert_eq(mana_park_libc_may_park(CODE_AT - 1, 0), 1);
  cr_assert_eq(mana_park_libc_may_park(CODE_AT + code_len, 0), 1);
  cr_assert_eq(mana_park_libc_may_park((uint64_t)(uintptr_t)&setup, 0), 1);
}

Test(park_libc, parks_in_a_waiting_system_call)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  uint64_t sc = find_bytes(0x0f, 0x05);
  /* rewound by the kernel to restart the call */
  cr_assert_eq(mana_park_libc_may_park(sc, 202 /* futex */), 1);
  /* the call returned EINTR to the thread */
  cr_assert_eq(mana_park_libc_may_park(sc + 2, (uint64_t)-EINTR), 1);
  /* the call returned a result: the thread runs libc's code again (maybe under a lock) */
  cr_assert_eq(mana_park_libc_may_park(sc + 2, 0), 0);
}

Test(park_libc, declines_before_a_call_that_never_waits)
{
  cr_assert_eq(mana_park_libc_scan(), 0);
  uint64_t sc = find_bytes(0x0f, 0x05);
  /* about to be made, not rewound: malloc's calls, made under its arena lock */
  cr_assert_eq(mana_park_libc_may_park(sc, 10 /* mprotect */), 0);
  cr_assert_eq(mana_park_libc_may_park(sc, 28 /* madvise */), 0);
  cr_assert_eq(mana_park_libc_may_park(sc, 11 /* munmap */), 0);
  cr_assert_eq(mana_park_libc_may_park(sc, 14 /* rt_sigprocmask */), 0);
  /* calls that wait are rewound when a signal interrupts them */
  cr_assert_eq(mana_park_libc_may_park(sc, 7 /* poll */), 1);
  cr_assert_eq(mana_park_libc_may_park(sc, 230 /* clock_nanosleep */), 1);
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
  cr_assert_eq(mana_park_libc_may_park(CODE_AT + 0x1000, 0), 0, "parked inside libc's code");
}
