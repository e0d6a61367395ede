/* The upper half's initial process stack, laid out as the kernel lays out a new process's:
 * argc, argv[], NULL, envp[], NULL, auxv pairs, AT_NULL, then the strings and AT_RANDOM bytes
 * above.  ld.so #2 and libc #2 start from it exactly as they would after execve. */
#ifndef MANA_STACK_H
#define MANA_STACK_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

struct mana_auxv_overrides {
  uint64_t phdr, phnum, entry, base;
  uint64_t sysinfo_ehdr; /* the vDSO the upper half sees (mana's stand-in); 0: the kernel's */
  const char *execfn;
};

/* Builds the stack in [low, high) and returns the initial stack pointer (16-byte aligned,
 * pointing at argc), or 0 if it does not fit.  `kernel_auxv` is this process's own auxv.
 * *execfn_at: where the AT_EXECFN string went (the highest string, above argv's and envp's,
 * which programs that rewrite their argv in place may overwrite). */
uint64_t mana_build_stack(uint64_t low, uint64_t high, char *const argv[], char *const envp[],
                          const Elf64_auxv_t *kernel_auxv, const struct mana_auxv_overrides *ov,
                          uint64_t *execfn_at);

/* Starts the upper half: FS cleared, %rsp at `sp`, jump to `entry` (ld.so's).  Never returns. */
__attribute__((noreturn)) void mana_jump_to_upper(uint64_t sp, uint64_t entry);

#endif
