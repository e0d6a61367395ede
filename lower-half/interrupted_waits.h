/* Waits of the application's (poll, select, epoll_wait, pause, sigsuspend, sigwaitinfo,
 * msgrcv, semop and their variants) that the park signal interrupted: made again once the
 * thread is released (interrupted_waits.c). */
#ifndef MANA_INTERRUPTED_WAITS_H
#define MANA_INTERRUPTED_WAITS_H

#include <sys/types.h>
#include <ucontext.h>

/* The checkpoint thread, at the start of a park: forgets the last park's waits. */
void mana_interrupted_waits_reset(void);

/* The checkpoint thread, just before it signals thread `tid`: notes the wait the thread is
 * in, if it is one of those. */
void mana_interrupted_waits_note(pid_t tid);

/* The park signal's handler, before it parks: the number of the noted call the signal
 * interrupted, or 0. */
long mana_interrupted_wait_of(const ucontext_t *ctx);

/* The same handler once released (after mana_interrupted_call_settle): call `nr` is rewound to
 * be made again, unless a signal of the application's will end it as natively. */
void mana_interrupted_wait_settle(ucontext_t *ctx, long nr);

#endif
