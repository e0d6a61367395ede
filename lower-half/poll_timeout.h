/* The application's polls and epoll waits with a timeout (poll_timeout.c). */
#ifndef MANA_POLL_TIMEOUT_H
#define MANA_POLL_TIMEOUT_H

#include <ucontext.h>

/* SIGSYS for a poll, or an epoll_wait or epoll_pwait without a mask, with a positive timeout
 * from upper-half code (call `nr`): sets ctx up to make it in the stand-in's trampoline, where
 * the time left survives a park (the caller leaves %rax alone). */
void mana_poll_timed(ucontext_t *ctx, long nr);

#endif
