/* Communicators the application freed while receives or persistent requests still name them.
 *
 * MPI_Comm_free only marks a communicator for deallocation: pending operations on it go on
 * (MPI 4.0, 7.4.3), so a receive posted before the free still completes afterwards.  The stub
 * needs the communicator's record for as long as such a request lives: a receive is counted
 * by its source's world rank when it completes (the drain compares those counts), and a
 * restart posts it again on a rebuilt communicator.  So the slot of a freed communicator that
 * requests pin stays, marked MANA_SLOT_FREED, and is retired when the last pinning request
 * is.  The application's free went to MPI at once (its attribute callbacks ran then); MPI
 * keeps the communicator while persistent requests hold it, and the drain probes it for the
 * messages a persistent receive not yet started again will take (mana_comm_freed_alive).
 *
 * At restart such a communicator is rebuilt like a live one, with every member taking part
 * (one that freed it with nothing pending as a ghost, comm_orphans.c), and its real handle is
 * freed again once the requests on it are posted (finish). */
#include <stdlib.h>

#include "p2p.h"
#include "records.h"
#include "u64map.h"

/* Virtual handle -> requests still pinning it, for every freed communicator kept. */
static struct mana_u64map pins;

static void unpin(struct mana_slot *request, uint32_t index)
{
  MPI_Comm v = mana_req_pinned_comm(request, index);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  uint64_t n = 0;
  if (!s || !(s->flags & MANA_SLOT_FREED) || !mana_u64map_get(&pins, (uint32_t)v, &n))
    return;
  if (n > 1) {
    mana_u64map_put(&pins, (uint32_t)v, n - 1, NULL);
    return;
  }
  mana_u64map_remove(&pins, (uint32_t)v, NULL);
  if (pins.count == 0)
    mana_request_retiring = NULL;
  /* The record is freed with upper-half libc, which the checkpoint thread must not call (it
   * retires requests only as the job ends): there the slot stays until exit. */
  if (mana_on_upper_fs())
    mana_handle_retire(MANA_KIND_COMM, (uint32_t)v);
}

int mana_comm_retain(struct mana_slot *s, uint32_t virt)
{
  if (s->flags & MANA_SLOT_FREED)
    return 0; /* its last request is going */
  uint32_t n = mana_requests_pinning((MPI_Comm)virt);
  if (n == 0 || mana_u64map_put(&pins, virt, n, NULL) < 0)
    return 0; /* out of memory: as before, the count of its receives is lost */
  s->flags |= MANA_SLOT_FREED;
  mana_request_retiring = unpin;
  return 1;
}

/* Whether MPI still holds a freed communicator, so that its real handle may be used: MPICH
 * 4.0.2 keeps it only for persistent requests (started or not); a pending MPI_Irecv still
 * completes, but the handle is invalid from the free on (MPI_Improbe on it fails with "Invalid
 * communicator"). */
int mana_comm_freed_alive(MPI_Comm v)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0, seen = 0; i < t->capacity && seen < t->in_use; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    seen++;
    if ((s->flags & MANA_SLOT_PERSISTENT) && mana_req_pinned_comm(s, i) == v)
      return 1;
  }
  return 0;
}

void mana_comm_freed_finish(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Comm real = (MPI_Comm)(uint32_t)s->real;
    /* The handle stays: MPI keeps the communicator for the requests posted on it again. */
    if ((s->flags & MANA_SLOT_USED) && (s->flags & MANA_SLOT_FREED) && real != MPI_COMM_NULL)
      MANA_LH_CALL_NOPARK(MPI_Comm_free, &real);
  }
}
