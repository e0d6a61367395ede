/* Building the upper half inside the window: ld.so #2, the application and its initial stack.
 * The result is ready to jump to; nothing of the application has run yet. */
#ifndef MANA_LOADER_H
#define MANA_LOADER_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "mana/boundary.h"

struct mana_window;

struct mana_upper_start {
  uint64_t sp, entry;
  uint64_t app_base, ldso_base, stack_low, stack_high;
  struct mana_range non_pie; /* the application's span if it is not PIE, else {0,0} */
  uint64_t vdso_base;        /* mana's stand-in for the vDSO: its ELF header */
  uint64_t app_path;         /* the application's absolute path, a string on that stack */
};

/* Loads ld.so, the application and `vdso_path` (mana's stand-in for the vDSO, named to ld.so
 * as AT_SYSINFO_EHDR) into the window and builds the initial stack. */
int mana_load_upper(struct mana_window *w, const char *app_path, const char *vdso_path,
                    char *const argv[], char *const envp[], const Elf64_auxv_t *kernel_auxv,
                    struct mana_upper_start *out, char *err, size_t errlen);

#endif
