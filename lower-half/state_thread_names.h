/* The names of the application's threads across a restart (state_thread_names.c). */
#ifndef MANA_LH_STATE_THREAD_NAMES_H
#define MANA_LH_STATE_THREAD_NAMES_H

#include <stdint.h>

/* On a resumed thread (state_threads.c; raw system calls only): gives it the name restored
 * for park record `slot`, if any. */
void mana_thread_name_apply(uint32_t slot);

/* At launch, on the main thread: names it after the application's file, as exec would. */
void mana_thread_name_launch(const char *app);

#endif
