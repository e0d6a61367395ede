/* Unit tests of the call frame reader (lower-half/eh_frame.c), checked against the unwinder of
 * libgcc on real code: the entry it finds for an address is libgcc's, and the CFA its rules
 * give in each frame of a live stack (this test's functions, libc's qsort, which pushes and
 * pops registers) is the CFA libgcc computes there. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "../../lower-half/eh_frame.h"
#include "../../wrappers/libc_leaves.h"

/* libgcc's own lookup (exported by libgcc_s, declared in none of its public headers). */
struct dwarf_eh_bases {
  void *tbase, *dbase, *func;
};
void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

/* The .eh_frame_hdr of the object holding pc (what the stub publishes for the park handler). */
static uint64_t hdr_of(uint64_t pc)
{
  return mana_eh_frame_hdr_of(pc);
}

static void *(*volatile memset_resolved)(void *, int, size_t) = memset;

Test(eh_frame, finds_the_entry_libgcc_finds)
{
  uint64_t pcs[] = {(uint64_t)(uintptr_t)memset_resolved, (uint64_t)(uintptr_t)memset_resolved + 12,
                    (uint64_t)(uintptr_t)qsort + 3, (uint64_t)(uintptr_t)mana_eh_frame_hdr_of + 5};
  for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++) {
    uint64_t lo = 0, hi = 0, hdr = hdr_of(pcs[i]);
    cr_assert_neq(hdr, 0, "no .eh_frame_hdr for %#lx", (unsigned long)pcs[i]);
    uint64_t fde = mana_eh_frame_find(hdr, pcs[i], &lo, &hi);
    struct dwarf_eh_bases bases;
    void *expected = _Unwind_Find_FDE((void *)(uintptr_t)pcs[i], &bases);
    cr_assert_eq(fde, (uint64_t)(uintptr_t)expected, "pc %#lx: entry %#lx, libgcc's %p",
                 (unsigned long)pcs[i], (unsigned long)fde, expected);
    cr_assert(lo <= pcs[i] && pcs[i] < hi && (uint64_t)(uintptr_t)bases.func == lo,
              "pc %#lx: [%#lx, %#lx), function at %p", (unsigned long)pcs[i], (unsigned long)lo,
              (unsigned long)hi, bases.func);
  }
}

Test(eh_frame, a_function_entry_has_its_return_address_on_top)
{
  uint64_t lo = 0, hi = 0, entry = (uint64_t)(uintptr_t)qsort;
  uint64_t fde = mana_eh_frame_find(hdr_of(entry), entry, &lo, &hi);
  int reg = -1;
  int64_t offset = 0;
  cr_assert_eq(mana_eh_frame_cfa(fde, lo, &reg, &offset), 0);
  cr_assert_eq(reg, MANA_DWARF_RSP);
  cr_assert_eq(offset, 8);
}

Test(eh_frame, nothing_outside_the_tables)
{
  uint64_t lo = 0, hi = 0;
  static char data[64];
  uint64_t hdr = hdr_of((uint64_t)(uintptr_t)memset_resolved);
  cr_assert_eq(mana_eh_frame_find(hdr, 16, &lo, &hi), 0);
  cr_assert_eq(mana_eh_frame_find(hdr, (uint64_t)(uintptr_t)data, &lo, &hi), 0);
  /* not an .eh_frame_hdr: version 0 */
  cr_assert_eq(mana_eh_frame_find((uint64_t)(uintptr_t)data, 0, &lo, &hi), 0);
}

/* ---- the CFA in every frame of a live stack ---- */

/* libgcc's _Unwind_GetCFA(context) of a frame is the stack pointer in that frame (the CFA of
 * the frame it called): the CFA this reader gives for a frame is what libgcc reports for the
 * next one out. */
struct walk {
  int frames, compared, mismatches;
  uint64_t predicted, predicted_pc; /* the CFA of the frame before, when its rule uses rsp */
  char first_mismatch[160];
};

static _Unwind_Reason_Code each_frame(struct _Unwind_Context *ctx, void *arg)
{
  struct walk *w = arg;
  int before = 0;
  uint64_t ip = (uint64_t)_Unwind_GetIPInfo(ctx, &before), sp = (uint64_t)_Unwind_GetCFA(ctx);
  if (w->predicted) {
    w->compared++;
    if (w->predicted != sp && !w->mismatches++)
      snprintf(w->first_mismatch, sizeof(w->first_mismatch), "pc %#lx: CFA %#lx, libgcc's %#lx",
               (unsigned long)w->predicted_pc, (unsigned long)w->predicted, (unsigned long)sp);
  }
  w->predicted = 0;
  if (!ip)
    return _URC_END_OF_STACK;
  w->frames++;
  uint64_t pc = before ? ip : ip - 1; /* a return address may follow a call that never returns */
  uint64_t lo = 0, hi = 0, hdr = hdr_of(pc);
  uint64_t fde = hdr ? mana_eh_frame_find(hdr, pc, &lo, &hi) : 0;
  int reg = -1;
  int64_t offset = 0;
  if (fde && mana_eh_frame_cfa(fde, pc, &reg, &offset) == 0 && reg == MANA_DWARF_RSP) {
    w->predicted = sp + (uint64_t)offset; /* a frame pointer's value is not known here */
    w->predicted_pc = pc;
  }
  return _URC_NO_REASON;
}

static struct walk walked;

static int compare_and_walk(const void *a, const void *b)
{
  if (!walked.frames)
    _Unwind_Backtrace(each_frame, &walked);
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

Test(eh_frame, gives_libgcc_s_cfa_in_every_frame)
{
  int values[64];
  for (int i = 0; i < 64; i++)
    values[i] = (i * 37) % 64;
  qsort(values, 64, sizeof(int), compare_and_walk);
  cr_assert_geq(walked.frames, 4, "the stack: this test, qsort's frames, Criterion's");
  cr_assert_geq(walked.compared, 3, "%d of %d frames compared", walked.compared, walked.frames);
  cr_assert_eq(walked.mismatches, 0, "%d mismatches; first %s", walked.mismatches,
               walked.first_mismatch);
}
