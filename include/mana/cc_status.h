/* What a rank's stub tells its checkpoint thread, and the thread the coordinator, about where
 * the rank stands in the collective clock (docs/checkpoint-protocol.md section 1): the value
 * of mana_stub_cc.status (boundary.h), shared by the stub, which computes it, and the lower
 * half, which turns it into RUNNING or PARKED. */
#ifndef MANA_CC_STATUS_H
#define MANA_CC_STATUS_H

enum cc_status {
  CC_ST_NONE,    /* nothing heard at this epoch (coordinator side only) */
  CC_ST_RUNNING, /* a target unmet, making progress */
  CC_ST_BLOCKED, /* a target unmet, waiting inside MPI (a p2p wait or a collective) */
  CC_ST_PARKED,  /* all targets met, at a collective entry, not entered */
  CC_ST_DONE     /* all targets met, somewhere else (computing, p2p, finished) */
};

#endif
