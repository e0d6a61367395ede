/* Entering the lower half by an LDT selector (lower-half/fs_selector.c, the crossing macros of
 * wrappers/stub.h) against a fake lower half: a boundary page and a thread slot at the
 * window's address, and two fake lower-half thread pointers whose first word tells them
 * apart: a low one (below 4 GiB) that the slot's selector points at, and a decoy that the
 * slot's lower_fs holds.  A function called through the crossing reads %fs:0, so the test
 * sees which way the stub entered, and that the upper half's thread pointer is back after. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake_boundary.h"
#include "fs_selector.h"
#include "stub.h"

#define LOW_MARK 0x10e41ull
#define DECOY_MARK 0xdec0ull

/* ---- what the crossing macros need from the rest of the stub ---- */

static struct mana_lh_table table;

void mana_park_point(void)
{
}

__thread struct mana_mpi_thread *mana_self_thread;

struct mana_mpi_thread *mana_thread_attach(void)
{
  struct mana_mpi_thread *t = &MANA_MPI_THREADS->slot[0];
  t->upper_fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  return mana_self_thread = t;
}

/* The fake lower half's MPI_Get_version: runs on whatever thread pointer the crossing set, so
 * it reads only %fs:0 and writes only through its arguments. */
static int f_get_version(int *version, int *subversion)
{
  uint64_t first;
  __asm__ volatile("movq %%fs:0, %0" : "=r"(first));
  *version = (int)first;
  *subversion = (int)(first >> 32);
  return MPI_SUCCESS;
}

static uint64_t low_fs, decoy_fs;

static void boundary_up(void)
{
  table.MPI_Get_version = f_get_version;
  fake_boundary_up(&table);

  uint64_t *low = mana_fs_low_stack(4096);
  cr_assert_not_null(low, "no memory below 4 GiB");
  cr_assert_lt((uint64_t)low, 1ULL << 32);
  uint64_t *decoy = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(decoy, MAP_FAILED);
  low[0] = LOW_MARK;
  decoy[0] = DECOY_MARK;
  low_fs = (uint64_t)low;
  decoy_fs = (uint64_t)decoy;
  struct mana_mpi_thread *t = mana_thread_attach();
  t->lower_fs = decoy_fs;
}

TestSuite(fs_selector, .init = boundary_up, .timeout = 30);

/* One crossing; returns the first word of the thread pointer the fake lower half ran on. */
static uint64_t cross(void)
{
  int lo = 0, hi = 0;
  int rc = MANA_LH_CALL(MPI_Get_version, &lo, &hi);
  cr_assert_eq(rc, MPI_SUCCESS);
  return (uint64_t)(uint32_t)lo | (uint64_t)(uint32_t)hi << 32;
}

/* The upper half's thread pointer is back: its TLS (errno) works, the base is the slot's. */
static void assert_upper_back(void)
{
  errno = 0;
  errno = 42;
  cr_assert_eq(errno, 42);
  cr_assert_eq(mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase), mana_self_thread->upper_fs,
               "the crossing did not restore the upper half's thread pointer");
}

static uint32_t selector_in(const char *mode, uint32_t slot, uint64_t fs)
{
  char err[256] = "";
  setenv("MANA_FS_SWITCH", mode, 1);
  cr_assert_eq(mana_fs_switch_configure(err, sizeof(err)), 0, "%s", err);
  return mana_fs_selector_for(slot, fs);
}

Test(fs_selector, forced_selector_enters_through_the_ldt_entry)
{
  uint32_t sel = selector_in("selector", 7, low_fs);
  cr_assert_eq(sel, (7u << 3) | 7u, "slot 7 gets LDT entry 7 at RPL 3, got %#x", sel);
  cr_assert_eq(mana_fs_switch_mode(), MANA_FS_SWITCH_SELECTOR);
  mana_self_thread->lower_sel = sel;
  for (int i = 0; i < 3; i++) {
    uint64_t seen = cross();
    cr_assert_eq(seen, LOW_MARK,
                 "crossing %d ran on %#llx, not on the selector's base (the decoy is %#llx)", i,
                 (unsigned long long)seen, (unsigned long long)DECOY_MARK);
    assert_upper_back();
  }
}

Test(fs_selector, without_a_selector_the_crossing_writes_lower_fs)
{
  cr_assert_eq(selector_in("wrfsbase", 7, low_fs), 0);
  cr_assert_eq(mana_fs_switch_mode(), MANA_FS_SWITCH_WRFSBASE);
  mana_self_thread->lower_sel = 0;
  cr_assert_eq(cross(), DECOY_MARK);
  assert_upper_back();
}

Test(fs_selector, automatic_mode_enters_the_way_it_chose)
{
  uint32_t sel = selector_in("auto", 3, low_fs);
  enum mana_fs_switch m = mana_fs_switch_mode();
  cr_assert_eq(m, sel ? MANA_FS_SWITCH_SELECTOR : MANA_FS_SWITCH_WRFSBASE);
  /* the choice holds for the slots after the first, without timing again */
  cr_assert_eq(mana_fs_selector_for(4, low_fs) != 0, sel != 0);
  mana_self_thread->lower_sel = sel;
  mana_self_thread->lower_fs = sel ? decoy_fs : low_fs;
  cr_assert_eq(cross(), LOW_MARK, "the crossing ran on neither the selector's base nor lower_fs");
  assert_upper_back();
}

Test(fs_selector, a_thread_pointer_above_4_gib_gets_no_selector)
{
  cr_assert_eq(selector_in("selector", 5, decoy_fs | (1ULL << 40)), 0);
}

Test(fs_selector, an_unknown_mode_is_refused_with_the_choices)
{
  char err[256] = "";
  setenv("MANA_FS_SWITCH", "segment", 1);
  cr_assert_eq(mana_fs_switch_configure(err, sizeof(err)), -1);
  cr_assert(strstr(err, "MANA_FS_SWITCH=segment") && strstr(err, "auto, selector or wrfsbase"),
            "message: %s", err);
}
