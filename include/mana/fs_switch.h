/* Switching the x86-64 FS base between the halves.
 *
 * Each half has its own libc and therefore its own thread pointer (TLS, errno, the stack
 * protector canary at %fs:0x28).  With FSGSBASE (Linux >= 5.9 exposes it as AT_HWCAP2 bit 1)
 * a switch is one unprivileged instruction; otherwise arch_prctl, issued as a raw syscall
 * because libc's wrapper would write errno through the thread pointer we are changing.
 * Code that runs across a switch must be built with -fno-stack-protector. */
#ifndef MANA_FS_SWITCH_H
#define MANA_FS_SWITCH_H

#include <stdint.h>
#include <asm/prctl.h>
#include <sys/syscall.h>

static inline uint64_t mana_raw_syscall2(long nr, uint64_t a, uint64_t b)
{
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
  return (uint64_t)ret;
}

static inline uint64_t mana_get_fs(int have_fsgsbase)
{
  uint64_t v;
  if (__builtin_expect(have_fsgsbase, 1)) {
    __asm__ volatile("rdfsbase %0" : "=r"(v)::"memory");
    return v;
  }
  mana_raw_syscall2(SYS_arch_prctl, ARCH_GET_FS, (uint64_t)&v);
  return v;
}

static inline void mana_set_fs(int have_fsgsbase, uint64_t v)
{
  if (__builtin_expect(have_fsgsbase, 1)) {
    __asm__ volatile("wrfsbase %0" ::"r"(v) : "memory");
    return;
  }
  mana_raw_syscall2(SYS_arch_prctl, ARCH_SET_FS, v);
}

/* Enters the lower half by loading `sel`, an LDT selector whose base is the lower-half thread
 * pointer (lower-half/fs_selector.c); cheaper than wrfsbase on some CPUs.  The selector stays
 * in FS after the base is written back: the kernel preserves a written base across switches. */
static inline void mana_load_fs_selector(uint32_t sel)
{
  __asm__ volatile("movw %w0, %%fs" ::"r"(sel) : "memory");
}

#endif
