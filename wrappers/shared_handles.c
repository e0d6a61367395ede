/* Handles MPI hands out again.  MPICH answers MPI_Comm_group, MPI_Comm_get_errhandler and their
 * kin with the handle of the object itself, one more reference counted inside MPI, so a program
 * gets the value it already holds (MPICH's own Fortran tests compare them) and frees it once
 * per call.  The stub does the same with its virtual handles: an object the application
 * already holds a live handle to gets that handle again, with one more reference on the slot
 * (shared_refs) instead of inside MPI.  MPI's extra reference is given back at once, so every
 * slot holds exactly one reference inside MPI, as a slot made for a new object does; that is
 * also what a restart rebuilds, one real object per slot, and the application's frees then
 * balance: each but the last only counts down.  (mpi_api.txt: `shared`, and the `free` of
 * those kinds.)  A group remembers where it was got (its slot's aux: the call and the
 * communicator, window or file), for the one case a restart would otherwise tell apart. */
#include "stub.h"

/* The live slot the application holds for `real` (or, origin != 0, a stand-in group got from
 * the same place), or UINT32_MAX.  Slots are handed out from the bottom of the table, so the
 * walk stops once it has seen every live one. */
static uint32_t live_index_of(struct mana_table *t, uint64_t real, uint64_t origin)
{
  uint32_t seen = 0;
  for (uint32_t i = 0; i < t->capacity && seen < t->in_use; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    seen++;
    if (s->flags & MANA_SLOT_FREED)
      continue;
    if (origin ? (s->flags & MANA_SLOT_STANDIN) && s->aux == origin : s->real == real)
      return i;
  }
  return UINT32_MAX;
}

/* A restart rebuilds a group from its members, a new object: the communicator's own group,
 * which MPI hands out from then on, is another.  The first time the application asks that
 * communicator (window, file) again, the slot it got from there before takes MPI's object in
 * place of the stand-in, and the application gets its handle again, as without the restart. */
static uint32_t adopt(struct mana_table *t, uint32_t real, uint64_t origin)
{
  uint32_t index = live_index_of(t, 0, origin);
  if (index == UINT32_MAX)
    return UINT32_MAX;
  struct mana_slot *s = mana_slot_at(t, index);
  MPI_Group standin = (MPI_Group)s->real;
  int same = MPI_UNEQUAL;
  if (MANA_LH_CALL_NOPARK(MPI_Group_compare, standin, (MPI_Group)real, &same) != MPI_SUCCESS ||
      same != MPI_IDENT)
    return UINT32_MAX; /* not the group it was: that object changed, a new handle it is */
  /* Under MPI_THREAD_MULTIPLE another thread may be inside a call with the stand-in, read from
   * this slot before it changed (MPICH's comm_create_group_threads2: "Unable to allocate
   * -546199232 bytes" from a freed group); the stand-in is then kept, one group per slot and
   * restart. */
  if (!mana_threads_concurrent)
    MANA_LH_CALL_NOPARK(MPI_Group_free, &standin);
  s->real = real; /* this call's reference inside MPI is now the slot's one */
  s->flags &= ~MANA_SLOT_STANDIN;
  return index;
}

void mana_group_standins_mark(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_GROUP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && s->aux)
      s->flags |= MANA_SLOT_STANDIN;
  }
}

static void give_back(enum mana_kind kind, uint32_t real)
{
  switch (kind) {
  case MANA_KIND_GROUP: {
    MPI_Group g = (MPI_Group)real;
    MANA_LH_CALL_NOPARK(MPI_Group_free, &g);
    break;
  }
  case MANA_KIND_ERRHANDLER: {
    MPI_Errhandler e = (MPI_Errhandler)real;
    MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &e);
    break;
  }
  default:
    abort(); /* gen_wrappers.py allows `shared` only for these kinds */
  }
}

uint32_t mana_share32(enum mana_kind kind, uint32_t real, uint64_t origin, int *made)
{
  *made = 0;
  if (!mana_real_is_created(real))
    return real; /* predefined: the same value everywhere, nothing to count */
  struct mana_table *t = &mana_tables[kind];
  uint32_t index = live_index_of(t, real, 0);
  if (index != UINT32_MAX) {
    give_back(kind, real);
  } else if (kind == MANA_KIND_GROUP && origin && (index = adopt(t, real, origin)) != UINT32_MAX) {
    /* MPI's reference stays: it replaced the stand-in's */
  } else {
    *made = 1;
    uint32_t v = mana_new32(kind, real);
    struct mana_slot *s = kind == MANA_KIND_GROUP ? mana_handle_slot(kind, v) : NULL;
    if (s)
      s->aux = origin;
    return v;
  }
  mana_slot_at(t, index)->shared_refs++;
  return mana_handle_make(kind, index);
}

int mana_unshare(enum mana_kind kind, uint32_t virt)
{
  mana_stub_lock_take();
  struct mana_slot *s = mana_handle_slot(kind, virt);
  int counted = s && s->shared_refs > 0;
  if (counted)
    s->shared_refs--;
  mana_stub_lock_give();
  return counted;
}
