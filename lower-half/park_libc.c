/* A thread parked at an arbitrary instruction of the upper half's C library may hold one of its
 * locks: malloc's arena lock, a stdio stream's, the loader's.  Nothing in the upper half runs
 * while a checkpoint is taken, so that is harmless then; but after a restart the main thread
 * runs the stub's restart hook before any other thread goes on, and the hook allocates.  If the
 * main thread itself had been parked inside malloc, or another thread holding a lock the hook
 * needs, the restarted rank hung in the hook (signal_masks: threads that allocate with every
 * signal blocked hung one restart in five).
 *
 * So the park handler declines a thread interrupted inside the upper libc or its loader, and the
 * checkpoint thread signals it again a moment later.  A thread waiting in a system call is the
 * exception: it parks there (it would wait forever otherwise), as the kernel has either rewound
 * it to the system call instruction to restart the call, or the call returned EINTR.  Locks of
 * libc held across a blocking system call are held by threads blocked natively too.
 *
 * The ranges are read before each round and kept in the park area (mana/park.h). */
#define _GNU_SOURCE
#include "park_libc.h"

#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <string.h>

#include "mana/boundary.h"
#include "mana/park.h"

#define MAX_RANGES (sizeof(MANA_PARK->libc_code) / sizeof(MANA_PARK->libc_code[0]))

/* libc.so.6 or ld-linux-x86-64.so.2, by the file name of the mapping. */
static int is_libc_or_loader(const char *path)
{
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0 ||
         strncmp(base, "ld-linux", 8) == 0;
}

int mana_park_libc_scan(void)
{
  FILE *maps = fopen("/proc/self/maps", "re");
  if (!maps)
    return -1;
  struct mana_park_area *area = MANA_PARK;
  char line[512];
  uint32_t n = 0;
  while (n < MAX_RANGES && fgets(line, sizeof(line), maps)) {
    unsigned long lo, hi;
    char perms[8] = "";
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*u %n", &lo, &hi, perms, &path_at) < 3 || !path_at ||
        perms[2] != 'x' || lo < MANA_WINDOW_BASE || hi > MANA_WINDOW_END)
      continue;
    line[strcspn(line, "\n")] = '\0';
    if (!is_libc_or_loader(line + path_at))
      continue;
    area->libc_code[n].lo = lo;
    area->libc_code[n].hi = hi;
    n++;
  }
  fclose(maps);
  /* A restarted process has its upper half's code back as anonymous memory, at the addresses
   * the image (and this area in it) recorded. */
  if (n)
    __atomic_store_n(&area->n_libc_code, n, __ATOMIC_RELEASE);
  return 0;
}

/* System calls that never wait, so never come back rewound: a thread found at one of their
 * `syscall` instructions has not made it yet, and may hold a lock of libc's (malloc's, around
 * its mprotect, madvise and munmap).  The kernel leaves the same registers for a call rewound
 * and for one about to be made (the number in rax), so only the number tells them apart. */
static int never_waits(uint64_t nr)
{
  switch (nr) {
  case SYS_mmap:
  case SYS_munmap:
  case SYS_mprotect:
  case SYS_madvise:
  case SYS_mremap:
  case SYS_brk:
  case SYS_rt_sigprocmask:
  case SYS_rt_sigaction:
  case SYS_tgkill:
  case SYS_tkill:
  case SYS_kill:
  case SYS_getpid:
  case SYS_gettid:
  case SYS_lseek:
  case SYS_fstat:
  case SYS_newfstatat:
  case SYS_statx:
  case SYS_mincore:
  case SYS_sched_getaffinity:
  case SYS_sched_yield:
  case SYS_prctl:
  case SYS_clock_gettime:
  case SYS_gettimeofday:
  case SYS_getrusage:
  case SYS_set_robust_list:
  case SYS_rseq:
  case SYS_clone:
  case SYS_clone3:
  case SYS_exit:
  case SYS_exit_group:
    return 1;
  default:
    return 0;
  }
}

int mana_park_libc_may_park(uint64_t ip, uint64_t rax)
{
  const struct mana_park_area *area = MANA_PARK;
  uint32_t n = __atomic_load_n(&area->n_libc_code, __ATOMIC_ACQUIRE);
  if (n > MAX_RANGES)
    n = MAX_RANGES;
  uint32_t in = n;
  for (uint32_t i = 0; i < n && in == n; i++)
    if (ip >= area->libc_code[i].lo && ip < area->libc_code[i].hi)
      in = i;
  if (in == n)
    return 1;
  const unsigned char *at = (const unsigned char *)(uintptr_t)ip;
  /* rewound to issue the call again once the handler returns */
  if (ip + 2 <= area->libc_code[in].hi && at[0] == 0x0f && at[1] == 0x05)
    return !never_waits(rax);
  /* just after a system call that returned EINTR to this thread */
  if (ip >= area->libc_code[in].lo + 2 && at[-2] == 0x0f && at[-1] == 0x05 &&
      (int64_t)rax == -EINTR)
    return 1;
  return 0;
}
