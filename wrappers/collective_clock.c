/* The collective clock: every collective call (blocking, non-blocking, persistent,
 * neighbourhood, communicator constructors) adds one to its communicator's sequence number.
 * That is the whole run-time cost; the checkpoint protocol uses the counts to find a point
 * where no rank is inside a collective.  Predefined communicators keep their counters here. */
#include "stub.h"

static uint64_t world_seq, self_seq;

void mana_cc_tick(MPI_Comm comm)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  if (s)
    s->aux++;
  else if (comm == MPI_COMM_WORLD)
    world_seq++;
  else if (comm == MPI_COMM_SELF)
    self_seq++;
}

uint64_t mana_cc_seq(MPI_Comm comm)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  if (s)
    return s->aux;
  return comm == MPI_COMM_WORLD ? world_seq : comm == MPI_COMM_SELF ? self_seq : 0;
}
