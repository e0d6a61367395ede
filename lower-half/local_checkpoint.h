#ifndef MANA_LOCAL_CHECKPOINT_H
#define MANA_LOCAL_CHECKPOINT_H
/* Starts the coordinator-less test checkpoint if MANA_TEST_CHECKPOINT_* is set. */
void mana_local_checkpoint_start(void);
#endif
