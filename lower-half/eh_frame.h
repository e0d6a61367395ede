/* Just enough of the DWARF call frame information in an object's .eh_frame to know where a
 * function interrupted at some instruction was called from: the entry covering an address
 * (through the sorted table of .eh_frame_hdr) and the rule for the canonical frame address
 * there.  The caller's return address is at CFA - 8 on x86-64.
 *
 * Reads memory only: no allocation, no libc, so the CFA rule can be evaluated in a signal
 * handler running on any thread pointer.  Data that does not parse as expected gives an error,
 * never a guess. */
#ifndef MANA_LH_EH_FRAME_H
#define MANA_LH_EH_FRAME_H

#include <stdint.h>

/* DWARF register numbers on x86-64 that a CFA rule may name here. */
enum { MANA_DWARF_RBP = 6, MANA_DWARF_RSP = 7 };

/* The frame description entry (FDE) covering `pc`, found in the binary search table of the
 * .eh_frame_hdr section at `hdr`: its address, and the code it covers in [*lo, *hi).  0 when no
 * entry covers pc or the section is not in the expected form. */
uint64_t mana_eh_frame_find(uint64_t hdr, uint64_t pc, uint64_t *lo, uint64_t *hi);

/* The CFA at `pc` inside the code an FDE covers: register *reg (DWARF number) plus *offset.
 * 0, or -1 when the FDE's instructions use what this reader does not follow (a DWARF
 * expression for the CFA, a state stack deeper than it keeps). */
int mana_eh_frame_cfa(uint64_t fde, uint64_t pc, int *reg, int64_t *offset);

#endif
