/* System calls of the application that mana's own signals interrupted while a signal of the
 * application's waits to be taken (interrupted_calls.c). */
#ifndef MANA_INTERRUPTED_CALLS_H
#define MANA_INTERRUPTED_CALLS_H

#include <ucontext.h>

/* At the end of a handler of mana's own signals (parking, the checkpoint signal), after
 * mana_clock_sleep_rewind: a call the kernel rewound to be made again returns EINTR instead
 * when a signal of the application's, whose handler lacks SA_RESTART, will be taken on the
 * handler's return, as it would have ended the call natively. */
void mana_interrupted_call_settle(ucontext_t *ctx);

/* 1 when a signal of the application's that a handler of its own takes (one without
 * SA_RESTART, with `only_without_restart`) waits, and the mask the handler's return puts back
 * lets it through: natively it would have interrupted the call. */
int mana_app_signal_waits(const ucontext_t *ctx, int only_without_restart);

#endif
