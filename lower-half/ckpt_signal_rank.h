/* The checkpoint signal on a rank (coordinator/ckpt_signal.h): Slurm's warning before the end
 * of an allocation reaches the ranks themselves (srun's tasks, or forwarded by mpiexec). */
#ifndef MANA_CKPT_SIGNAL_RANK_H
#define MANA_CKPT_SIGNAL_RANK_H

#include <stdint.h>

/* When MANA_CKPT_SIGNAL names a signal: installs mana's handler for it and keeps the
 * application's disposition aside (sigsys.c), before the upper half runs, or on a restart
 * after the state restore.  0, or -1 with the reason on stderr. */
int mana_ckpt_signal_install(void);

/* Starts the thread that turns the signal into a request to the coordinator (once the rank
 * has a coordinator link). */
void mana_ckpt_signal_start(uint32_t rank);

#endif
