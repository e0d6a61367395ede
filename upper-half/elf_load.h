/* Mapping an ELF executable or ld.so into memory the way the kernel's binfmt_elf would, at an
 * address mana chooses (inside the window for PIE objects and ld.so; at the link address for a
 * non-PIE executable). */
#ifndef MANA_ELF_LOAD_H
#define MANA_ELF_LOAD_H

#include <stddef.h>
#include <stdint.h>

struct mana_elf_image {
  int is_pie;      /* ET_DYN */
  uint64_t bias;   /* load address minus link address */
  uint64_t lo, hi; /* mapped span, page aligned */
  uint64_t entry;  /* runtime entry point */
  uint64_t phdr;   /* runtime address of the program headers */
  uint16_t phnum;
  char interp[256]; /* PT_INTERP, empty if none */
  int has_dynamic;
};

/* Reads the headers of `path` without mapping anything: span (lo/hi at bias 0), PIE-ness,
 * interpreter.  Returns 0, or -1 with a message in `err`. */
int mana_elf_inspect(const char *path, struct mana_elf_image *img, char *err, size_t errlen);

/* Maps `path` with its segments at `bias` (0 for non-PIE).  The caller has made sure the
 * span [lo+bias, hi+bias) is free or reserved by mana (MAP_FIXED is used for each segment). */
int mana_elf_map(const char *path, uint64_t bias, struct mana_elf_image *img, char *err,
                 size_t errlen);

#endif
