/* System calls without libc, for code that runs on the other half's thread pointer (the
 * SIGSYS handler, parking, resuming after restart): libc's wrappers write errno through TLS. */
#ifndef MANA_RAW_SYSCALL_H
#define MANA_RAW_SYSCALL_H
#include <sys/mman.h>
#include <sys/syscall.h>

static inline long mana_raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

static inline long mana_raw_syscall4(long nr, long a, long b, long c, long d)
{
  return mana_raw_syscall6(nr, a, b, c, d, 0, 0);
}

/* Anonymous private memory without malloc (0 bytes maps a page); NULL when the kernel says
 * no. */
static inline void *mana_raw_map(unsigned long bytes)
{
  long p = mana_raw_syscall6(SYS_mmap, 0, (long)(bytes ? bytes : 1), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p < 0 && p > -4096 ? (void *)0 : (void *)p;
}

/* Undoes mana_raw_map(bytes); NULL is ignored. */
static inline void mana_raw_unmap(void *p, unsigned long bytes)
{
  if (p)
    mana_raw_syscall4(SYS_munmap, (long)p, (long)(bytes ? bytes : 1), 0, 0);
}

#endif
