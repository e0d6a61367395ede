/* The application's threads at restart (state_threads.c). */
#ifndef MANA_STATE_THREADS_H
#define MANA_STATE_THREADS_H

#include <stddef.h>

/* Arms the resumption: the boundary's restart_resume hook, and from now on
 * mana_restart_wait_resumed waits for the threads. */
void mana_threads_prepare_resume(void);

/* The restart's last step: recreates every parked thread and continues the main thread,
 * which runs the stub's restart hook before the others go on.  Returns only on failure. */
int mana_threads_resume(char *err, size_t errlen);

/* In a restarted process, waits until the application's threads run again (the stub's restart
 * hook has rebuilt the MPI objects): a checkpoint must not begin before, since resuming
 * threads block every signal and cannot park.  0 at once in a launched process; -1 if the
 * threads do not run again within timeout_ms. */
int mana_restart_wait_resumed(int timeout_ms);

#endif
