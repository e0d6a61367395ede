/* Huge pages for large anonymous upper-half mappings (huge_pages.h). */
#define _GNU_SOURCE
#include "huge_pages.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"

static bool wanted;

static bool env_is(const char *name, const char *value)
{
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

void mana_huge_pages_init(void)
{
  const char *forked = getenv("MANA_FORKED_WRITERS");
  bool with_forked = forked && *forked && strcmp(forked, "0") != 0;
  wanted = env_is("MANA_HUGE_PAGES", "1") || (with_forked && !env_is("MANA_HUGE_PAGES", "0"));
}

bool mana_huge_pages_for(uint64_t len, long flags)
{
  return wanted && len >= MANA_HUGE_PAGE && (flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED) &&
         !(flags & MAP_HUGETLB);
}

void mana_huge_pages_advise(uint64_t addr, uint64_t len)
{
  mana_raw_syscall4(SYS_madvise, (long)addr, (long)len, MADV_HUGEPAGE, 0);
}

uint64_t mana_huge_pages_min(void)
{
  return wanted ? MANA_HUGE_PAGE : 0;
}
