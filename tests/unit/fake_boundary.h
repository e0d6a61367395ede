/* A fake lower half for unit tests of stub code: the window's first pages (the boundary page,
 * the park area and the MPI thread slots) mapped at their address, the boundary filled with
 * this process's own thread pointer as the lower half's and `table` as its function table. */
#ifndef MANA_TEST_FAKE_BOUNDARY_H
#define MANA_TEST_FAKE_BOUNDARY_H

#include <criterion/criterion.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/mpi_threads.h"
#include "mana/park.h"

static inline struct mana_boundary *fake_boundary_up(struct mana_lh_table *table)
{
  size_t len = 0x1000 + MANA_PARK_AREA_SIZE + MANA_MPI_THREADS_AREA_SIZE;
  void *page = mmap((void *)MANA_WINDOW_BASE, len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  cr_assert_eq(page, (void *)MANA_WINDOW_BASE, "the window's first pages must be free");
  struct mana_boundary *b = MANA_BOUNDARY;
  b->magic = MANA_BOUNDARY_MAGIC;
  b->version = MANA_BOUNDARY_VERSION;
  b->have_fsgsbase = (getauxval(AT_HWCAP2) & 2) != 0;
  b->lower_fs = mana_get_fs((int)b->have_fsgsbase); /* "switching" to ourselves */
  b->lh = table;
  return b;
}

#endif
