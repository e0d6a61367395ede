/* System calls without libc, for code that runs on the other half's thread pointer (the
 * SIGSYS handler, parking, resuming after restart): libc's wrappers write errno through TLS. */
#ifndef MANA_RAW_SYSCALL_H
#define MANA_RAW_SYSCALL_H

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

#endif
