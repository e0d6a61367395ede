/* mana's stand-in for the vDSO, loaded into the upper half and named to the application's
 * ld.so as AT_SYSINFO_EHDR (upper-half/loader.c).  The upper half's libc finds its time
 * functions here; each one forwards to the kernel's vDSO and adds to CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME the offsets a restart set (mana/app_clocks.h), so that those clocks go on
 * from where the checkpoint left them on whatever node the job restarts.
 *
 * ld.so takes a vDSO as it finds it in memory: no relocation is applied.  So this object has
 * none: no libc, no data pointers, nothing but code that reads the boundary page at its fixed
 * address (the kernel's entry points and the offsets live there, the lower half fills them).
 * It runs on the application's thread pointer and stack: no TLS, no stack protector.
 *
 * The re-issue trampolines at the end are where a trapped call that waits until an absolute
 * time on those clocks goes on (lower-half/clock_calls.c): the waiting must happen in
 * upper-half code, where a checkpoint can park the thread. */
#include <stddef.h>
#include <stdint.h>

#include "mana/app_clocks.h"
#include "mana/boundary.h"

struct kernel_timespec {
  int64_t tv_sec;
  int64_t tv_nsec;
};
struct kernel_timeval;
struct kernel_timezone;

static long raw_syscall2(long nr, long a, long b)
{
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
  return ret;
}

static long raw_syscall3(long nr, long a, long b, long c)
{
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(nr), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return ret;
}

static void add_offset(struct kernel_timespec *ts, int64_t off)
{
  int64_t ns = ts->tv_nsec + off % MANA_NSEC_PER_SEC;
  int64_t s = ts->tv_sec + off / MANA_NSEC_PER_SEC;
  if (ns < 0) {
    ns += MANA_NSEC_PER_SEC;
    s--;
  } else if (ns >= MANA_NSEC_PER_SEC) {
    ns -= MANA_NSEC_PER_SEC;
    s++;
  }
  ts->tv_sec = s;
  ts->tv_nsec = ns;
}

int __vdso_clock_gettime(long clockid, struct kernel_timespec *ts)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t entry = b->vdso_entries[MANA_VDSO_CLOCK_GETTIME];
  long r = entry ? ((long (*)(long, struct kernel_timespec *))entry)(clockid, ts)
                 : raw_syscall2(228 /* clock_gettime */, clockid, (long)ts);
  int idx = mana_clock_offset_index(clockid);
  if (r == 0 && idx >= 0) {
    int64_t off = __atomic_load_n(&b->clock_offset_ns[idx], __ATOMIC_RELAXED);
    if (off)
      add_offset(ts, off);
  }
  return (int)r;
}

int __vdso_clock_getres(long clockid, struct kernel_timespec *res)
{
  uint64_t entry = MANA_BOUNDARY->vdso_entries[MANA_VDSO_CLOCK_GETRES];
  return entry ? ((int (*)(long, struct kernel_timespec *))entry)(clockid, res)
               : (int)raw_syscall2(229 /* clock_getres */, clockid, (long)res);
}

int __vdso_gettimeofday(struct kernel_timeval *tv, struct kernel_timezone *tz)
{
  uint64_t entry = MANA_BOUNDARY->vdso_entries[MANA_VDSO_GETTIMEOFDAY];
  return entry ? ((int (*)(struct kernel_timeval *, struct kernel_timezone *))entry)(tv, tz)
               : (int)raw_syscall2(96 /* gettimeofday */, (long)tv, (long)tz);
}

long __vdso_time(long *t)
{
  uint64_t entry = MANA_BOUNDARY->vdso_entries[MANA_VDSO_TIME];
  return entry ? ((long (*)(long *))entry)(t) : raw_syscall2(201 /* time */, (long)t, 0);
}

long __vdso_getcpu(unsigned *cpu, unsigned *node, void *unused)
{
  uint64_t entry = MANA_BOUNDARY->vdso_entries[MANA_VDSO_GETCPU];
  return entry ? ((long (*)(unsigned *, unsigned *, void *))entry)(cpu, node, unused)
               : raw_syscall3(309 /* getcpu */, (long)cpu, (long)node, (long)unused);
}

/* The re-issue trampolines.  The SIGSYS handler cannot give the call its kernel time in place
 * (the handler must not wait: a thread is not parked inside it), nor write to the stack (its
 * own signal frame lies just below the red zone), so it sends the thread here with
 *   %rax  the system call number,        %r11  the kernel's deadline in nanoseconds,
 *   %rcx  the address to return to      (both are clobbered by a system call anyway),
 * and every argument register as the application set it.  A trampoline takes a block below
 * the red zone, writes the deadline there as a timespec, points the call's timeout argument
 * at it (%r10 for futex, %rdx for clock_nanosleep), makes the call, puts the application's
 * register back and returns.  The seccomp filter lets calls from between the two
 * mana_vdso_reissue_* labels through untrapped. */
__asm__(".text\n"
        ".globl mana_vdso_reissue_start\n"
        ".globl mana_vdso_reissue_end\n"
        ".globl mana_vdso_reissue_r10\n"
        ".globl mana_vdso_reissue_rdx\n"
        ".type mana_vdso_reissue_r10, @function\n"
        ".type mana_vdso_reissue_rdx, @function\n"
        "mana_vdso_reissue_start:\n"
        /* block: 0 tv_sec, 8 tv_nsec, 16 saved r10, 24 saved rdx, 32 return address, 40 nr */
        "mana_vdso_reissue_r10:\n"
        "  sub $176, %rsp\n"
        "  mov %rcx, 32(%rsp)\n"
        "  mov %rax, 40(%rsp)\n"
        "  mov %r10, 16(%rsp)\n"
        "  mov %rdx, 24(%rsp)\n"
        "  call mana_vdso_split_deadline\n"
        "  mov 24(%rsp), %rdx\n"
        "  mov %rsp, %r10\n"
        "  jmp mana_vdso_reissue_call\n"
        "mana_vdso_reissue_rdx:\n"
        "  sub $176, %rsp\n"
        "  mov %rcx, 32(%rsp)\n"
        "  mov %rax, 40(%rsp)\n"
        "  mov %r10, 16(%rsp)\n"
        "  mov %rdx, 24(%rsp)\n"
        "  call mana_vdso_split_deadline\n"
        "  mov 16(%rsp), %r10\n"
        "  mov %rsp, %rdx\n"
        "mana_vdso_reissue_call:\n"
        "  mov 40(%rsp), %rax\n"
        "  syscall\n"
        "mana_vdso_reissue_end:\n"
        "  mov 16(%rsp), %r10\n"
        "  mov 24(%rsp), %rdx\n"
        "  mov 32(%rsp), %rcx\n"
        "  add $176, %rsp\n"
        "  jmp *%rcx\n"
        /* %r11 nanoseconds -> 8(%rsp) (the caller's block: 8 above our return address) as a
         * timespec; clobbers %rax, %rdx, %r10 (restored by the caller). */
        "mana_vdso_split_deadline:\n"
        "  mov %r11, %rax\n"
        "  xor %edx, %edx\n"
        "  mov $1000000000, %r10\n"
        "  div %r10\n"
        "  mov %rax, 8(%rsp)\n"
        "  mov %rdx, 16(%rsp)\n"
        "  ret\n");
