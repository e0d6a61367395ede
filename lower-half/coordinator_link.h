#ifndef MANA_COORDINATOR_LINK_H
#define MANA_COORDINATOR_LINK_H
#include <stdint.h>
/* Connects this rank to the job's coordinator (MANA_COORDINATOR) and starts the checkpoint
 * thread; without a coordinator the job simply runs without checkpoints.  Call once MPI is
 * initialized (it needs the rank and size). */
void mana_coordinator_link_start(void);
/* 1 once this rank is connected to a coordinator. */
int mana_coordinator_link_up(void);
/* 1 on the checkpoint thread itself. */
int mana_coordinator_link_is_self(void);
/* Waits until this rank has begun generation `gen` (or a later one), or it was refused or
 * ended before; 0, or -1 after timeout_ms. */
int mana_coordinator_link_wait_begun(uint64_t gen, int timeout_ms);
/* 1 while generation `gen` is in progress on this rank and this rank has not been told a
 * target it must still reach (holding the application's thread cannot keep the ranks from
 * converging, unless a peer waits for a message it is about to send). */
int mana_coordinator_link_may_hold(uint64_t gen);
/* 1 from a generation's CKPT until this rank's application threads run again (released after
 * the verdict, or once a forked writer exists). */
int mana_coordinator_link_in_checkpoint(void);

/* Returns once no image of this rank is being written in the background by a forked writer
 * whose generation has no verdict yet: a rank about to finalize MPI (and exit) waits here, or
 * its disconnection would abort a generation its writer completes. */
void mana_coordinator_link_wait_verdict(void);
#endif
