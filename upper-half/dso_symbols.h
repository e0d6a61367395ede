/* Symbols of a shared object already in memory, found through its dynamic section the way
 * ld.so finds a vDSO's: the kernel's vDSO, whose entry points mana's stand-in forwards to, and
 * that stand-in once it is loaded. */
#ifndef MANA_DSO_SYMBOLS_H
#define MANA_DSO_SYMBOLS_H

#include <stdint.h>

/* The address of the defined symbol `name` of the object whose ELF header is at `ehdr`, or 0
 * (no such symbol, or no symbol table the lookup understands: it needs DT_HASH). */
uint64_t mana_dso_symbol(uint64_t ehdr, const char *name);

#endif
