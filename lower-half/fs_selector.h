/* How a crossing enters the lower half: `wrfsbase` of the lower-half thread pointer, or the
 * load of an LDT selector whose base is that thread pointer (lower-half/fs_selector.c). */
#ifndef MANA_LH_FS_SELECTOR_H
#define MANA_LH_FS_SELECTOR_H

#include <stddef.h>
#include <stdint.h>

enum mana_fs_switch { MANA_FS_SWITCH_WRFSBASE, MANA_FS_SWITCH_SELECTOR };

/* Reads MANA_FS_SWITCH (auto, the default; selector; wrfsbase).  0, or -1 with a message for
 * an unknown value.  Call once, before the first holder is made. */
int mana_fs_switch_configure(char *err, size_t errlen);
/* The stack of a holder: below 4 GiB when that can be had (a segment descriptor's base has 32
 * bits), else NULL (the caller then lets the thread library choose; crossings to that holder
 * use wrfsbase). */
void *mana_fs_low_stack(size_t size);
/* For slot `slot`, whose holder's thread pointer is `fs`: the selector a crossing loads, or 0
 * for wrfsbase.  In the automatic mode the first call measures both ways on this CPU and keeps
 * the faster.  Forced "selector" that cannot be had is reported and gives 0. */
uint32_t mana_fs_selector_for(uint32_t slot, uint64_t fs);
/* The mode in effect (after the first mana_fs_selector_for), for diagnostics. */
enum mana_fs_switch mana_fs_switch_mode(void);

#endif
