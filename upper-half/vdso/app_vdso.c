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
 * The trampolines at the end are where trapped calls that wait go on (lower-half/
 * clock_calls.c): the waiting must happen in upper-half code, where a checkpoint can park the
 * thread.  Built with general registers only: code the application thinks is a system call
 * must leave its vector registers alone. */
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

/* The kernel's reading of a clock, without offset. */
static int64_t kernel_now(long clockid)
{
  struct kernel_timespec ts = {0, 0};
  uint64_t entry = MANA_BOUNDARY->vdso_entries[MANA_VDSO_CLOCK_GETTIME];
  if (entry)
    ((long (*)(long, struct kernel_timespec *))entry)(clockid, &ts);
  else
    raw_syscall2(228 /* clock_gettime */, clockid, (long)&ts);
  return ts.tv_sec * MANA_NSEC_PER_SEC + ts.tv_nsec;
}

static int64_t offset_of(long clockid)
{
  int idx = mana_clock_offset_index(clockid);
  return idx < 0 ? 0 : __atomic_load_n(&MANA_BOUNDARY->clock_offset_ns[idx], __ATOMIC_RELAXED);
}

int __vdso_clock_gettime(long clockid, struct kernel_timespec *ts)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t entry = b->vdso_entries[MANA_VDSO_CLOCK_GETTIME];
  int idx = mana_clock_offset_index(clockid);
  if (idx < 0 && entry) /* the wall clock (MPI_Wtime's): a jump straight to the kernel's */
    return ((int (*)(long, struct kernel_timespec *))entry)(clockid, ts);
  long r = entry ? ((long (*)(long, struct kernel_timespec *))entry)(clockid, ts)
                 : raw_syscall2(228 /* clock_gettime */, clockid, (long)ts);
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

_Static_assert(offsetof(struct mana_sleep_block, deadline_sec) == MANA_SLEEP_BLOCK_DEADLINE &&
                   offsetof(struct mana_sleep_block, clock) == MANA_SLEEP_BLOCK_CLOCK &&
                   offsetof(struct mana_sleep_block, app_mask) == MANA_SLEEP_BLOCK_APP_MASK &&
                   offsetof(struct mana_sleep_block, left_sec) == MANA_SLEEP_BLOCK_LEFT &&
                   offsetof(struct mana_sleep_block, app_view_mask) ==
                       MANA_SLEEP_BLOCK_APP_VIEW_MASK &&
                   sizeof(struct mana_sleep_block) == MANA_SLEEP_BLOCK_SIZE,
               "the sleep trampoline's offsets");

/* Copies the application's timespec without faulting on a bad pointer (process_vm_readv of
 * this process): 0, or -EFAULT as the kernel would have answered. */
static long read_timespec(struct kernel_timespec *dst, uint64_t src)
{
  struct {
    void *base;
    size_t len;
  } local = {dst, sizeof(*dst)}, remote = {(void *)(uintptr_t)src, sizeof(*dst)};
  long pid = raw_syscall2(39 /* getpid */, 0, 0), r;
  register long r10 __asm__("r10") = (long)&remote;
  register long r8 __asm__("r8") = 1;
  register long r9 __asm__("r9") = 0;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "0"(310L /* process_vm_readv */), "D"(pid), "S"(&local), "d"(1L), "r"(r10),
                     "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return r == (long)sizeof(*dst) ? 0 : -14 /* EFAULT */;
}

/* The sleep trampoline's first step: the application's nanosleep(req, rem) or
 * clock_nanosleep(clock, flags, req, rem) as an absolute time on the kernel's clock.  A
 * relative sleep is measured on CLOCK_MONOTONIC (CLOCK_BOOTTIME's counts suspend too), as the
 * kernel measures it.  0, or the -errno the call returns at once. */
long mana_vdso_sleep_prepare(struct mana_sleep_block *k)
{
  long clock = 1 /* CLOCK_MONOTONIC */, flags = 0;
  uint64_t req = (uint64_t)k->rdi, rem = (uint64_t)k->rsi;
  if (k->nr != 35 /* nanosleep */) {
    clock = k->rdi;
    flags = k->rsi;
    req = (uint64_t)k->rdx;
    rem = (uint64_t)k->r10;
  }
  struct kernel_timespec ts;
  if (read_timespec(&ts, req) != 0)
    return -14; /* EFAULT */
  int64_t ns = mana_timespec_ns(ts.tv_sec, ts.tv_nsec);
  if (ns < 0)
    return -22; /* EINVAL */
  if (flags & 1 /* TIMER_ABSTIME */) {
    k->app_deadline_ns = ns;
    k->rem = 0;
  } else {
    if (clock != 7 && clock != 9) /* not CLOCK_BOOTTIME(_ALARM) */
      clock = 1;
    int64_t now = kernel_now(clock) + offset_of(clock);
    k->app_deadline_ns = ns >= MANA_NEVER_NS - now ? MANA_NEVER_NS : now + ns;
    k->rem = (int64_t)rem;
  }
  k->clock = clock;
  int64_t v = mana_kernel_ns(k->app_deadline_ns, offset_of(clock));
  k->deadline_sec = v / MANA_NSEC_PER_SEC;
  k->deadline_nsec = v % MANA_NSEC_PER_SEC;
  return 0;
}

/* Before each round of the rest of a sleep (mana_vdso_sleep_rest): 1 when the application's
 * clock has reached its time, else 0 with the time left in the block.  Read again after every
 * round, since the rest is slept as a relative time on CLOCK_MONOTONIC (ppoll's) and the
 * sleep's clock may be another, and a restart may have moved the clocks in between. */
long mana_vdso_sleep_left(struct mana_sleep_block *k)
{
  long base = k->clock == 8 ? 0 : k->clock == 9 ? 7 : k->clock; /* the _ALARM clocks' */
  int64_t left = k->app_deadline_ns - (kernel_now(base) + offset_of(k->clock));
  if (k->app_deadline_ns >= MANA_NEVER_NS)
    left = MANA_NEVER_NS;
  if (left <= 0)
    return 1;
  k->left_sec = left / MANA_NSEC_PER_SEC;
  k->left_nsec = left % MANA_NSEC_PER_SEC;
  return 0;
}

/* Its last: a relative sleep a signal interrupted says in *rem how long it had left. */
long mana_vdso_sleep_finish(struct mana_sleep_block *k, long ret)
{
  if (ret == -4 /* EINTR */ && k->rem) {
    int64_t left = k->app_deadline_ns - (kernel_now(k->clock) + offset_of(k->clock));
    if (left < 0)
      left = 0;
    struct kernel_timespec *rem = (struct kernel_timespec *)(uintptr_t)k->rem;
    rem->tv_sec = left / MANA_NSEC_PER_SEC;
    rem->tv_nsec = left % MANA_NSEC_PER_SEC;
  }
  return ret;
}

_Static_assert(offsetof(struct mana_timed_block, set) == MANA_TIMED_BLOCK_SET &&
                   offsetof(struct mana_timed_block, left_sec) == MANA_TIMED_BLOCK_LEFT &&
                   sizeof(struct mana_timed_block) == MANA_TIMED_BLOCK_SIZE,
               "the timed-wait trampoline's offsets");

/* The application's CLOCK_MONOTONIC, which the kernel measures these timeouts on. */
static int64_t app_monotonic_now(void)
{
  return kernel_now(1 /* CLOCK_MONOTONIC */) + offset_of(1);
}

/* The timed-wait trampoline's first step: the call's relative timeout (sigtimedwait's third
 * argument, semtimedop's fourth) as a deadline on the application's clock.  0, or the -errno
 * the call returns at once, as the kernel would have. */
long mana_vdso_timed_prepare(struct mana_timed_block *k)
{
  struct kernel_timespec ts;
  if (read_timespec(&ts, (uint64_t)(k->nr == 128 /* rt_sigtimedwait */ ? k->rdx : k->r10)) != 0)
    return -14; /* EFAULT */
  int64_t ns = mana_timespec_ns(ts.tv_sec, ts.tv_nsec);
  if (ns < 0)
    return -22; /* EINVAL */
  int64_t now = app_monotonic_now();
  k->app_deadline_ns = ns >= MANA_NEVER_NS - now ? MANA_NEVER_NS : now + ns;
  return 0;
}

/* Before each round (the first, and each after a park): the time left until the deadline into
 * the block, 0 once it has passed. */
void mana_vdso_timed_left(struct mana_timed_block *k)
{
  int64_t left = k->app_deadline_ns >= MANA_NEVER_NS ? MANA_NEVER_NS
                                                     : k->app_deadline_ns - app_monotonic_now();
  if (left < 0)
    left = 0;
  k->left_sec = left / MANA_NSEC_PER_SEC;
  k->left_nsec = left % MANA_NSEC_PER_SEC;
}

/* The trampolines.  The SIGSYS handler cannot make a call that waits (a thread is not parked
 * inside it), nor write to the stack (its own signal frame lies just below the red zone), so
 * it sends the thread here with
 *   %rax  the system call number,        %r11  (futex) the kernel's deadline in nanoseconds,
 *   %rcx  the address to return to      (both are clobbered by a system call anyway),
 * and every argument register as the application set it.  A trampoline takes a block below
 * the red zone, makes the call with its time there, puts the application's registers back
 * and returns:
 *   mana_vdso_reissue_r10  a futex wait: the deadline as a timespec, pointed at by %r10;
 *   mana_vdso_sleep        nanosleep, clock_nanosleep: a struct mana_sleep_block filled by
 *                          mana_vdso_sleep_prepare; the call is a clock_nanosleep until an
 *                          absolute time.  When mana's own signal interrupted it
 *                          (mana_vdso_sleep_resume), the thread sleeps out the rest in
 *                          mana_vdso_sleep_rest (mana/app_clocks.h says why a ppoll).
 *   mana_vdso_masked_wait  rt_sigsuspend, ppoll, pselect6, epoll_pwait, epoll_pwait2 with a
 *                          signal mask, and rt_sigtimedwait with the set it waits for (less
 *                          mana's signals): %r11 holds the mask the call is made with (the
 *                          application's as mana/signals.h makes it safe: a wait with the
 *                          park signal blocked could not be parked; lower-half/
 *                          masked_waits.c); the argument that points at the mask points at
 *                          the block (for pselect6 at a {mask pointer, 8} pair there) and is
 *                          put back after the call.
 *   mana_vdso_poll_timed   poll with a timeout: %r11 holds its milliseconds; made as a ppoll
 *                          with that time as a timespec in the block, into which the kernel
 *                          writes the time left when a signal interrupts it, so that the call
 *                          made again after a checkpoint waits only for that
 *                          (lower-half/poll_timeout.c).
 *   mana_vdso_epoll_timed  epoll_wait, epoll_pwait and epoll_pwait2 with a timeout: %r11 holds
 *                          the mask the calls are made with (the call's own, or the thread's,
 *                          made safe the same way, as for mana_vdso_masked_wait).
 *                          epoll_pwait without waiting, and while it finds nothing, a ppoll for
 *                          the epoll descriptor's readiness with the time left as a timespec
 *                          in the block (from the milliseconds of epoll_wait and epoll_pwait,
 *                          or a copy of epoll_pwait2's timespec, which the kernel does not
 *                          write back), as above; then epoll_pwait again (another thread may
 *                          have taken the events).
 *   mana_vdso_timed_wait   sigtimedwait with a timeout (%r11 holds its set less mana's signals)
 *                          and semtimedop with one: a struct mana_timed_block at the
 *                          16-aligned %rsp; mana_vdso_timed_prepare turns the timeout into a
 *                          deadline, and each round (mana_vdso_timed_round, where a park sends
 *                          a thread it interrupted in the call: lower-half/timed_waits.c)
 *                          makes the call with the time left (mana/app_clocks.h).
 *   mana_vdso_write_rest   a write, sendto, writev or sendmsg to a blocking pipe or socket
 *                          that a park signal cut short: %rax holds the call's number and %r11
 *                          the bytes it wrote; the rest is written (again after each short
 *                          write) and the call returns them all, or what it wrote before an
 *                          error, as the kernel's call returns what it wrote before one
 *                          (lower-half/interrupted_waits.c).  The rest of a writev goes out
 *                          with write, of a sendmsg with sendto and the call's flags, one
 *                          buffer of its vector after the other (its control data went with
 *                          the first part).  A short write that a signal of the application's
 *                          makes here is written on too, where natively the call would have
 *                          returned it: more bytes, in order, never fewer.
 * The seccomp filter lets calls from between the two mana_vdso_reissue_start/_end labels
 * through untrapped. */
/* A block trampoline's entry and exit: 176 bytes taken below the application's %rsp (the
 * block's first 48 bytes lie below the red zone), the return address kept at 32 in it, and CFI
 * that describes the application's frame as the caller's. */
#define BLOCK_ENTER                \
  "  .cfi_startproc\n"             \
  "  .cfi_def_cfa %rsp, 0\n"       \
  "  .cfi_register %rip, %rcx\n"   \
  "  sub $176, %rsp\n"             \
  "  .cfi_adjust_cfa_offset 176\n" \
  "  mov %rcx, 32(%rsp)\n"         \
  "  .cfi_offset %rip, -144\n"
#define BLOCK_LEAVE                 \
  "  mov 32(%rsp), %rcx\n"          \
  "  .cfi_register %rip, %rcx\n"    \
  "  add $176, %rsp\n"              \
  "  .cfi_adjust_cfa_offset -176\n" \
  "  jmp *%rcx\n"                   \
  "  .cfi_endproc\n"

/* A framed trampoline's entry and exit (mana_vdso_timed_wait, mana_vdso_sleep): past the red
 * zone it pushes the return address and %rbx, which then keeps that place while the block
 * below it is 16-aligned for the C helpers it calls; CFI describes the application's frame as
 * the caller's, through %rbx. */
#define FRAME_ENTER                \
  "  .cfi_startproc\n"             \
  "  .cfi_def_cfa %rsp, 0\n"       \
  "  .cfi_register %rip, %rcx\n"   \
  "  lea -128(%rsp), %rsp\n"       \
  "  .cfi_adjust_cfa_offset 128\n" \
  "  push %rcx\n"                  \
  "  .cfi_adjust_cfa_offset 8\n"   \
  "  .cfi_offset %rip, -136\n"     \
  "  push %rbx\n"                  \
  "  .cfi_adjust_cfa_offset 8\n"   \
  "  .cfi_offset %rbx, -144\n"     \
  "  mov %rsp, %rbx\n"             \
  "  .cfi_def_cfa_register %rbx\n"
#define FRAME_LEAVE                 \
  "  mov %rbx, %rsp\n"              \
  "  .cfi_def_cfa_register %rsp\n"  \
  "  pop %rbx\n"                    \
  "  .cfi_adjust_cfa_offset -8\n"   \
  "  .cfi_restore %rbx\n"           \
  "  pop %rcx\n"                    \
  "  .cfi_adjust_cfa_offset -8\n"   \
  "  .cfi_register %rip, %rcx\n"    \
  "  lea 128(%rsp), %rsp\n"         \
  "  .cfi_adjust_cfa_offset -128\n" \
  "  jmp *%rcx\n"

/* The call's number and argument registers into a framed trampoline's block, and the
 * arguments back: the first seven fields of struct mana_timed_block and mana_sleep_block. */
#define SAVE_CALL          \
  "  mov %rax, 0(%rsp)\n"  \
  "  mov %rdi, 8(%rsp)\n"  \
  "  mov %rsi, 16(%rsp)\n" \
  "  mov %rdx, 24(%rsp)\n" \
  "  mov %r10, 32(%rsp)\n" \
  "  mov %r8, 40(%rsp)\n"  \
  "  mov %r9, 48(%rsp)\n"
#define RESTORE_ARGS       \
  "  mov 8(%rsp), %rdi\n"  \
  "  mov 16(%rsp), %rsi\n" \
  "  mov 24(%rsp), %rdx\n" \
  "  mov 32(%rsp), %r10\n" \
  "  mov 40(%rsp), %r8\n"  \
  "  mov 48(%rsp), %r9\n"
_Static_assert(offsetof(struct mana_timed_block, r9) == 48 &&
                   offsetof(struct mana_sleep_block, r9) == 48,
               "the framed trampolines' saved registers");

/* The milliseconds in %r11 as a timespec at the block's start (clobbers %rax, %rcx, %rdx). */
#define MS_TO_BLOCK_TIMESPEC      \
  "  mov %r11, %rax\n"            \
  "  xor %edx, %edx\n"            \
  "  mov $1000, %ecx\n"           \
  "  div %rcx\n"                  \
  "  mov %rax, 0(%rsp)\n"         \
  "  imul $1000000, %rdx, %rdx\n" \
  "  mov %rdx, 8(%rsp)\n"

/* clang-format off */
__asm__(".text\n"
        ".globl mana_vdso_reissue_start\n"
        ".globl mana_vdso_reissue_end\n"
        ".globl mana_vdso_reissue_r10\n"
        ".globl mana_vdso_masked_wait\n"
        ".globl mana_vdso_poll_timed\n"
        ".globl mana_vdso_epoll_timed\n"
        ".globl mana_vdso_sleep\n"
        ".globl mana_vdso_sleep_resume\n"
        ".globl mana_vdso_sleep_rest\n"
        ".globl mana_vdso_sleep_rest_resume\n"
        ".globl mana_vdso_timed_wait\n"
        ".globl mana_vdso_timed_round\n"
        ".globl mana_vdso_timed_resume\n"
        ".type mana_vdso_timed_wait, @function\n"
        ".type mana_vdso_reissue_r10, @function\n"
        ".type mana_vdso_masked_wait, @function\n"
        ".type mana_vdso_poll_timed, @function\n"
        ".type mana_vdso_epoll_timed, @function\n"
        ".type mana_vdso_sleep, @function\n"
        ".globl mana_vdso_write_rest\n"
        ".type mana_vdso_write_rest, @function\n"
        "mana_vdso_reissue_start:\n"
        /* block: 40 saved rsi (the buffer, vector or message), 48 saved rdx (the length, the
         * vector's count or the flags), 56 bytes written so far, 64 the call's number (the one
         * the rest is written with), 32 return address; for a vector: 72 the vector, 80 its
         * count, 88 saved r8, 96 saved r9, 104 saved r10 */
        "mana_vdso_write_rest:\n"
        BLOCK_ENTER
        "  mov %rsi, 40(%rsp)\n"
        "  mov %rdx, 48(%rsp)\n"
        "  mov %r11, 56(%rsp)\n"
        "  mov %rax, 64(%rsp)\n"
        "  cmp $20, %eax\n" /* writev */
        "  je 5f\n"
        "  cmp $46, %eax\n" /* sendmsg */
        "  je 6f\n"
        "  jmp 1f\n"
        "5:\n"
        "  mov %rsi, 72(%rsp)\n"
        "  mov %rdx, 80(%rsp)\n"
        "  movq $1, 64(%rsp)\n" /* write */
        "  jmp 7f\n"
        "6:\n"
        "  mov 16(%rsi), %rax\n" /* msg_iov */
        "  mov %rax, 72(%rsp)\n"
        "  mov 24(%rsi), %rax\n" /* msg_iovlen */
        "  mov %rax, 80(%rsp)\n"
        "  movq $44, 64(%rsp)\n" /* sendto */
        "7:\n"
        "  mov %r8, 88(%rsp)\n"
        "  mov %r9, 96(%rsp)\n"
        "  mov %r10, 104(%rsp)\n"
        "  mov %rdx, %r10\n" /* sendto's flags: sendmsg's (write reads no fourth argument) */
        "  xor %r8d, %r8d\n"
        "  xor %r9d, %r9d\n"
        "8:\n" /* the first buffer with bytes left, skipping what was written */
        "  mov 56(%rsp), %rcx\n"
        "  mov 72(%rsp), %r11\n"
        "  mov 80(%rsp), %rax\n"
        "9:\n"
        "  test %rax, %rax\n"
        "  jz 11f\n" /* none left: all written */
        "  mov 8(%r11), %rdx\n"
        "  cmp %rdx, %rcx\n"
        "  jb 10f\n"
        "  sub %rdx, %rcx\n"
        "  add $16, %r11\n"
        "  dec %rax\n"
        "  jmp 9b\n"
        "10:\n"
        "  mov (%r11), %rsi\n"
        "  add %rcx, %rsi\n"
        "  sub %rcx, %rdx\n"
        "  mov 64(%rsp), %rax\n"
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jle 11f\n" /* an error or nothing more: what was written is the call's result */
        "  add %rax, 56(%rsp)\n"
        "  jmp 8b\n"
        "11:\n"
        "  mov 88(%rsp), %r8\n"
        "  mov 96(%rsp), %r9\n"
        "  mov 104(%rsp), %r10\n"
        "  jmp 2f\n"
        "1:\n"
        "  mov 40(%rsp), %rsi\n"
        "  add 56(%rsp), %rsi\n"
        "  mov 48(%rsp), %rdx\n"
        "  sub 56(%rsp), %rdx\n"
        "  mov 64(%rsp), %rax\n"
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jle 2f\n" /* an error or nothing more: what was written is the call's result */
        "  add %rax, 56(%rsp)\n"
        "  mov 56(%rsp), %rax\n"
        "  cmp 48(%rsp), %rax\n"
        "  jb 1b\n"
        "2:\n"
        "  mov 56(%rsp), %rax\n"
        "  mov 40(%rsp), %rsi\n"
        "  mov 48(%rsp), %rdx\n"
        BLOCK_LEAVE
        /* block: 0 tv_sec, 8 tv_nsec, 16 saved rdx, 24 saved r10, 32 return address */
        "mana_vdso_poll_timed:\n"
        BLOCK_ENTER
        "  mov %rdx, 16(%rsp)\n"
        "  mov %r10, 24(%rsp)\n"
        MS_TO_BLOCK_TIMESPEC
        "  mov %rsp, %rdx\n"
        "  xor %r10d, %r10d\n" /* no mask: ppoll then reads no size either */
        "  mov $271, %eax\n"
        "  syscall\n"
        "  mov 16(%rsp), %rdx\n"
        "  mov 24(%rsp), %r10\n"
        BLOCK_LEAVE
        /* block: 0 tv_sec, 8 tv_nsec, 16 the pollfd, 24 saved r10, 32 return address, 40 saved
         * rdi, 48 saved rsi, 56 saved rdx, 64 the mask, 72 saved r8, 80 saved r9 */
        "mana_vdso_epoll_timed:\n"
        BLOCK_ENTER
        "  mov %rdi, 40(%rsp)\n"
        "  mov %rsi, 48(%rsp)\n"
        "  mov %rdx, 56(%rsp)\n"
        "  mov %r10, 24(%rsp)\n"
        "  mov %r8, 72(%rsp)\n"
        "  mov %r9, 80(%rsp)\n"
        "  mov %r11, 64(%rsp)\n"
        "  mov %edi, 16(%rsp)\n"
        "  movl $1, 20(%rsp)\n" /* POLLIN, no revents */
        "  cmp $441, %eax\n" /* epoll_pwait2: a copy of its timespec */
        "  jne 3f\n"
        "  mov 0(%r10), %r11\n"
        "  mov %r11, 0(%rsp)\n"
        "  mov 8(%r10), %r11\n"
        "  mov %r11, 8(%rsp)\n"
        "  jmp 1f\n"
        /* epoll_wait, epoll_pwait: milliseconds, an int (the filter or handler saw it positive) */
        "3:\n"
        "  movslq %r10d, %r11\n"
        MS_TO_BLOCK_TIMESPEC
        "1:\n"
        "  mov 40(%rsp), %rdi\n"
        "  mov 48(%rsp), %rsi\n"
        "  mov 56(%rsp), %rdx\n"
        "  xor %r10d, %r10d\n"
        "  lea 64(%rsp), %r8\n"
        "  mov $8, %r9d\n"
        "  mov $281, %eax\n" /* epoll_pwait with the mask, without waiting */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 2f\n"
        "  lea 16(%rsp), %rdi\n"
        "  mov $1, %esi\n"
        "  mov %rsp, %rdx\n"
        "  lea 64(%rsp), %r10\n"
        "  mov $8, %r8d\n"
        "  mov $271, %eax\n" /* ppoll with the mask */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jg 1b\n"
        "2:\n"
        "  mov 40(%rsp), %rdi\n"
        "  mov 48(%rsp), %rsi\n"
        "  mov 56(%rsp), %rdx\n"
        "  mov 24(%rsp), %r10\n"
        "  mov 72(%rsp), %r8\n"
        "  mov 80(%rsp), %r9\n"
        BLOCK_LEAVE
        /* block: 0 the mask, 8 its address and 16 its size (pselect6's pair), 24 the
         * application's argument register, 32 return address, 40 nr */
        "mana_vdso_masked_wait:\n"
        BLOCK_ENTER
        "  mov %rax, 40(%rsp)\n"
        "  mov %r11, 0(%rsp)\n"
        "  mov %rsp, 8(%rsp)\n"
        "  movq $8, 16(%rsp)\n"
        "  cmp $130, %eax\n" /* rt_sigsuspend, rt_sigtimedwait: the first argument */
        "  je 0f\n"
        "  cmp $128, %eax\n"
        "  jne 1f\n"
        "0:\n"
        "  mov %rdi, 24(%rsp)\n"
        "  mov %rsp, %rdi\n"
        "  jmp 5f\n"
        "1:\n"
        "  cmp $271, %eax\n" /* ppoll: the fourth */
        "  jne 2f\n"
        "  mov %r10, 24(%rsp)\n"
        "  mov %rsp, %r10\n"
        "  jmp 5f\n"
        "2:\n"
        "  cmp $270, %eax\n" /* pselect6: the sixth, the pair */
        "  jne 3f\n"
        "  mov %r9, 24(%rsp)\n"
        "  lea 8(%rsp), %r9\n"
        "  jmp 5f\n"
        "3:\n" /* epoll_pwait, epoll_pwait2: the fifth */
        "  mov %r8, 24(%rsp)\n"
        "  mov %rsp, %r8\n"
        "5:\n"
        "  syscall\n"
        "  mov 40(%rsp), %rcx\n"
        "  cmp $130, %ecx\n"
        "  je 0f\n"
        "  cmp $128, %ecx\n"
        "  jne 1f\n"
        "0:\n"
        "  mov 24(%rsp), %rdi\n"
        "  jmp 5f\n"
        "1:\n"
        "  cmp $271, %ecx\n"
        "  jne 2f\n"
        "  mov 24(%rsp), %r10\n"
        "  jmp 5f\n"
        "2:\n"
        "  cmp $270, %ecx\n"
        "  jne 3f\n"
        "  mov 24(%rsp), %r9\n"
        "  jmp 5f\n"
        "3:\n"
        "  mov 24(%rsp), %r8\n"
        "5:\n"
        BLOCK_LEAVE
        /* block: 0 tv_sec, 8 tv_nsec, 16 saved r10, 24 saved rdx, 32 return address, 40 nr.
         * The CFI describes the application's frame as the caller's (at entry its %rsp is the
         * application's, its return address in %rcx), so that debuggers and the unwinder
         * see through a thread waiting here. */
        "mana_vdso_reissue_r10:\n"
        BLOCK_ENTER
        "  mov %rax, 40(%rsp)\n"
        "  mov %r10, 16(%rsp)\n"
        "  mov %rdx, 24(%rsp)\n"
        "  call mana_vdso_split_deadline\n"
        "  mov 24(%rsp), %rdx\n"
        "  mov %rsp, %r10\n"
        "  mov 40(%rsp), %rax\n"
        "  syscall\n"
        "  mov 16(%rsp), %r10\n"
        "  mov 24(%rsp), %rdx\n"
        BLOCK_LEAVE
        /* the timed-wait block at the 16-aligned %rsp */
        "mana_vdso_timed_wait:\n"
        FRAME_ENTER
        "  sub $96, %rsp\n" /* MANA_TIMED_BLOCK_SIZE */
        "  and $-16, %rsp\n"
        SAVE_CALL
        "  mov %r11, 56(%rsp)\n"
        "  mov %rsp, %rdi\n"
        "  call mana_vdso_timed_prepare\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "mana_vdso_timed_round:\n"
        "  mov %rsp, %rdi\n"
        "  call mana_vdso_timed_left\n"
        "  mov 0(%rsp), %rax\n"
        "  mov 16(%rsp), %rsi\n"
        "  cmp $128, %eax\n" /* rt_sigtimedwait: the set and the time left in the block */
        "  jne 2f\n"
        "  lea 56(%rsp), %rdi\n"
        "  lea 72(%rsp), %rdx\n"
        "  mov 32(%rsp), %r10\n"
        "  jmp 3f\n"
        "2:\n" /* semtimedop: the time left in the block */
        "  mov 8(%rsp), %rdi\n"
        "  mov 24(%rsp), %rdx\n"
        "  lea 72(%rsp), %r10\n"
        "3:\n"
        "  syscall\n"
        "mana_vdso_timed_resume:\n"
        "1:\n"
        RESTORE_ARGS
        FRAME_LEAVE
        "  .cfi_endproc\n"
        /* the sleep block at the 16-aligned %rsp; %rbx (saved) keeps where the return
         * address is */
        "mana_vdso_sleep:\n"
        FRAME_ENTER
        "  sub $128, %rsp\n"
        "  and $-16, %rsp\n"
        SAVE_CALL
        "  mov %rsp, %rdi\n"
        "  call mana_vdso_sleep_prepare\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  mov 72(%rsp), %rdi\n"
        "  mov $1, %esi\n"
        "  lea 56(%rsp), %rdx\n"
        "  xor %r10d, %r10d\n"
        "  mov $230, %eax\n"
        "  syscall\n"
        "mana_vdso_sleep_resume:\n"
        "2:\n"
        "  mov %rsp, %rdi\n"
        "  mov %rax, %rsi\n"
        "  call mana_vdso_sleep_finish\n"
        "1:\n"
        RESTORE_ARGS
        "  .cfi_remember_state\n"
        FRAME_LEAVE
        "  .cfi_restore_state\n"
        /* The rest of a sleep mana's handler interrupted (clock_calls.c sends the thread
         * here, %rsp at the block, the application's signals blocked): ppoll with the
         * application's mask until the time is reached or a signal comes, then the mask
         * back and on to the end above. */
        "mana_vdso_sleep_rest:\n"
        "  mov %rsp, %rdi\n"
        "  call mana_vdso_sleep_left\n"
        "  test %rax, %rax\n"
        "  jnz 3f\n"
        "  xor %edi, %edi\n"
        "  xor %esi, %esi\n"
        "  lea 104(%rsp), %rdx\n"
        "  lea 96(%rsp), %r10\n"
        "  mov $8, %r8d\n"
        "  mov $271, %eax\n" /* ppoll */
        "  syscall\n"
        "mana_vdso_sleep_rest_resume:\n"
        "mana_vdso_reissue_end:\n" /* its rt_sigprocmask below is trapped: sigsys.c serves it */
        "  test %rax, %rax\n"
        "  jz mana_vdso_sleep_rest\n" /* ppoll's time ran out: the application's clock? */
        "  jmp 4f\n"
        "3:\n"
        "  xor %eax, %eax\n"
        "4:\n"
        "  mov %rax, 104(%rsp)\n"
        "  mov $2, %edi\n" /* SIG_SETMASK */
        "  lea 120(%rsp), %rsi\n"
        "  xor %edx, %edx\n"
        "  mov $8, %r10d\n"
        "  mov $14, %eax\n" /* rt_sigprocmask */
        "  syscall\n"
        "  mov 104(%rsp), %rax\n"
        "  jmp 2b\n"
        "  .cfi_endproc\n"
        /* %r11 nanoseconds -> 8(%rsp) (the caller's block: 8 above our return address) as a
         * timespec; clobbers %rax, %rdx, %r10 (restored by the caller). */
        "mana_vdso_split_deadline:\n"
        "  .cfi_startproc\n"
        "  mov %r11, %rax\n"
        "  xor %edx, %edx\n"
        "  mov $1000000000, %r10\n"
        "  div %r10\n"
        "  mov %rax, 8(%rsp)\n"
        "  mov %rdx, 16(%rsp)\n"
        "  ret\n"
        "  .cfi_endproc\n");
/* clang-format on */
