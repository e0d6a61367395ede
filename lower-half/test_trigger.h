/* The testing aid MANA_TEST_CHECKPOINT_AT_CALL (see test_trigger.c). */
#ifndef MANA_TEST_TRIGGER_H
#define MANA_TEST_TRIGGER_H
#include <stdint.h>
/* Reads the settings; call once the rank is known. */
void mana_test_trigger_init(uint32_t rank);
/* The service the stub calls at the chosen crossing (lower half's thread pointer). */
void mana_test_checkpoint_now(void);
/* The application's MPI_Init returned: the trigger may fire (MANA_TEST_COUNT_CALLS: writes
 * the count so far). */
void mana_test_trigger_initialized(void);
/* The application is about to finalize MPI: a rank of a test checkpoint waits for it (the
 * rank that asks fires now if its call has not come).  1: park this thread, then call again;
 * 0: go on into MPI_Finalize. */
int mana_test_trigger_finalize_gate(void);
/* MPI_Finalize or MPI_Abort: writes the count (MANA_TEST_COUNT_CALLS), once. */
void mana_test_trigger_finalizing(void);
#endif
