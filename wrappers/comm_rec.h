/* A communicator's record, private to the files that make and rebuild communicators
 * (comm.c records and rebuilds them; comm_orphans.c describes them to members that no longer
 * hold them). */
#ifndef MANA_COMM_REC_H
#define MANA_COMM_REC_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

struct comm_topo {
  int kind; /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH or MPI_UNDEFINED */
  int ndims;
  int *dims, *periods;
  int nnodes, nedges;
  int *index, *edges;
  int indegree, outdegree, weighted;
  int *sources, *sourceweights, *destinations, *destweights;
};

struct comm_rec {
  uint64_t ggid, index;
  int size, remote_size;
  int *ranks, *remote_ranks; /* world ranks, in rank order */
  int inter;
  int rank;       /* this process's, in the (local) group: MPI_Comm_rank's answer ... */
  int rank_known; /* ... once MPI gave it (mana_local_Comm_rank answers from it) */
  int foreign;    /* members outside MPI_COMM_WORLD */
  int incomplete; /* something MPI would not tell: cannot be rebuilt */
  struct comm_topo topo;
  char *name;
  struct mana_eh_ref errhandler;
  /* The handler was set on this communicator, or on the one MPI copied it from.  MPICH keeps
   * none for a communicator whose handler was never set, and such a communicator follows
   * MPI_COMM_WORLD's handler of the moment (MPI_Comm_get_errhandler says
   * MPI_ERRORS_ARE_FATAL): a restart must leave it unset too. */
  int eh_explicit;
  int has_info;
  struct mana_kvlist info;
  struct mana_attr *attrs;
};

/* Frees a record and everything it owns. */
void mana_comm_rec_free(struct comm_rec *r);

/* At restart, before any communicator is rebuilt (comm_orphans.c): the communicators this
 * process must help make although it holds no record of them, because other members still do
 * (a member frees a communicator without waiting for the others).  held[0..n) are the records
 * this process holds, live or freed.  Collective over MPI_COMM_WORLD; on success *ghosts is a
 * malloc'd array of *nghosts records (made, then freed, by the caller).  Returns MPI_SUCCESS,
 * or an error already reported. */
int mana_comm_orphans(const struct comm_rec *const *held, size_t n, struct comm_rec ***ghosts,
                      size_t *nghosts);

#endif
