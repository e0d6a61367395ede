/* The checkpoint signal: a signal that asks the job for a checkpoint, as Slurm sends one
 * before the end of an allocation (sbatch --signal).  mana_launch and mana_restart take it
 * (--ckpt-signal, --ckpt-signal-action) and hand it to the coordinator they start and, through
 * MANA_CKPT_SIGNAL and MANA_CKPT_SIGNAL_ACTION, to every rank: whichever of them receives it
 * asks the coordinator, which starts one checkpoint however many ask. */
#ifndef MANA_CKPT_SIGNAL_H
#define MANA_CKPT_SIGNAL_H

#include <stdbool.h>

#define CKPT_SIGNAL_ENV "MANA_CKPT_SIGNAL"
#define CKPT_SIGNAL_ACTION_ENV "MANA_CKPT_SIGNAL_ACTION"

/* The exit status of every rank, and so of the launcher, when a checkpoint the checkpoint
 * signal asked for has ended the job: "checkpointed, continue me" (a chaining batch script
 * requeues the job on it).  A job ended by mana_status --kill exits 0 unless told otherwise. */
#define MANA_EXIT_CHECKPOINTED 85

enum ckpt_signal_action {
  CKPT_SIGNAL_KILL,      /* checkpoint, then end the job with MANA_EXIT_CHECKPOINTED */
  CKPT_SIGNAL_CHECKPOINT /* checkpoint and go on */
};

/* "USR1", "SIGUSR1", "RTMIN+2" or a number.  Refuses the signals that cannot be caught and
 * those mana's own mechanisms own (SIGSYS, the park signal, the fault signals, SIGCHLD).
 * 0, or -1 with *why saying what is accepted. */
int ckpt_signal_parse(const char *text, int *signo, const char **why);

/* "kill" or "checkpoint". */
int ckpt_signal_action_parse(const char *text, enum ckpt_signal_action *action);

/* "USR1", "RTMIN+2", for logs and for the ranks' environment. */
const char *ckpt_signal_name(int signo, char *buf, unsigned len);

#endif
