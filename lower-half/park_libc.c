/* A thread parked at an arbitrary instruction of the upper half's C library may hold one of its
 * locks: malloc's arena lock, a stdio stream's, the loader's.  Nothing in the upper half runs
 * while a checkpoint is taken, so that is harmless then; but after a restart the main thread
 * runs the stub's restart hook before any other thread goes on, and the hook allocates.  If the
 * main thread itself had been parked inside malloc, or another thread holding a lock the hook
 * needs, the restarted rank hung in the hook (signal_masks: threads that allocate with every
 * signal blocked hung one restart in five).
 *
 * So the park handler declines a thread interrupted inside the upper libc or its loader, and the
 * checkpoint thread signals it again a moment later.  Two exceptions:
 *  - A thread waiting in a system call parks there (it would wait forever otherwise), as the
 *    kernel has either rewound it to the system call instruction to restart the call, or the
 *    call returned EINTR.  Locks of libc held across a blocking system call are held by
 *    threads blocked natively too.
 *  - A thread inside one of libc's leaf functions (memset, memcpy, ...: no lock, no call)
 *    that code outside libc called parks there: it holds no lock of libc's.  An application
 *    can spend seconds in one call (MPICH's pt2pt/large_message initializes 2 GB with a loop
 *    the compiler made a memset: its thread was declined until the round timed out).  Called
 *    from inside libc (realloc copies under malloc's arena lock) it is declined as before, and
 *    called from the stub too (a wrapper copying a buffer parks at its next park point).
 *    Which function called it is read from the return address, found through the frame
 *    description the function's object carries (eh_frame.c).
 *
 * The ranges are read before each round and kept in the park area (mana/park.h). */
#define _GNU_SOURCE
#include "park_libc.h"
#include "eh_frame.h"

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
  mana_park_libc_find_leaves();
  return 0;
}

static int in_libc(const struct mana_park_area *area, uint32_t n, uint64_t addr)
{
  for (uint32_t i = 0; i < n; i++)
    if (addr >= area->libc_code[i].lo && addr < area->libc_code[i].hi)
      return 1;
  return 0;
}

/* A leaf is a function, not a library: anything larger is not what the stub asked for. */
#define MAX_LEAF_CODE 0x10000

uint32_t mana_park_libc_find_leaves(void)
{
  struct mana_park_area *area = MANA_PARK;
  uint32_t n_code = __atomic_load_n(&area->n_libc_code, __ATOMIC_ACQUIRE), usable = 0;
  uint32_t n =
      area->n_libc_leaves < MANA_MAX_LIBC_LEAVES ? area->n_libc_leaves : MANA_MAX_LIBC_LEAVES;
  if (n_code > MAX_RANGES)
    n_code = MAX_RANGES;
  for (uint32_t i = 0; i < n; i++) {
    struct mana_libc_leaf *leaf = &area->libc_leaves[i];
    if (__atomic_load_n(&leaf->fde, __ATOMIC_ACQUIRE)) {
      usable++;
      continue;
    }
    uint64_t lo = 0, hi = 0;
    if (!leaf->eh_frame_hdr || !in_libc(area, n_code, leaf->entry))
      continue;
    uint64_t fde = mana_eh_frame_find(leaf->eh_frame_hdr, leaf->entry, &lo, &hi);
    if (!fde || hi - lo > MAX_LEAF_CODE || !in_libc(area, n_code, lo) ||
        !in_libc(area, n_code, hi - 1))
      continue;
    leaf->lo = lo;
    leaf->hi = hi;
    __atomic_store_n(&leaf->fde, fde, __ATOMIC_RELEASE); /* the handler reads it first */
    usable++;
  }
  return usable;
}

/* Whether the thread runs a leaf function that the application called: not libc or its
 * loader, which may hold a lock of libc's, nor the stub, which parks only at its park points
 * (mana/park.h). */
static int in_leaf_called_from_outside(const struct mana_park_area *area, uint32_t n_code,
                                       const struct mana_park_regs *r)
{
  uint32_t n = __atomic_load_n(&area->n_libc_leaves, __ATOMIC_ACQUIRE);
  if (n > MANA_MAX_LIBC_LEAVES)
    n = MANA_MAX_LIBC_LEAVES;
  for (uint32_t i = 0; i < n; i++) {
    const struct mana_libc_leaf *leaf = &area->libc_leaves[i];
    uint64_t fde = __atomic_load_n(&leaf->fde, __ATOMIC_ACQUIRE);
    if (!fde || r->ip < leaf->lo || r->ip >= leaf->hi)
      continue;
    int reg = -1;
    int64_t offset = 0;
    if (mana_eh_frame_cfa(fde, r->ip, &reg, &offset) != 0 ||
        (reg != MANA_DWARF_RSP && reg != MANA_DWARF_RBP))
      return 0;
    uint64_t cfa = (reg == MANA_DWARF_RSP ? r->sp : r->bp) + (uint64_t)offset;
    uint64_t return_to = *(const uint64_t *)(uintptr_t)(cfa - 8);
    /* The stub parks only at its park points: a wrapper copying a buffer is mid-way. */
    const struct mana_boundary *b = MANA_BOUNDARY;
    return !in_libc(area, n_code, return_to) &&
           !(return_to >= b->stub_text_lo && return_to < b->stub_text_hi);
  }
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

int mana_park_libc_may_park(const struct mana_park_regs *r)
{
  const struct mana_park_area *area = MANA_PARK;
  uint32_t n = __atomic_load_n(&area->n_libc_code, __ATOMIC_ACQUIRE);
  if (n > MAX_RANGES)
    n = MAX_RANGES;
  uint64_t ip = r->ip, rax = r->ax;
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
  return in_leaf_called_from_outside(area, n, r);
}
