/* Saving and resuming a thread's execution context without libc.
 *
 * Like setjmp/longjmp, but with no pointer mangling (glibc mangles with a guard kept in the
 * thread's TCB, which differs between the halves and across a restart) and no signal mask:
 * a thread is parked inside a signal handler or at a wrapper's park point, and the signal frame
 * or the caller keeps the rest of its state.  The context lives in upper-half memory, so it is
 * part of the checkpoint image; resuming it in a restarted process continues the thread exactly
 * where it parked. */
#ifndef MANA_THREAD_CONTEXT_H
#define MANA_THREAD_CONTEXT_H

#include <stdint.h>

struct mana_context {
  uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
  uint32_t mxcsr;
  uint16_t fpu_cw;
  uint16_t pad;
};

/* Returns 0 after saving; returns 1 when the context is resumed by mana_context_resume. */
int mana_context_save(struct mana_context *ctx) __attribute__((returns_twice));
/* Continues the saved context (its mana_context_save returns 1).  Never returns. */
__attribute__((noreturn)) void mana_context_resume(const struct mana_context *ctx);

#endif
