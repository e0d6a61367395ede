/* MPI Sessions (MPI 4).  A session handle is virtualized like any other handle (the generated
 * wrappers); what needs care is what MPI_COMM_WORLD usually provides.  A program may use
 * sessions only and never call MPI_Init: MPI_COMM_WORLD is then not usable, and the records
 * of groups and communicators (group.c, comm.c), which name members by their world ranks,
 * translate through the group of the process set "mpi://WORLD" of a live session instead,
 * which has the same processes in the same order.
 *
 * Sessions are not rebuilt at restart: a checkpoint is refused while one is open
 * (unsupported.c).  Objects made from a session and still held after it is finalized are
 * recorded by world ranks like any other and are rebuilt from MPI_COMM_WORLD.  A program that
 * never calls MPI_Init does not connect to the coordinator (the lower half does that in
 * MPI_Init), so no checkpoint is ever taken of it. */
#include "records.h"

MPI_Group mana_session_world_group(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Group g = MPI_GROUP_NULL;
    if ((s->flags & MANA_SLOT_USED) &&
        MANA_LH_CALL_NOPARK(MPI_Group_from_session_pset, (MPI_Session)s->real, "mpi://WORLD",
                            &g) == MPI_SUCCESS)
      return g;
  }
  return MPI_GROUP_NULL;
}
