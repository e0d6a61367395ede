/* Symbol lookup in a mapped shared object (see dso_symbols.h).  A linear walk of the dynamic
 * symbol table: the objects it serves have a dozen symbols, and it runs at start only. */
#include "dso_symbols.h"

#include <elf.h>
#include <string.h>

uint64_t mana_dso_symbol(uint64_t ehdr_addr, const char *name)
{
  if (!ehdr_addr)
    return 0;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(uintptr_t)ehdr_addr;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(uintptr_t)(ehdr_addr + eh->e_phoff);
  uint64_t bias = 0;
  const Elf64_Dyn *dyn = NULL;
  int have_load = 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      /* the first segment maps the header: its address less its link address is the bias */
      bias = ehdr_addr + ph[i].p_offset - ph[i].p_vaddr;
      have_load = 1;
    }
  }
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(uintptr_t)(bias + ph[i].p_vaddr);
  if (!have_load || !dyn)
    return 0;
  const Elf64_Sym *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *hash = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB)
      symtab = (const Elf64_Sym *)(uintptr_t)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB)
      strtab = (const char *)(uintptr_t)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH)
      hash = (const uint32_t *)(uintptr_t)(bias + dyn->d_un.d_ptr);
  }
  if (!symtab || !strtab || !hash)
    return 0;
  uint32_t nsyms = hash[1]; /* nchain: one entry per symbol */
  for (uint32_t i = 1; i < nsyms; i++) {
    const Elf64_Sym *s = &symtab[i];
    if (s->st_shndx == SHN_UNDEF || strcmp(strtab + s->st_name, name) != 0)
      continue;
    return bias + s->st_value;
  }
  return 0;
}
