/* The application's waits with a relative timeout the kernel does not write back:
 * sigtimedwait and semtimedop (timed_waits.c, mana/app_clocks.h). */
#ifndef MANA_TIMED_WAITS_H
#define MANA_TIMED_WAITS_H

#include <stdint.h>
#include <ucontext.h>

/* SIGSYS for call `nr` with a timeout from upper-half code: sets ctx up to make it in the
 * stand-in's timed-wait trampoline with `set` (sigtimedwait's, less mana's signals) in %r11
 * (the caller leaves %rax alone). */
void mana_timed_wait_enter(ucontext_t *ctx, long nr, uint64_t set);

/* At the end of a handler of mana's own signals, after mana_clock_sleep_rewind: a thread the
 * handler interrupted in the trampoline's call goes back to its round, which makes the call
 * again for the time left, unless a signal of the application's waits that natively would
 * have interrupted it (it then returns EINTR, as natively). */
void mana_timed_wait_rewind(ucontext_t *ctx);

#endif
