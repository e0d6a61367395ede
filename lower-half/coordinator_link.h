#ifndef MANA_COORDINATOR_LINK_H
#define MANA_COORDINATOR_LINK_H
/* Connects this rank to the job's coordinator (MANA_COORDINATOR) and starts the checkpoint
 * thread; without a coordinator the job simply runs without checkpoints.  Call once MPI is
 * initialized (it needs the rank and size). */
void mana_coordinator_link_start(void);
#endif
