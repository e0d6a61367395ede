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

#endif
