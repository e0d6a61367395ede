/* A rank asking its job's coordinator for a checkpoint, as mana_status --checkpoint does: on a
 * control connection of its own, so the checkpoint thread's link is never shared. */
#ifndef MANA_CKPT_REQUEST_H
#define MANA_CKPT_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* With kill, the job ends once the checkpoint is committed and every rank exits with
 * exit_status.  With join, a checkpoint already in progress serves the request (every rank
 * that receives the checkpoint signal asks).  0 with the generation, or -1 with the reason (no
 * coordinator, refused). */
int mana_ask_checkpoint(bool kill, unsigned exit_status, bool join, uint64_t *gen, char *err,
                        size_t errlen);

#endif
