/* Entering the lower half by loading an LDT selector instead of writing the FS base.
 *
 * Every crossing sets FS to the thread's lower-half thread pointer and back.  `wrfsbase` costs
 * 5 ns on the Intel Xeon VMs we measured and 12 ns on the AMD EPYC ones, where the four of an
 * MPI_Ibcast + MPI_Wait pair were most of the stub's overhead.  Loading a segment selector
 * also sets the FS base, from the descriptor, and on AMD EPYC a selector load plus the
 * `wrfsbase` back cost 13 ns where two `wrfsbase` cost 24 (benchmarks/README.md).  A
 * descriptor's base has 32 bits, so this works only for thread pointers below 4 GiB: holders
 * get their stacks (and with them their thread control blocks) from MAP_32BIT memory.  The
 * way back to the upper half stays `wrfsbase`, as the upper half's thread pointers live in
 * the window.
 *
 * Slot n of mana/mpi_threads.h uses LDT entry n.  The kernel keeps both the selector and the
 * base across context switches (it reloads the selector, then writes back the saved base),
 * and a change to the LDT reloads only DS and ES on the other threads, so a thread back in
 * the upper half with a stale selector in FS keeps its upper base.  The LDT is not part of
 * the image: a restarted process makes it again with its holders, and chooses again (it may
 * run on another CPU). */
#define _GNU_SOURCE
#include "fs_selector.h"

#include <asm/ldt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stdio.h>

#include "mana/boundary.h"
#include "mana/fail.h"
#include "mana/fs_switch.h"
#include "mana/raw_syscall.h"

enum requested { REQ_AUTO, REQ_SELECTOR, REQ_WRFSBASE };
static enum requested requested = REQ_AUTO;
static int decided;
static enum mana_fs_switch mode = MANA_FS_SWITCH_WRFSBASE;

int mana_fs_switch_configure(char *err, size_t errlen)
{
  const char *v = getenv("MANA_FS_SWITCH");
  decided = 0;
  if (!v || !*v || strcmp(v, "auto") == 0)
    requested = REQ_AUTO;
  else if (strcmp(v, "selector") == 0)
    requested = REQ_SELECTOR;
  else if (strcmp(v, "wrfsbase") == 0)
    requested = REQ_WRFSBASE;
  else
    return mana_fail(err, errlen, 0, "MANA_FS_SWITCH=%s: expected auto, selector or wrfsbase", v);
  return 0;
}

void *mana_fs_low_stack(size_t size)
{
  void *p =
      mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* LDT entry `entry` with base `fs`: 0, or the errno of modify_ldt. */
static int write_entry(uint32_t entry, uint64_t fs)
{
  struct user_desc d;
  memset(&d, 0, sizeof(d));
  d.entry_number = entry;
  d.base_addr = (unsigned int)fs;
  d.limit = 0xfffff;
  d.seg_32bit = 1;
  d.limit_in_pages = 1;
  d.useable = 1;
  long r =
      mana_raw_syscall4(SYS_modify_ldt, 0x11 /* write, new format */, (long)&d, (long)sizeof(d), 0);
  return r < 0 ? (int)-r : 0;
}

static inline uint32_t selector_of(uint32_t entry)
{
  return entry << 3 | 4 /* LDT */ | 3 /* RPL 3 */;
}

static inline uint64_t cycles(void)
{
  uint32_t lo, hi;
  __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return (uint64_t)hi << 32 | lo;
}

/* The cheaper way into the lower half on this CPU, timed as crossings with nothing between
 * them (TLS is not touched while FS points at the holder): 1 for the selector.  About a
 * millisecond, once per process. */
static int selector_is_faster(uint32_t sel, uint64_t low_fs)
{
  uint64_t self, best_sel = UINT64_MAX, best_wr = UINT64_MAX;
  __asm__ volatile("rdfsbase %0" : "=r"(self));
  for (int round = 0; round < 5; round++) {
    uint64_t t0 = cycles();
    for (int i = 0; i < 2000; i++) {
      __asm__ volatile("movw %w0, %%fs" ::"r"(sel) : "memory");
      __asm__ volatile("wrfsbase %0" ::"r"(self) : "memory");
    }
    uint64_t t1 = cycles();
    for (int i = 0; i < 2000; i++) {
      __asm__ volatile("wrfsbase %0" ::"r"(low_fs) : "memory");
      __asm__ volatile("wrfsbase %0" ::"r"(self) : "memory");
    }
    uint64_t t2 = cycles();
    if (t1 - t0 < best_sel)
      best_sel = t1 - t0;
    if (t2 - t1 < best_wr)
      best_wr = t2 - t1;
  }
  /* a clear gain only: on a tie the kernel's cheaper context switch (no selector) wins */
  return best_sel * 10 < best_wr * 9;
}

uint32_t mana_fs_selector_for(uint32_t slot, uint64_t fs)
{
  if (requested == REQ_WRFSBASE || (decided && mode == MANA_FS_SWITCH_WRFSBASE))
    return 0;
  if (fs >= (1ULL << 32)) {
    if (requested == REQ_SELECTOR)
      fprintf(stderr,
              "mana_lh: MANA_FS_SWITCH=selector: MPI thread slot %u's thread pointer "
              "%#lx is above 4 GiB; it enters MPI with wrfsbase\n",
              slot, (unsigned long)fs);
    return 0;
  }
  int e = write_entry(slot, fs);
  if (e != 0) {
    if (requested == REQ_SELECTOR)
      fprintf(stderr,
              "mana_lh: MANA_FS_SWITCH=selector: cannot write LDT entry %u: %s; "
              "entering MPI with wrfsbase\n",
              slot, strerror(e));
    decided = 1;
    mode = MANA_FS_SWITCH_WRFSBASE;
    return 0;
  }
  uint32_t sel = selector_of(slot);
  if (!decided) {
    decided = 1;
    /* without FSGSBASE the alternative is a system call, and there is nothing to time */
    int fast =
        requested == REQ_SELECTOR || !MANA_BOUNDARY->have_fsgsbase || selector_is_faster(sel, fs);
    mode = fast ? MANA_FS_SWITCH_SELECTOR : MANA_FS_SWITCH_WRFSBASE;
  }
  return mode == MANA_FS_SWITCH_SELECTOR ? sel : 0;
}

enum mana_fs_switch mana_fs_switch_mode(void)
{
  return mode;
}
