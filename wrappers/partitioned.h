/* Partitioned point-to-point requests (MPI_Psend_init, MPI_Precv_init) across a checkpoint
 * (partitioned.c; docs/checkpoint-protocol.md, "Partitioned requests"). */
#ifndef MANA_PARTITIONED_H
#define MANA_PARTITIONED_H

#include <stddef.h>
#include <stdint.h>

#include "stub.h"

/* request.c hands these slots over (MANA_SLOT_REQ_PART). */
void mana_part_started(struct mana_slot *s);
void mana_part_release(struct mana_slot *s);
const char *mana_part_refusal(const struct mana_slot *s);
/* Makes every recorded partitioned request again, in the order the application made them,
 * and puts each back in the state the checkpoint found it in.  Application thread. */
int mana_part_rebuild(void);

/* ---- the drain (drain.c), on the checkpoint thread: no malloc, no TLS ---- */

/* A record the drain sends a peer: a request of this rank with that peer, or how many
 * requests of one signature this rank has made with it. */
struct mana_part_wire {
  uint64_t key; /* bit 0: 1 a request, 0 a signature */
  uint64_t value;
};

/* Adds to count[p] the number of this rank's records for world rank p (one pass). */
void mana_part_count(int count[]);
/* Writes each record for world rank p at out[next[p]++]. */
void mana_part_fill(struct mana_part_wire *out, int next[]);
/* With the records every peer sent (from[p], n[p] of them), decides which requests in
 * progress the drain must see complete: those whose data both sides have released. */
void mana_part_plan(struct mana_part_wire *const from[], const size_t n[]);
/* Whether request slot s is one the plan said must complete and has not yet. */
int mana_part_must_complete(const struct mana_slot *s);

#endif
