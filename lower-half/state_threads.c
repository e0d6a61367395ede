/* The application's threads at restart: their records (thread pointer, saved context, where
 * glibc keeps the kernel thread id) are part of the memory image (park.c wrote them); what is
 * left is to make each one a thread of this process again, on its own thread pointer and
 * context, and to hold them until the main thread has run the stub's restart hook. */
#define _GNU_SOURCE
#include "state_threads.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/park.h"
#include "mana/raw_syscall.h"
#include "mana/signals.h"
#include "mana/thread_context.h"
#include "mana/fail.h"
#include "park.h"
#include "state.h"
#include "state_sched.h"
#include "state_thread_names.h"

/* Released once the main thread has run the stub's restart hook.  restarting: this process
 * is a restart, and restart_done tells whether its threads run the application again. */
static volatile uint32_t restart_done;
static volatile uint32_t restarting;
/* MANA_TEST_RESTART_DELAY_MS: the main thread waits this long before the stub's restart hook,
 * so that tests can ask for a checkpoint while the threads are still resuming. */
static uint32_t resume_delay_ms;

int mana_restart_wait_resumed(int timeout_ms)
{
  if (!__atomic_load_n(&restarting, __ATOMIC_ACQUIRE))
    return 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!__atomic_load_n(&restart_done, __ATOMIC_ACQUIRE)) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left = timeout_ms -
                ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L);
    if (left <= 0)
      return -1;
    struct timespec ts = {left / 1000, (left % 1000) * 1000000L};
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAIT, 0, (long)&ts);
  }
  return 0;
}

/* Runs on each resumed thread, inside mana_park_self, on the upper half's thread pointer: no
 * TLS, raw system calls only. */
static void resume_thread(void *record)
{
  struct mana_thread_record *r = record;
  struct mana_park_area *area = MANA_PARK;
  mana_sched_apply((uint32_t)(r - area->threads));
  mana_thread_name_apply((uint32_t)(r - area->threads));
  if (r->is_main) {
    if (resume_delay_ms) { /* testing aid: widen the window before the threads run again */
      struct timespec ts = {resume_delay_ms / 1000, (long)(resume_delay_ms % 1000) * 1000000L};
      mana_raw_syscall4(SYS_nanosleep, (long)&ts, 0, 0, 0);
    }
    /* glibc keeps the kernel thread id in its struct pthread; a new process has a new one. */
    *(uint32_t *)(uintptr_t)(r->upper_fs + area->tid_offset) = r->tid;
    area->main_tid_at_start = r->tid;
    if (MANA_BOUNDARY->stub_restart_hook)
      MANA_BOUNDARY->stub_restart_hook();
    __atomic_store_n(&restart_done, 1, __ATOMIC_RELEASE);
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAKE, 0x7fffffff, 0);
    return;
  }
  while (!__atomic_load_n(&restart_done, __ATOMIC_ACQUIRE))
    mana_raw_syscall4(SYS_futex, (long)&restart_done, FUTEX_WAIT, 0, 0);
}

/* clone() straight into a saved context: the child starts on `stack` and resumes `ctx`. */
long mana_clone_resume(unsigned long flags, void *stack, uint32_t *ptid, uint32_t *ctid,
                       uint64_t tls, const struct mana_context *ctx);
__asm__(".text\n"
        ".globl mana_clone_resume\n"
        ".type mana_clone_resume, @function\n"
        "mana_clone_resume:\n"
        "  push %r12\n"
        "  mov %r9, %r12\n"  /* ctx survives the syscall in a callee-saved register */
        "  mov %rcx, %r10\n" /* child_tid: fourth system call argument */
        "  mov $56, %eax\n"  /* SYS_clone(flags, stack, parent_tid, child_tid, tls) */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  mov %r12, %rdi\n"
        "  call mana_context_resume\n"
        "1:\n"
        "  pop %r12\n"
        "  ret\n"
        ".size mana_clone_resume, .-mana_clone_resume\n");

static int recreate_threads(char *err, size_t errlen)
{
  struct mana_park_area *area = MANA_PARK;
  const unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                              CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                              CLONE_CHILD_CLEARTID;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    struct mana_thread_record *r = &area->threads[i];
    if (r->state != MANA_THREAD_PARKED || r->is_main)
      continue;
    /* A small stack for the instant before the thread switches to its own. */
    size_t size = 64 * 1024;
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) {
      return mana_fail(err, errlen, errno, "cannot allocate a start-up stack for thread %u",
                       r->tid);
    }
    /* pthread_join waits on the tid field in glibc's struct pthread: the kernel keeps it. */
    uint32_t *tid_field = (uint32_t *)(uintptr_t)(r->upper_fs + area->tid_offset);
    long tid =
        mana_clone_resume(flags, stack + size - 64, tid_field, tid_field, r->upper_fs, &r->ctx);
    if (tid < 0) {
      return mana_fail(err, errlen, (int)-tid, "cannot recreate thread %u", r->tid);
    }
  }
  return 0;
}

void mana_threads_prepare_resume(void)
{
  const char *delay = getenv("MANA_TEST_RESTART_DELAY_MS");
  resume_delay_ms = delay ? (uint32_t)strtoul(delay, NULL, 10) : 0;
  MANA_BOUNDARY->restart_resume = resume_thread;
  __atomic_store_n(&restarting, 1, __ATOMIC_RELEASE);
}

int mana_threads_resume(char *err, size_t errlen)
{
  /* From here the threads run again: nothing may interrupt them before their own masks are
   * back (a signal frame or the record restores each thread's mask). */
  sigset_t all;
  mana_sigset_block_all(&all); /* the restart hook allocates: SIGSYS must stay open */
  sigprocmask(SIG_BLOCK, &all, NULL);
  if (recreate_threads(err, errlen) != 0)
    return -1;
  mana_state_timers_arm();
  mana_state_posix_timers_arm();
  mana_state_timerfds_arm();
  struct mana_park_area *area = MANA_PARK;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    struct mana_thread_record *t = &area->threads[i];
    if (t->state == MANA_THREAD_PARKED && t->is_main) {
      t->tid = (uint32_t)gettid();
      fflush(NULL);
      mana_set_fs((int)MANA_BOUNDARY->have_fsgsbase, t->upper_fs);
      mana_context_resume(&t->ctx);
    }
  }
  return mana_fail(err, errlen, 0, "the image has no parked main thread");
}
