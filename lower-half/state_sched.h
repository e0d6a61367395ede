/* CPU affinity and nice value of the application's threads across a restart (state_sched.c). */
#ifndef MANA_LH_STATE_SCHED_H
#define MANA_LH_STATE_SCHED_H

#include <stdint.h>

/* Records the CPUs and nice value the launcher gave this process: call at the start of
 * mana_lh, before any thread is made. */
void mana_sched_note_launch(void);

/* On a resumed thread (state_threads.c; raw system calls only): gives it the affinity and
 * nice value restored for park record `slot`, if it had its own. */
void mana_sched_apply(uint32_t slot);

#endif
