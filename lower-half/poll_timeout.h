/* The application's polls with a timeout (poll_timeout.c). */
#ifndef MANA_POLL_TIMEOUT_H
#define MANA_POLL_TIMEOUT_H

#include <ucontext.h>

/* SIGSYS for a poll with a positive timeout from upper-half code: sets ctx up to make it in
 * the stand-in's trampoline as a ppoll with that timeout (the caller leaves %rax alone). */
void mana_poll_timed(ucontext_t *ctx);

#endif
