/* The job's own environment back in the upper half (job_env.c). */
#ifndef MANA_JOB_ENV_H
#define MANA_JOB_ENV_H

/* Takes out what the lower half added to the upper half's environment (mana/upper_env.h).
 * Call once, from the stub's constructor: single-threaded, before the application runs. */
void mana_job_env_restore(void);

#endif
