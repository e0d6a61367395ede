/* Communicators the application freed while receives or persistent requests still name them.
 *
 * MPI_Comm_free only marks a communicator for deallocation: pending operations on it go on
 * (MPI 4.0, 7.4.3), so a receive posted before the free still completes afterwards.  The stub
 * needs the communicator's record for as long as such a request lives: a receive is counted
 * by its source's world rank when it completes (the drain compares those counts), and a
 * restart posts it again on a rebuilt communicator.  So the slot of a freed communicator that
 * requests pin stays, marked MANA_SLOT_FREED, and is retired when the last pinning request
 * is.  The application's free went to MPI at once (its attribute callbacks ran then); MPI
 * keeps the communicator while its own requests hold it, and the drain probes it for the
 * messages a persistent receive not yet started again will take (mana_comm_freed_alive).
 *
 * At restart such a communicator must be rebuilt if a receive on it is posted again, and can
 * only be rebuilt if all its members take part, while a member that freed it with nothing
 * pending holds no record at all.  The ranks therefore first agree which of the freed
 * communicators every member still holds (live or freed); only those are rebuilt, and their
 * real handles are freed again once the requests on them are posted (finish).  The requests
 * of the others are made on a communicator nothing is sent on. */
#include <stdlib.h>

#include "comm_order.h"
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

/* MPI keeps a freed communicator while a request holds it: a persistent request, or one MPI
 * has not completed (the drain's stand-ins for completed ones hold nothing). */
int mana_comm_freed_alive(MPI_Comm v)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0, seen = 0; i < t->capacity && seen < t->in_use; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    seen++;
    if (mana_req_pinned_comm(s, i) == v &&
        ((s->flags & MANA_SLOT_PERSISTENT) || !(s->flags & MANA_SLOT_REQ_DONE)))
      return 1;
  }
  return 0;
}

static int holds(const struct mana_comm_key *keys, size_t n, uint64_t ggid, uint64_t index)
{
  for (size_t k = 0; k < n; k++)
    if (keys[k].ggid == ggid && keys[k].index == index)
      return 1;
  return 0;
}

static int members_of(uint32_t slot)
{
  int nlocal = 0, nremote = 0;
  const int *local, *remote;
  MPI_Comm v = (MPI_Comm)mana_handle_make(MANA_KIND_COMM, slot);
  return mana_comm_world_members(v, &nlocal, &local, &nremote, &remote) == 0 ? nlocal + nremote
                                                                              : -1;
}

static int error(const char *call, int rc)
{
  return mana_rebuild_error("freed communicators", 0, call, rc);
}

int mana_comm_freed_agree(struct mana_comm_key *keys, size_t *n)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  int nfreed = 0, total = 0, nranks = 0, rc;
  for (size_t k = 0; k < *n; k++)
    nfreed += (mana_slot_at(t, keys[k].slot)->flags & MANA_SLOT_FREED) != 0;
  rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, &nfreed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    return error("MPI_Allreduce", rc);
  if (total == 0)
    return MPI_SUCCESS; /* the common case: one reduction */
  MANA_LH_CALL_NOPARK(MPI_Comm_size, MPI_COMM_WORLD, &nranks);
  int *counts = calloc((size_t)nranks, sizeof(int)), *displs = calloc((size_t)nranks, sizeof(int));
  uint64_t *mine = calloc((size_t)nfreed * 2 + 1, sizeof(uint64_t));
  uint64_t *all = calloc((size_t)total * 2, sizeof(uint64_t));
  int *held = calloc((size_t)total, sizeof(int));
  if (!counts || !displs || !mine || !all || !held) {
    rc = error("allocating the agreement", MPI_ERR_NO_MEM);
    goto out;
  }
  int m = 0;
  for (size_t k = 0; k < *n; k++)
    if (mana_slot_at(t, keys[k].slot)->flags & MANA_SLOT_FREED) {
      mine[m++] = keys[k].ggid;
      mine[m++] = keys[k].index;
    }
  rc = MANA_LH_CALL_NOPARK(MPI_Allgather, &m, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    rc = error("MPI_Allgather", rc);
    goto out;
  }
  for (int r = 1; r < nranks; r++)
    displs[r] = displs[r - 1] + counts[r - 1];
  rc = MANA_LH_CALL_NOPARK(MPI_Allgatherv, mine, m, MPI_UINT64_T, all, counts, displs,
                           MPI_UINT64_T, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    rc = error("MPI_Allgatherv", rc);
    goto out;
  }
  /* How many ranks hold each freed communicator, live or freed themselves. */
  for (int f = 0; f < total; f++)
    held[f] = holds(keys, *n, all[2 * f], all[2 * f + 1]);
  rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, held, total, MPI_INT, MPI_SUM,
                           MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    rc = error("MPI_Allreduce", rc);
    goto out;
  }
  /* A freed communicator that some member no longer holds is left out: nothing can reach the
   * receives on it any more (what the member that let it go had sent, the drain received),
   * so they are posted again where nothing is sent (mana_comm_real_for_request). */
  size_t kept = 0;
  for (size_t k = 0; k < *n; k++) {
    struct mana_slot *s = mana_slot_at(t, keys[k].slot);
    int everyone = 1;
    if (s->flags & MANA_SLOT_FREED)
      for (int f = 0; f < total; f++)
        if (all[2 * f] == keys[k].ggid && all[2 * f + 1] == keys[k].index)
          everyone = held[f] == members_of(keys[k].slot);
    if (everyone)
      keys[kept++] = keys[k];
    else
      s->real = (uint32_t)MPI_COMM_NULL;
  }
  *n = kept;
out:
  free(counts);
  free(displs);
  free(mine);
  free(all);
  free(held);
  return rc;
}

/* Nothing is ever sent on it: the receives and persistent requests of a freed communicator
 * that was not rebuilt are made on it, so that they never match, as they could not before
 * (cancelling one still works).  Made once per MPI, by the rebuild. */
static MPI_Comm dead = MPI_COMM_NULL;
static uint32_t dead_epoch;

MPI_Comm mana_comm_real_for_request(MPI_Comm v, int *peer)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  if (!s || !(s->flags & MANA_SLOT_FREED) || (MPI_Comm)(uint32_t)s->real != MPI_COMM_NULL)
    return MANA_REAL(COMM, MPI_Comm, v);
  if (dead == MPI_COMM_NULL || dead_epoch != mana_rebuild_epoch) {
    dead = MPI_COMM_NULL;
    if (MANA_LH_CALL_NOPARK(MPI_Comm_dup, MPI_COMM_SELF, &dead) != MPI_SUCCESS)
      return MPI_COMM_NULL;
    dead_epoch = mana_rebuild_epoch;
  }
  if (*peer >= 0)
    *peer = 0;
  return dead;
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
