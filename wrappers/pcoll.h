/* Persistent collective requests (MPI_Allreduce_init, ...): what the generated wrappers record
 * of the initialization's arguments, and what the request kind needs of them (pcoll.c).
 *
 * The generator (mpi_api.txt: pcoll) describes each argument as one mana_pcoll_arg in
 * parameter order, the request excluded, and gives a replay function that calls the same
 * initialization with the `real` values pcoll.c prepares at restart: the application's
 * scalars and buffers as they were, rebuilt handles, kept copies of the count and
 * displacement arrays. */
#ifndef MANA_PCOLL_H
#define MANA_PCOLL_H

#include "records.h"

enum mana_pcoll_kind {
  MANA_PA_VALUE,     /* a scalar or a buffer address, passed again as it was */
  MANA_PA_DATATYPE,  /* value: the application's handle */
  MANA_PA_DATATYPES, /* value: the application's array of n handles (alltoallw) */
  MANA_PA_OP,
  MANA_PA_COMM,
  MANA_PA_INFO,
  MANA_PA_ARRAY, /* value: the application's array of n elements of elem bytes */
};

struct mana_pcoll_arg {
  int kind;
  uint64_t value;
  size_t n, elem;
  /* Kept by mana_pcoll_made: the array's copy, the datatypes' references (struct
   * mana_dt_arg[n]) or the hints (struct mana_kvlist). */
  void *kept;
  struct mana_dt_arg type;
  uint64_t real; /* during a replay: what the argument is in the new MPI */
};

typedef int mana_pcoll_replay_fn(const struct mana_pcoll_arg *args, MPI_Request *out);

/* After a successful initialization: records request v (already virtual). */
void mana_pcoll_made(MPI_Request v, mana_pcoll_replay_fn *replay, const struct mana_pcoll_arg *args,
                     int nargs);

/* The initialization returned (request: the new one, or MPI_REQUEST_NULL): registers the
 * request's own clock group, which its MPI_Start calls count on (pcoll.c). */
void mana_pcoll_init_leave(MPI_Request request);

/* Whether this process is the root of a rooted collective on comm (MPI_ROOT on an
 * intercommunicator): where MPI reads the root's arrays. */
int mana_comm_is_root(MPI_Comm comm, int root);

/* request.c: MPI_Start of a persistent collective request is the collective's start, counted
 * on the request's own clock group; freeing one is counted on its communicator's (docs,
 * section on persistent collectives). */
int mana_pcoll_start(MPI_Request *request);
int mana_pcoll_free(MPI_Request *request, int (*free_fn)(MPI_Request *));
/* The request kind's hooks for slots marked MANA_SLOT_REQ_PCOLL. */
void mana_pcoll_release(struct mana_slot *s);
const char *mana_pcoll_refusal(const struct mana_slot *s);
/* At a rebuild: every live request made again, inactive, in the order they were made. */
int mana_pcoll_rebuild(void);
/* The members' agreement on which requests exist (a hash sum they must agree on, as for
 * communicators): sums[0] this process's share, sums[1] what it expects for the
 * communicators it leads.  No MPI, no malloc: the drain calls it on its own thread. */
void mana_pcoll_agreement(uint64_t sums[2]);

#endif
