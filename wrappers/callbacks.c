/* Thread-pointer switching for callbacks from the real MPI into application code.  MPICH calls
 * them with the lower half's FS; the application's code needs its own libc's TLS. */
#include "stub.h"

uint64_t mana_callback_enter(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t lower = mana_get_fs(b->have_fsgsbase);
  mana_set_fs(b->have_fsgsbase, b->caller_upper_fs);
  if (mana_callback_depth(1) == 1)
    b->callback_fs = b->caller_upper_fs;
  return lower;
}

void mana_callback_leave(uint64_t saved_fs)
{
  if (mana_callback_depth(-1) == 0)
    MANA_BOUNDARY->callback_fs = 0;
  mana_set_fs(MANA_BOUNDARY->have_fsgsbase, saved_fs);
}
