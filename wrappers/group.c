/* Groups: recorded as the world ranks of their members in rank order, rebuilt with
 * MPI_Group_incl on MPI_COMM_WORLD's group.  Communicators use the same translation. */
#include <stdio.h>

#include "records.h"

struct group_rec {
  int size;
  int foreign; /* members outside MPI_COMM_WORLD (dynamic processes): cannot be rebuilt */
  int ranks[];
};

static MPI_Group world_group = MPI_GROUP_NULL;

MPI_Group mana_world_group(void)
{
  if (world_group == MPI_GROUP_NULL &&
      MANA_LH_CALL_NOPARK(MPI_Comm_group, MPI_COMM_WORLD, &world_group) != MPI_SUCCESS)
    world_group = MPI_GROUP_NULL;
  return world_group;
}

/* A new MPI has no such group; the old handle means nothing there. */
void mana_world_group_forget(void)
{
  world_group = MPI_GROUP_NULL;
}

/* Without MPI_Init, MPI_COMM_WORLD cannot be asked: a session's "mpi://WORLD" stands in. */
int mana_group_world_ranks(MPI_Group g, int n, int *ranks)
{
  int from_session = !mana_world_model;
  MPI_Group world = from_session ? mana_session_world_group() : mana_world_group();
  int stack[256];
  int *in = n <= 256 ? stack : malloc((size_t)n * sizeof(int));
  int rc = world != MPI_GROUP_NULL && in ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
    in[i] = i;
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Group_translate_ranks, g, n, in, world, ranks);
  if (in != stack)
    free(in);
  if (from_session && world != MPI_GROUP_NULL)
    MANA_LH_CALL_NOPARK(MPI_Group_free, &world);
  if (rc != MPI_SUCCESS)
    return -1;
  int foreign = 0;
  for (int i = 0; i < n; i++)
    foreign += ranks[i] == MPI_UNDEFINED;
  return foreign;
}

void mana_group_created(MPI_Group v, MPI_Group parent)
{
  (void)parent;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_GROUP, (uint32_t)v);
  int size = 0;
  if (!s || MANA_LH_CALL_NOPARK(MPI_Group_size, (MPI_Group)s->real, &size) != MPI_SUCCESS)
    return;
  struct group_rec *r = malloc(sizeof(*r) + (size_t)size * sizeof(int));
  if (!r)
    return;
  r->size = size;
  r->foreign = mana_group_world_ranks((MPI_Group)s->real, size, r->ranks);
  if (r->foreign < 0) {
    free(r);
    return;
  }
  s->meta = r;
}

int mana_group_members(MPI_Group v, int *size, const int **ranks)
{
  if (v == MPI_GROUP_EMPTY) {
    *size = 0;
    *ranks = NULL;
    return 0;
  }
  struct mana_slot *s = mana_handle_slot(MANA_KIND_GROUP, (uint32_t)v);
  const struct group_rec *r = s ? s->meta : NULL;
  if (!r || r->foreign)
    return -1;
  *size = r->size;
  *ranks = r->ranks;
  return 0;
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_GROUP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    const struct group_rec *r = s->meta;
    uint32_t v = mana_handle_make(MANA_KIND_GROUP, i);
    if (!r) {
      mana_reason(reason, len, "no record of", "group", v);
      return 0;
    }
    if (r->foreign) {
      mana_reason(reason, len, "processes outside MPI_COMM_WORLD are members of", "group", v);
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_GROUP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Group real = (MPI_Group)s->real;
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real))
      MANA_LH_CALL_NOPARK(MPI_Group_free, &real);
  }
  if (world_group != MPI_GROUP_NULL)
    MANA_LH_CALL_NOPARK(MPI_Group_free, &world_group);
  world_group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  mana_world_group_forget();
  MPI_Group world = mana_world_group();
  if (world == MPI_GROUP_NULL)
    return mana_rebuild_error("group", 0, "MPI_Comm_group(MPI_COMM_WORLD)", MPI_ERR_INTERN);
  struct mana_table *t = &mana_tables[MANA_KIND_GROUP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct group_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r)
      continue;
    MPI_Group g;
    int rc = MANA_LH_CALL_NOPARK(MPI_Group_incl, world, r->size, r->ranks, &g);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("group", mana_handle_make(MANA_KIND_GROUP, i), "MPI_Group_incl",
                                rc);
    s->real = (uint32_t)g;
  }
  mana_group_standins_mark();
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_group_ops = {
    .name = "group",
    .kind = MANA_KIND_GROUP,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
