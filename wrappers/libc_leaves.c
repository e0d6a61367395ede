/* The C library's leaf functions, for the park handler (lower-half/park_libc.c): functions
 * that take no lock and call nothing, where an application can spend seconds in one call.  A
 * thread the application has inside one of them may park there.
 *
 * Only the upper half knows which implementation its loader chose for each (memset and the
 * others are resolved at load time for the processor): the addresses taken here are the
 * chosen ones.  With each goes the .eh_frame_hdr of the object that holds it, from which the
 * lower half reads the code's extent and how to find its caller. */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>

#include "libc_leaves.h"
#include "mana/park.h"

/* The checking variants the compiler calls under _FORTIFY_SOURCE (glibc's, not in a header). */
void *__memset_chk(void *s, int c, size_t n, size_t size);
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t size);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t size);
void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t size);

struct lookup {
  uint64_t addr, eh_frame_hdr;
};

static int find_eh_frame_hdr(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  struct lookup *l = data;
  uint64_t hdr = 0;
  int holds = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uint64_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && l->addr >= lo &&
        l->addr < lo + ph->p_memsz)
      holds = 1;
    else if (ph->p_type == PT_GNU_EH_FRAME)
      hdr = lo;
  }
  if (holds)
    l->eh_frame_hdr = hdr;
  return holds;
}

uint64_t mana_eh_frame_hdr_of(uint64_t code)
{
  struct lookup l = {code, 0};
  dl_iterate_phdr(find_eh_frame_hdr, &l);
  return l.eh_frame_hdr;
}

void mana_libc_leaves_publish(void)
{
  /* volatile: the addresses the loader resolved, not the compiler's builtins */
  static void *const volatile functions[] = {
      (void *)memset,        (void *)memcpy,        (void *)memmove,      (void *)mempcpy,
      (void *)memcmp,        (void *)memchr,        (void *)memrchr,      (void *)rawmemchr,
      (void *)strlen,        (void *)strnlen,       (void *)__memset_chk, (void *)__memcpy_chk,
      (void *)__memmove_chk, (void *)__mempcpy_chk,
  };
  _Static_assert(sizeof(functions) / sizeof(functions[0]) <= MANA_MAX_LIBC_LEAVES,
                 "more leaves than the park area keeps");
  struct mana_park_area *area = MANA_PARK;
  uint32_t n = 0;
  for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
    uint64_t entry = (uint64_t)(uintptr_t)functions[i], hdr = 0;
    int seen = 0; /* memcpy and memmove are often one implementation */
    for (uint32_t k = 0; k < n; k++)
      seen |= area->libc_leaves[k].entry == entry;
    if (seen || !(hdr = mana_eh_frame_hdr_of(entry)))
      continue;
    area->libc_leaves[n] = (struct mana_libc_leaf){.entry = entry, .eh_frame_hdr = hdr};
    n++;
  }
  __atomic_store_n(&area->n_libc_leaves, n, __ATOMIC_RELEASE);
}
