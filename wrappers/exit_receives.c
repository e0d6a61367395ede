/* Receives still posted when a --kill checkpoint ends the job.
 *
 * The job finalizes MPI before it exits (lower-half/coordinator_link.c), so nothing may be left
 * pending.  Cancelling a receive would do, but MPICH 4.0.2 leaks the datatype of a cancelled
 * receive with a non-contiguous datatype and reports it at MPI_Finalize ("yaksa: 1 leaked
 * handle pool objects", reproduced natively), which a native run never prints.  So every
 * rank completes its posted receives instead: each asks the source of each one for an empty
 * message with the receive's communicator and tag, and sends the empty messages it is asked
 * for.  Wildcard sources are served by the rank itself.  What is not completed in time, and
 * receives on intercommunicators, are cancelled as before (drain.c).
 *
 * Runs on the checkpoint thread, on every rank at the same point (collective over the drain's
 * private communicator), with the application parked: no upper-half libc, memory from mmap. */
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"
#include "p2p.h"
#include "records.h"

struct ask {
  uint64_t ggid, index; /* the communicator, as every member names it (mana_comm_members) */
  int32_t tag;          /* the receive's, 0 for MPI_ANY_TAG */
  int32_t world;        /* the rank that asks, in MPI_COMM_WORLD */
};

/* The communicator a member names (ggid, index), its real handle, and the comm rank of world
 * rank `world` in it; -1 if this rank holds no such communicator or `world` is not in it. */
static int find_comm(uint64_t ggid, uint64_t index, int world, MPI_Comm *real, int *rank)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  for (uint32_t i = 0; i <= t->capacity + 1; i++) {
    MPI_Comm v;
    if (i == t->capacity)
      v = MPI_COMM_WORLD;
    else if (i == t->capacity + 1)
      v = MPI_COMM_SELF;
    else if ((mana_slot_at(t, i)->flags & (MANA_SLOT_USED | MANA_SLOT_FREED)) == MANA_SLOT_USED)
      v = (MPI_Comm)mana_handle_make(MANA_KIND_COMM, i); /* a freed one cannot send */
    else
      continue;
    uint64_t g, x;
    int size;
    const int *ranks;
    if (mana_comm_members(v, &g, &x, &size, &ranks) != 0 || g != ggid || x != index)
      continue;
    for (int r = 0; r < size; r++)
      if (ranks[r] == world) {
        *real = v == MPI_COMM_WORLD || v == MPI_COMM_SELF
                    ? v
                    : (MPI_Comm)(uint32_t)mana_slot_at(t, i)->real;
        *rank = r;
        return 0;
      }
    return -1;
  }
  return -1;
}

/* The receives to complete: pending (a persistent one: started), on an intracommunicator with
 * a record. */
static int wanted(const struct mana_slot *s, const struct mana_req_extra *e, struct ask *a,
                  int *source_world)
{
  uint32_t f = s->flags;
  if (!(f & MANA_SLOT_USED) || !(f & MANA_SLOT_REQ_RECV) || (f & MANA_SLOT_REQ_SEND) ||
      (f & MANA_SLOT_REQ_DONE) || ((f & MANA_SLOT_PERSISTENT) && !(f & MANA_SLOT_ACTIVE)) || !e ||
      (MPI_Request)(uint32_t)s->real == MPI_REQUEST_NULL)
    return 0;
  int size;
  const int *ranks;
  if (mana_comm_members(e->comm, &a->ggid, &a->index, &size, &ranks) != 0)
    return 0;
  if (e->peer == MPI_ANY_SOURCE)
    *source_world = mana_p2p_my_world_rank;
  else if (e->peer >= 0 && e->peer < size)
    *source_world = ranks[e->peer];
  else
    return 0; /* MPI_PROC_NULL completes at once; anything else MPI rejected */
  a->tag = e->tag == MPI_ANY_TAG ? 0 : e->tag;
  a->world = mana_p2p_my_world_rank;
  return 1;
}

/* A persistent request stays allocated (inactive) when it completes: done is the flag. */
static int wait_all(MPI_Request *reqs, int n, double deadline)
{
  for (int i = 0; i < n; i++) {
    int flag = 0;
    while (!flag && reqs[i] != MPI_REQUEST_NULL) {
      if (MANA_LH_ANY(MPI_Test, &reqs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        break;
      if (!flag && MANA_LH_ANY(MPI_Wtime) > deadline)
        return -1;
    }
  }
  return 0;
}

void mana_exit_complete_receives(MPI_Comm private_comm)
{
  const int np = mana_p2p_world_size;
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  if (np <= 0 || private_comm == MPI_COMM_NULL)
    return;
  size_t ints = (size_t)np * sizeof(int);
  int *nsend = mana_raw_map(ints), *nrecv = mana_raw_map(ints);
  int *sdispl = mana_raw_map(ints), *rdispl = mana_raw_map(ints);
  struct ask *out = NULL, *in = NULL;
  MPI_Request *reqs = NULL;
  int total_out = 0, total_in = 0;
  if (!nsend || !nrecv || !sdispl || !rdispl)
    goto done;
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct ask a;
    int src;
    if (wanted(mana_slot_at(t, i), mana_req_extra(i), &a, &src))
      nsend[src]++, total_out++;
  }
  out = mana_raw_map((size_t)total_out * sizeof(*out));
  if (!out)
    goto done;
  for (int p = 0, at = 0; p < np; at += nsend[p], p++)
    sdispl[p] = at;
  for (int p = 0; p < np; p++)
    nrecv[p] = 0; /* reused below as a fill cursor per destination, then as the counts */
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct ask a;
    int src;
    if (wanted(mana_slot_at(t, i), mana_req_extra(i), &a, &src))
      out[sdispl[src] + nrecv[src]++] = a;
  }
  double deadline = MANA_LH_ANY(MPI_Wtime) + 10.0;
  MPI_Request req = MPI_REQUEST_NULL;
  if (MANA_LH_ANY(MPI_Ialltoall, nsend, 1, MPI_INT, nrecv, 1, MPI_INT, private_comm, &req) !=
          MPI_SUCCESS ||
      wait_all(&req, 1, deadline) != 0)
    goto done;
  for (int p = 0; p < np; p++) {
    rdispl[p] = total_in * (int)sizeof(struct ask);
    total_in += nrecv[p];
    nsend[p] *= (int)sizeof(struct ask);
    sdispl[p] *= (int)sizeof(struct ask);
    nrecv[p] *= (int)sizeof(struct ask);
  }
  in = mana_raw_map((size_t)total_in * sizeof(*in));
  reqs = mana_raw_map((size_t)total_in * sizeof(*reqs));
  if (!in || !reqs)
    goto done;
  if (MANA_LH_ANY(MPI_Ialltoallv, out, nsend, sdispl, MPI_BYTE, in, nrecv, rdispl, MPI_BYTE,
                  private_comm, &req) != MPI_SUCCESS ||
      wait_all(&req, 1, deadline) != 0)
    goto done;
  /* Every rank reaches this point (the exchange is collective), so each receive it asked for
   * meets its empty message; the application's own messages were all received by the drain. */
  for (int k = 0; k < total_in; k++) {
    MPI_Comm real;
    int dest;
    reqs[k] = MPI_REQUEST_NULL;
    if (find_comm(in[k].ggid, in[k].index, in[k].world, &real, &dest) == 0)
      MANA_LH_ANY(MPI_Isend, NULL, 0, MPI_BYTE, dest, in[k].tag, real, &reqs[k]);
  }
  wait_all(reqs, total_in, deadline);
  /* Each asked-for message is on its way or delivered: a receive that does not complete at
   * once met another receive first (a persistent one takes no part here) and is cancelled. */
  double soon = MANA_LH_ANY(MPI_Wtime) + 1.0;
  deadline = soon < deadline ? soon : deadline;
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct ask a;
    int src;
    if (!wanted(s, mana_req_extra(i), &a, &src))
      continue;
    MPI_Request real = (MPI_Request)(uint32_t)s->real;
    if (wait_all(&real, 1, deadline) != 0)
      continue;
    if (s->flags & MANA_SLOT_PERSISTENT) /* complete: drain.c frees it, cancels nothing */
      s->flags &= ~MANA_SLOT_ACTIVE;
    else
      s->real = (uint32_t)MPI_REQUEST_NULL;
  }
done:
  mana_raw_unmap(nsend, ints);
  mana_raw_unmap(nrecv, ints);
  mana_raw_unmap(sdispl, ints);
  mana_raw_unmap(rdispl, ints);
  mana_raw_unmap(out, (size_t)total_out * sizeof(*out));
  mana_raw_unmap(in, (size_t)total_in * sizeof(*in));
  mana_raw_unmap(reqs, (size_t)total_in * sizeof(*reqs));
}
