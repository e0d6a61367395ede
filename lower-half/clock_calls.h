/* The application's clocks on the lower half's side (mana/app_clocks.h): the boundary's clock
 * fields filled; the application's sleeps, made where a checkpoint does not cut them short;
 * and the calls that take an absolute time on an offset clock, trapped by the seccomp filter
 * while an offset is set, given the kernel's time. */
#ifndef MANA_CLOCK_CALLS_H
#define MANA_CLOCK_CALLS_H

#include <stdint.h>
#include <ucontext.h>

/* The kernel's vDSO entry points into the boundary page (at launch and at every restart), and
 * at launch the stand-in's trampolines, found in the stand-in loaded at `app_vdso` (0: keep
 * the ones the restored page has).  0, or -1 when the stand-in lacks them. */
int mana_clock_fill_boundary(uint64_t app_vdso);

/* 1 when the application's clocks are offset (a restart on another boot): the seccomp filter
 * then traps the calls below. */
int mana_clock_calls_trapped(void);

/* For the filter: the range of the stand-in's re-issue trampolines' system calls. */
void mana_clock_reissue_range(uint64_t *start, uint64_t *end);

/* SIGSYS for clock_gettime, clock_nanosleep, futex, timer_settime and timerfd_settime from
 * upper-half code: returns the
 * result for %rax, or, for a call that must wait, sets ctx up to go on in a trampoline and
 * returns 1 with *resumed set (the caller leaves %rax alone). */
long mana_clock_call(ucontext_t *ctx, long nr, int *resumed);

/* At the end of a handler of mana's own signals (parking, the checkpoint signal): a sleep of
 * the application the signal interrupted goes on instead of ending with EINTR, until the time
 * it was for as the application's clock shows it (after a restart too), or until a signal of
 * the application's comes (also one that came while the handler ran). */
void mana_clock_sleep_rewind(ucontext_t *ctx);

#endif
