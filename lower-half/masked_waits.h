/* The application's waits that take a signal mask of their own (masked_waits.c). */
#ifndef MANA_MASKED_WAITS_H
#define MANA_MASKED_WAITS_H

#include <ucontext.h>

/* SIGSYS for rt_sigsuspend, and for ppoll, pselect6, epoll_pwait and epoll_pwait2 with a
 * mask, from upper-half code: sets ctx up to make the call in the stand-in's trampoline with
 * the mask less the signals mana keeps open and returns 1 with *resumed set, or returns the
 * call's error (-EFAULT: the mask cannot be read) for %rax. */
long mana_masked_wait(ucontext_t *ctx, long nr, int *resumed);

#endif
