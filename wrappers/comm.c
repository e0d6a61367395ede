/* Communicators, for restart.
 *
 * A communicator is recorded when MPI makes it, whatever call made it (dup, split, create,
 * create_group, the topology constructors, merges, ...): its members as world ranks in rank
 * order, its topology as MPI reports it, the error handler it inherited, and the attributes
 * its parent's copy callbacks gave it; later calls keep the name, the error handler, the info
 * hints and the attributes up to date.
 *
 * It is rebuilt with MPI_Comm_create_group on MPI_COMM_WORLD over a group of the recorded
 * world ranks, in the recorded order, so every process keeps its rank; a topology is then made
 * again from that communicator without reordering (which keeps the ranks again).  Rebuilding is
 * collective over the members, so every member must rebuild its communicators in the same
 * order.  Each is identified by its group id (cc_group_id of its members) and its creation
 * index among the communicators with that group id, and they are rebuilt in ascending order
 * of the pair (comm_order.h says why that order agrees across processes and cannot
 * deadlock).
 *
 * An intercommunicator is recorded with both groups; its group id covers their union (every
 * member of both sides names it alike).  It is rebuilt from a local communicator made as
 * above over its local group and MPI_Intercomm_create with MPI_COMM_WORLD as the bridge, local
 * rank 0 as leader and the world rank of the remote group's rank 0 as remote leader: both
 * sides keep their ranks, and MPICH decides which side is the low group from those same two
 * processes (the first member of each group), so MPI_Intercomm_merge orders the sides as
 * before.
 *
 * Communicators with members outside MPI_COMM_WORLD are recorded but not rebuilt: a
 * checkpoint is refused while one exists. */
#include <stdio.h>
#include <string.h>

#include "cc_algorithm.h"
#include "comm_order.h"
#include "comm_rec.h"
#include "p2p.h"
#include "pcoll.h"
#include "records.h"
#include "stub_hooks.h"
#include "u64map.h"

/* The predefined communicators exist in every MPI; only what the application changed on them
 * is recorded. */
static struct comm_rec world_rec = {.errhandler = {MPI_ERRORS_ARE_FATAL, -1}};
static struct comm_rec self_rec = {.errhandler = {MPI_ERRORS_ARE_FATAL, -1}};

/* Naming key -> communicators made under it so far on this process (see next_index). */
static struct mana_u64map made_per_key;

static struct comm_rec *rec_of(MPI_Comm v)
{
  if (v == MPI_COMM_WORLD)
    return &world_rec;
  if (v == MPI_COMM_SELF)
    return &self_rec;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  return s ? s->meta : NULL;
}

static void *alloc_ints(int n)
{
  return calloc(n > 0 ? (size_t)n : 1, sizeof(int));
}

/* ---- recording ---- */

static int group_ranks(MPI_Comm real, int remote, int *size, int **ranks)
{
  MPI_Group g;
  int rc = remote ? MANA_LH_CALL_NOPARK(MPI_Comm_remote_group, real, &g)
                  : MANA_LH_CALL_NOPARK(MPI_Comm_group, real, &g);
  if (rc != MPI_SUCCESS)
    return -1;
  int foreign = -1;
  if (MANA_LH_CALL_NOPARK(MPI_Group_size, g, size) == MPI_SUCCESS && (*ranks = alloc_ints(*size)))
    foreign = mana_group_world_ranks(g, *size, *ranks);
  MANA_LH_CALL_NOPARK(MPI_Group_free, &g);
  return foreign;
}

static int record_members(struct comm_rec *r, MPI_Comm real)
{
  if (MANA_LH_CALL_NOPARK(MPI_Comm_test_inter, real, &r->inter) != MPI_SUCCESS)
    return -1;
  int local = group_ranks(real, 0, &r->size, &r->ranks);
  int remote = r->inter ? group_ranks(real, 1, &r->remote_size, &r->remote_ranks) : 0;
  if (local < 0 || remote < 0)
    return -1;
  r->foreign = local + remote;
  /* An intercommunicator's id covers both groups (cc_group_id does not depend on order). */
  int *all = alloc_ints(r->size + r->remote_size);
  if (!all)
    return -1;
  memcpy(all, r->ranks, (size_t)r->size * sizeof(int));
  if (r->remote_size)
    memcpy(all + r->size, r->remote_ranks, (size_t)r->remote_size * sizeof(int));
  r->ggid = cc_group_id(all, (size_t)(r->size + r->remote_size));
  free(all);
  return 0;
}

static int record_cart(struct comm_topo *t, MPI_Comm real)
{
  if (MANA_LH_CALL_NOPARK(MPI_Cartdim_get, real, &t->ndims) != MPI_SUCCESS)
    return -1;
  int *coords = alloc_ints(t->ndims);
  t->dims = alloc_ints(t->ndims);
  t->periods = alloc_ints(t->ndims);
  int rc = coords && t->dims && t->periods
               ? MANA_LH_CALL_NOPARK(MPI_Cart_get, real, t->ndims, t->dims, t->periods, coords)
               : MPI_ERR_NO_MEM;
  free(coords);
  return rc == MPI_SUCCESS ? 0 : -1;
}

static int record_graph(struct comm_topo *t, MPI_Comm real)
{
  if (MANA_LH_CALL_NOPARK(MPI_Graphdims_get, real, &t->nnodes, &t->nedges) != MPI_SUCCESS)
    return -1;
  t->index = alloc_ints(t->nnodes);
  t->edges = alloc_ints(t->nedges);
  if (!t->index || !t->edges)
    return -1;
  return MANA_LH_CALL_NOPARK(MPI_Graph_get, real, t->nnodes, t->nedges, t->index, t->edges) ==
                 MPI_SUCCESS
             ? 0
             : -1;
}

/* The neighbours as this process sees them, in MPI's order, which the adjacent constructor
 * keeps: neighbourhood collectives then exchange with the same peers in the same order. */
static int record_dist_graph(struct comm_topo *t, MPI_Comm real)
{
  const struct mana_lh_services *svc = &MANA_BOUNDARY->lh->svc;
  if (MANA_LH_CALL_NOPARK(MPI_Dist_graph_neighbors_count, real, &t->indegree, &t->outdegree,
                          &t->weighted) != MPI_SUCCESS)
    return -1;
  t->sources = alloc_ints(t->indegree);
  t->sourceweights = alloc_ints(t->indegree);
  t->destinations = alloc_ints(t->outdegree);
  t->destweights = alloc_ints(t->outdegree);
  if (!t->sources || !t->sourceweights || !t->destinations || !t->destweights)
    return -1;
  return MANA_LH_CALL_NOPARK(MPI_Dist_graph_neighbors, real, t->indegree, t->sources,
                             t->weighted ? t->sourceweights : svc->unweighted, t->outdegree,
                             t->destinations,
                             t->weighted ? t->destweights : svc->unweighted) == MPI_SUCCESS
             ? 0
             : -1;
}

static int record_topology(struct comm_topo *t, MPI_Comm real)
{
  if (MANA_LH_CALL_NOPARK(MPI_Topo_test, real, &t->kind) != MPI_SUCCESS)
    return -1;
  if (t->kind == MPI_CART)
    return record_cart(t, real);
  if (t->kind == MPI_GRAPH)
    return record_graph(t, real);
  if (t->kind == MPI_DIST_GRAPH)
    return record_dist_graph(t, real);
  return 0;
}

/* The handler MPI gave the new communicator (inherited, or named by the constructor). */
static int record_errhandler(struct comm_rec *r, MPI_Comm v, MPI_Comm real)
{
  MPI_Errhandler eh;
  if (MANA_LH_CALL_NOPARK(MPI_Comm_get_errhandler, real, &eh) != MPI_SUCCESS)
    return -1;
  mana_comm_errors_from(v, eh);
  mana_eh_ref_of_real(eh, &r->errhandler);
  if (mana_real_is_created((uint32_t)eh))
    MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &eh);
  return r->errhandler.index < 0 && r->errhandler.predefined == MPI_ERRHANDLER_NULL ? -1 : 0;
}

/* Whether a new communicator's handler was set (comm_rec.h): MPI's constructors copy the
 * parent's handler, or its absence, and a parent without one passes none on (the handler MPI
 * holds for it is MPI_COMM_WORLD's, set by follow_world below); of a parent with one, a
 * handler that is not fatal was copied.  Without a parent (MPI_Comm_create_from_group names
 * the handler) it is set. */
static int inherits_explicit(const struct comm_rec *r, const struct comm_rec *p)
{
  if (!p)
    return 1;
  if (!p->eh_explicit)
    return 0;
  if (r->errhandler.index >= 0 || r->errhandler.predefined != MPI_ERRORS_ARE_FATAL)
    return 1;
  return p->errhandler.index < 0 && p->errhandler.predefined == MPI_ERRORS_ARE_FATAL;
}

/* ---- communicators whose handler was never set (comm_rec.h) ---- */

/* MPICH raises the errors of a communicator whose handler was never set on MPI_COMM_WORLD's
 * handler of the moment, and passes MPI_COMM_WORLD to a user handler.  MPICH cannot unset a
 * handler, and the communicators a restart or a constructor copying from a rebuilt
 * MPI_COMM_WORLD makes hold a set MPI_ERRORS_ARE_FATAL: so the stub itself gives every such
 * communicator the handler the application set on MPI_COMM_WORLD, when it sets one and when
 * the communicator is made, and answers for it what MPICH answers (comm_errhandler.c). */
int mana_comm_follows_world(MPI_Comm v)
{
  if (v == MPI_COMM_WORLD || !mana_world_model)
    return 0;
  const struct comm_rec *r = rec_of(v);
  return r && !r->eh_explicit;
}

/* The real handler the application set on MPI_COMM_WORLD (while world_rec.eh_explicit). */
static MPI_Errhandler world_errhandler = MPI_ERRHANDLER_NULL;

static void follow_world(MPI_Comm v, MPI_Comm real)
{
  if (!world_rec.eh_explicit)
    return; /* MPI_COMM_WORLD's handler is fatal, and so is the one the communicator holds */
  if (MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, real, world_errhandler) == MPI_SUCCESS)
    mana_comm_errors_from(v, world_errhandler);
}

void mana_comm_follow_world(MPI_Errhandler real_errhandler)
{
  /* Other threads may make and free communicators meanwhile (MPI_THREAD_MULTIPLE). */
  mana_stub_lock_take();
  world_errhandler = real_errhandler;
  if (!self_rec.eh_explicit)
    follow_world(MPI_COMM_SELF, MPI_COMM_SELF);
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct comm_rec *r = s->meta;
    if ((s->flags & (MANA_SLOT_USED | MANA_SLOT_FREED)) == MANA_SLOT_USED && r && !r->eh_explicit)
      follow_world(mana_handle_make(MANA_KIND_COMM, i), (MPI_Comm)s->real);
  }
  mana_stub_lock_give();
}

/* A communicator's name among those with its members (its "creation index", the second half
 * of the pair that names it on every member and after restart, comm_order.h): the n-th made
 * under `key`, the id of the collective call that made it: the parent's clock id for a
 * constructor on a parent, the constructor's own id for one over groups (mana_comm_group_cc_id),
 * the union of both groups and the tag for MPI_Intercomm_create.  Every member calls the
 * constructors under one key in the same order (MPI orders the collectives of a communicator
 * so), so every member gives the new communicator the same name.  Numbering by membership
 * instead would not do: MPI_Comm_idup on two duplicates of one communicator may be started in
 * different orders on different members (MPICH's comm/idup_with_info does).  Every member that
 * makes the call counts it, also one that gets MPI_COMM_NULL. */
static uint64_t next_index(uint64_t key)
{
  uint64_t n = mana_comm_next_index(&made_per_key, key);
  return n == UINT64_MAX || !key ? UINT64_MAX : cc_id_mix(key, n);
}

static void created_under(MPI_Comm v, MPI_Comm parent, uint64_t key)
{
  uint64_t index = next_index(key);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  struct comm_rec *r = s ? calloc(1, sizeof(*r)) : NULL;
  if (!r)
    return;
  MPI_Comm real = (MPI_Comm)s->real;
  r->topo.kind = MPI_UNDEFINED;
  r->index = index;
  if (index == UINT64_MAX || record_members(r, real) != 0 ||
      (!r->inter && record_topology(&r->topo, real) != 0) || record_errhandler(r, v, real) != 0)
    r->incomplete = 1;
  r->rank_known = MANA_LH_CALL_NOPARK(MPI_Comm_rank, real, &r->rank) == MPI_SUCCESS;
  const struct comm_rec *p = rec_of(parent);
  r->eh_explicit = inherits_explicit(r, p);
  if (!r->eh_explicit) {
    r->errhandler = (struct mana_eh_ref){MPI_ERRORS_ARE_FATAL, -1}; /* what MPICH answers */
    follow_world(v, real);
  }
  if (p && p->attrs)
    mana_attr_inherit(&r->attrs, p->attrs, MANA_KIND_COMM, (uint64_t)real);
  s->meta = r;
}

void mana_comm_created(MPI_Comm v, MPI_Comm parent)
{
  created_under(v, parent, mana_comm_cc_id(parent));
}

void mana_comm_created_in(MPI_Comm v, MPI_Comm parent, uint64_t key)
{
  created_under(v, parent, key);
}

/* The two sides of a new intercommunicator made it on different local communicators: it is
 * named under what both know, the union of the groups (its group id) and the tag. */
void mana_after_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                 int remote_leader, int tag, MPI_Comm *newintercomm)
{
  (void)local_comm;
  (void)local_leader;
  (void)peer_comm;
  (void)remote_leader;
  struct comm_rec *r = rec_of(*newintercomm);
  if (!r || r == &world_rec || r == &self_rec)
    return;
  r->index = next_index(cc_id_mix(r->ggid, 0x696e746572ull ^ (uint64_t)(uint32_t)tag));
  if (r->index == UINT64_MAX)
    r->incomplete = 1;
}

/* The members of MPI_COMM_WORLD and MPI_COMM_SELF, for communicators recorded from them. */
static int predefined_members(void)
{
  if (world_rec.ranks)
    return 0;
  int size = 0, rank = 0;
  if (MANA_LH_CALL_NOPARK(MPI_Comm_size, MPI_COMM_WORLD, &size) != MPI_SUCCESS ||
      MANA_LH_CALL_NOPARK(MPI_Comm_rank, MPI_COMM_WORLD, &rank) != MPI_SUCCESS)
    return -1;
  int *world = alloc_ints(size), *self = alloc_ints(1);
  if (!world || !self) {
    free(world);
    free(self);
    return -1;
  }
  for (int i = 0; i < size; i++)
    world[i] = i;
  self[0] = rank;
  world_rec.size = size;
  world_rec.ranks = world;
  world_rec.ggid = cc_group_id(world, (size_t)size);
  self_rec.size = 1;
  self_rec.ranks = self;
  world_rec.rank = rank;
  self_rec.rank = 0;
  world_rec.rank_known = self_rec.rank_known = 1;
  self_rec.ggid = cc_group_id(self, 1);
  world_rec.topo.kind = self_rec.topo.kind = MPI_UNDEFINED;
  return 0;
}

static int *copy_ints(const int *from, int n)
{
  int *to = alloc_ints(n);
  if (to && n > 0)
    memcpy(to, from, (size_t)n * sizeof(int));
  return to;
}

/* A duplicate has its parent's members and topology. */
static int copy_shape(struct comm_rec *r, const struct comm_rec *p)
{
  const struct comm_topo *pt = &p->topo;
  struct comm_topo *t = &r->topo;
  r->size = p->size;
  r->remote_size = p->remote_size;
  r->inter = p->inter;
  r->rank = p->rank; /* a duplicate keeps every rank */
  r->rank_known = p->rank_known;
  r->foreign = p->foreign;
  r->ggid = p->ggid;
  *t = *pt;
  r->ranks = copy_ints(p->ranks, p->size);
  r->remote_ranks = p->inter ? copy_ints(p->remote_ranks, p->remote_size) : NULL;
  t->dims = copy_ints(pt->dims, pt->ndims);
  t->periods = copy_ints(pt->periods, pt->ndims);
  t->index = copy_ints(pt->index, pt->nnodes);
  t->edges = copy_ints(pt->edges, pt->nedges);
  t->sources = copy_ints(pt->sources, pt->indegree);
  t->sourceweights = copy_ints(pt->sourceweights, pt->indegree);
  t->destinations = copy_ints(pt->destinations, pt->outdegree);
  t->destweights = copy_ints(pt->destweights, pt->outdegree);
  if (!r->ranks || (p->inter && !r->remote_ranks) || !t->dims || !t->periods || !t->index ||
      !t->edges || !t->sources || !t->sourceweights || !t->destinations || !t->destweights)
    return -1;
  return 0;
}

/* Until its request completes, MPI has not finished the new communicator, and asking for its
 * group would cache an unfinished one inside MPI: it is recorded from its parent (the same
 * members, topology and error handler; the attributes its copy callbacks made). */
void mana_comm_created_pending(MPI_Comm v, MPI_Comm parent)
{
  uint64_t index = next_index(mana_comm_cc_id(parent));
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  struct comm_rec *r = s ? calloc(1, sizeof(*r)) : NULL;
  if (!r)
    return;
  const struct comm_rec *p = rec_of(parent);
  r->index = index;
  if (!p || p->incomplete || predefined_members() != 0 || copy_shape(r, p) != 0 ||
      index == UINT64_MAX)
    r->incomplete = 1;
  if (p) {
    r->errhandler = p->errhandler;
    r->eh_explicit = p->eh_explicit;
    if (p->attrs)
      mana_attr_inherit(&r->attrs, p->attrs, MANA_KIND_COMM, s->real);
  }
  s->meta = r;
}

/* ---- keeping records up to date ---- */

void mana_after_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
  struct comm_rec *r = rec_of(comm);
  if (!r)
    return;
  free(r->name);
  r->name = strdup(comm_name);
}

/* Hints accumulate: keys set earlier and not named again keep their values. */
static void record_info(MPI_Comm comm, MPI_Info info)
{
  struct comm_rec *r = rec_of(comm);
  struct mana_kvlist now = {0, 0, NULL};
  if (!r || mana_info_snapshot(info, &now) != 0) {
    if (r)
      r->incomplete = 1;
    mana_kvlist_free(&now);
    return;
  }
  r->has_info = 1;
  for (int i = 0; i < now.n; i++)
    if (mana_kvlist_set(&r->info, now.kv[i].key, now.kv[i].value) != 0)
      r->incomplete = 1;
  mana_kvlist_free(&now);
}

void mana_after_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
  record_info(comm, info);
}

void mana_after_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
  (void)comm;
  record_info(*newcomm, info);
}

void mana_after_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                    MPI_Request *request)
{
  (void)comm;
  (void)request;
  record_info(*newcomm, info);
}

void mana_comm_attr_set(MPI_Comm v, int virt_keyval, void *value, int attr_type)
{
  struct comm_rec *r = rec_of(v);
  if (r)
    mana_attr_set(&r->attrs, virt_keyval, value, attr_type);
}

void mana_after_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
  mana_comm_attr_set(comm, comm_keyval, attribute_val, 0);
}

void mana_after_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
  mana_comm_attr_set(comm, keyval, attribute_val, 0);
}

/* MPI answers the attributes it predefines on MPI_COMM_WORLD (MPI_TAG_UB, ...) with a pointer
 * to its own int, in the lower half, which a restart replaces: a program that reads it after
 * a checkpoint read what the old address held in the new process (MPICH's pt2pt/large_tag
 * read 0 for MPI_TAG_UB).  The application gets a pointer to the stub's copy instead. */
static int predefined_copy[8];

static void answer_predefined(int keyval, void *attribute_val, const int *flag)
{
  static const int predefined[] = {MPI_TAG_UB,          MPI_HOST,          MPI_IO,
                                   MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE,
                                   MPI_APPNUM};
  if (!*flag)
    return;
  for (size_t i = 0; i < sizeof(predefined) / sizeof(predefined[0]); i++)
    if (keyval == predefined[i]) {
      int **answer = attribute_val;
      predefined_copy[i] = **answer;
      *answer = &predefined_copy[i];
      return;
    }
}

void mana_after_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
  (void)comm;
  answer_predefined(comm_keyval, attribute_val, flag);
}

void mana_after_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
  (void)comm;
  answer_predefined(keyval, attribute_val, flag);
}

void mana_after_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
  struct comm_rec *r = rec_of(comm);
  if (r)
    mana_attr_delete(&r->attrs, comm_keyval);
}

void mana_after_Attr_delete(MPI_Comm comm, int keyval)
{
  mana_after_Comm_delete_attr(comm, keyval);
}

void mana_comm_record_errhandler(MPI_Comm v, MPI_Errhandler errhandler)
{
  struct comm_rec *r = rec_of(v);
  if (r) {
    mana_eh_ref_of_virtual(errhandler, &r->errhandler);
    r->eh_explicit = 1;
  }
}

/* The collective clock's id of a communicator: its group id and creation index, the name
 * every member gives it (0: no usable record, the checkpoint is refused anyway).  The
 * predefined ones take an index no made communicator can have. */
uint64_t mana_comm_cc_id(MPI_Comm v)
{
  struct comm_rec *r = rec_of(v);
  if (!r || r->incomplete)
    return 0;
  if (r == &world_rec || r == &self_rec)
    return predefined_members() == 0 ? cc_id_mix(r->ggid, UINT64_MAX) : 0;
  return r->ggid ? cc_id_mix(r->ggid, r->index) : 0;
}

/* A constructor over groups has no communicator all its members share, so it is counted on
 * an id of what they all pass it: the members of the groups (cc_group_id does not depend on
 * their order), the tag and the parent.  Members call such constructors with the same
 * arguments in the same order (MPI matches them so), which is all the clock needs of an id
 * (docs/checkpoint-protocol.md 1.1). */
uint64_t mana_comm_group_cc_id(MPI_Comm parent, const MPI_Group *groups, int ngroups, uint64_t tag)
{
  int total = 0, size[2];
  const int *ranks[2];
  if (ngroups < 1 || ngroups > 2)
    return 0;
  for (int i = 0; i < ngroups; i++) {
    if (mana_group_members(groups[i], &size[i], &ranks[i]) != 0)
      return 0;
    total += size[i];
  }
  int *all = alloc_ints(total);
  if (!all || total == 0) {
    free(all);
    return 0;
  }
  for (int i = 0, at = 0; i < ngroups; at += size[i], i++)
    if (size[i] > 0)
      memcpy(all + at, ranks[i], (size_t)size[i] * sizeof(int));
  uint64_t id = cc_id_mix(cc_group_id(all, (size_t)total), tag);
  free(all);
  if (parent != MPI_COMM_NULL) {
    uint64_t p = mana_comm_cc_id(parent);
    if (!p)
      return 0;
    id = cc_id_mix(id, p);
  }
  return id;
}

uint64_t mana_string_tag(const char *stringtag)
{
  uint64_t h = 0x6d616e6121ull; /* FNV-1a would do as well: any hash every member computes */
  for (const unsigned char *c = (const unsigned char *)stringtag; c && *c; c++)
    h = cc_id_mix(h, *c);
  return h;
}

uint64_t mana_comm_ggid(MPI_Comm v)
{
  struct comm_rec *r = rec_of(v);
  if ((r == &world_rec || r == &self_rec) && predefined_members() != 0)
    return 0;
  return r ? r->ggid : 0;
}

int mana_comm_members(MPI_Comm v, uint64_t *ggid, uint64_t *index, int *size, const int **ranks)
{
  const struct comm_rec *r = rec_of(v);
  if (!r || r->incomplete || r->inter || r->foreign)
    return -1;
  if ((r == &world_rec || r == &self_rec) && predefined_members() != 0)
    return -1;
  *ggid = r->ggid;
  *index = (r == &world_rec || r == &self_rec) ? UINT64_MAX : r->index;
  *size = r->size;
  *ranks = r->ranks;
  return r->ranks ? 0 : -1;
}

/* Reads the record only (the drain calls it on its own thread): the world's members are known
 * from MPI_Init on (the clock registers MPI_COMM_WORLD there). */
int mana_comm_world_members(MPI_Comm v, int *nlocal, const int **local, int *nremote,
                            const int **remote)
{
  const struct comm_rec *r = rec_of(v);
  if (!r || r->incomplete || !r->ranks)
    return -1;
  *nlocal = r->size;
  *local = r->ranks;
  *nremote = r->inter ? r->remote_size : 0;
  *remote = r->inter ? r->remote_ranks : NULL;
  return 0;
}

int mana_comm_is_root(MPI_Comm comm, int root)
{
  const struct comm_rec *r = rec_of(comm);
  int rank = -1;
  if (root == MPI_ROOT)
    return 1;
  if (r && r->inter)
    return 0; /* the other members of the root's group pass MPI_PROC_NULL, the others a rank */
  MANA_LH_CALL_NOPARK(MPI_Comm_rank, MANA_REAL(COMM, MPI_Comm, comm), &rank);
  return rank == root;
}

void mana_comm_rec_free(struct comm_rec *r)
{
  struct comm_topo *t = &r->topo;
  free(r->ranks);
  free(r->remote_ranks);
  free(t->dims);
  free(t->periods);
  free(t->index);
  free(t->edges);
  free(t->sources);
  free(t->sourceweights);
  free(t->destinations);
  free(t->destweights);
  free(r->name);
  mana_kvlist_free(&r->info);
  mana_attr_free(&r->attrs);
  free(r);
}

static void release(struct mana_slot *s)
{
  mana_drained_forget_comm(s->meta); /* its buffered messages can never be received now */
  mana_comm_rec_free(s->meta);
}

/* The drain's point-to-point counters are per world rank (p2p.h).  `rank` is a rank of comm's
 * group, or of its remote group for an intercommunicator (where sends go and receives come
 * from); -1 if unknown.  MPI_COMM_WORLD is translated inline by the caller. */
int mana_comm_world_rank(MPI_Comm v, int rank)
{
  const struct comm_rec *r = rec_of(v);
  if (r == &self_rec)
    return rank == 0 ? mana_p2p_my_world_rank : -1;
  if (!r || rank < 0)
    return -1;
  if (r->inter)
    return r->remote_ranks && rank < r->remote_size ? r->remote_ranks[rank] : -1;
  return r->ranks && rank < r->size ? r->ranks[rank] : -1;
}

/* ---- queries answered without MPI (mpi_api.txt, `local`) ---- */

/* The record that answers MPI_Comm_rank and MPI_Comm_size on v: MPI gave the rank when v was
 * made (a restart keeps every rank), the size is its group's.  NULL when MPI must answer: no
 * complete record, or MPI_COMM_WORLD and MPI_COMM_SELF outside the application's MPI_Init and
 * MPI_Finalize (MPI reports the misuse).  A crossing costs tens of nanoseconds, and codes ask
 * inside their loops. */
static inline const struct comm_rec *answering(MPI_Comm v)
{
  const struct comm_rec *r;
  if (v == MPI_COMM_WORLD || v == MPI_COMM_SELF) {
    if (!mana_app_in_mpi)
      return NULL;
    r = v == MPI_COMM_WORLD ? &world_rec : &self_rec;
  } else {
    struct mana_slot *s = mana_world_model ? mana_handle_slot(MANA_KIND_COMM, (uint32_t)v) : NULL;
    r = s ? s->meta : NULL;
  }
  return r && r->rank_known && r->ranks ? r : NULL;
}

int mana_local_Comm_rank(MPI_Comm comm, int *rank, int *result)
{
  const struct comm_rec *r = rank ? answering(comm) : NULL;
  if (!r)
    return 0;
  *rank = r->rank;
  *result = MPI_SUCCESS;
  return 1;
}

int mana_local_Comm_size(MPI_Comm comm, int *size, int *result)
{
  const struct comm_rec *r = size ? answering(comm) : NULL;
  if (!r)
    return 0;
  *size = r->size;
  *result = MPI_SUCCESS;
  return 1;
}

/* The record of a made communicator, as an identity that no later communicator can share
 * while the messages buffered for it live (they are dropped when it is freed, above). */
const void *mana_comm_identity(MPI_Comm v)
{
  return rec_of(v);
}

/* ---- restart ---- */

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct comm_rec *r = s->meta;
    uint32_t v = mana_handle_make(MANA_KIND_COMM, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    if (!r || r->incomplete) {
      mana_reason(reason, len, "no complete record of", "communicator", v);
      return 0;
    }
    if (r->foreign) {
      mana_reason(reason, len, "processes outside MPI_COMM_WORLD are members of", "communicator",
                  v);
      return 0;
    }
  }
  if (world_rec.incomplete || self_rec.incomplete) {
    mana_reason(reason, len, "no complete record of the hints of", "MPI_COMM_WORLD or SELF", 0);
    return 0;
  }
  return 1;
}

static void discard_predefined(MPI_Comm comm, struct comm_rec *r, const char *default_name)
{
  mana_attr_remove_all(r->attrs, MANA_KIND_COMM, (uint64_t)comm);
  if (r->name)
    MANA_LH_CALL_NOPARK(MPI_Comm_set_name, comm, default_name);
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Comm real = (MPI_Comm)s->real;
    if ((s->flags & (MANA_SLOT_USED | MANA_SLOT_FREED)) == MANA_SLOT_USED &&
        mana_real_is_created((uint32_t)real))
      MANA_LH_CALL_NOPARK(MPI_Comm_free, &real); /* a freed one went with its requests */
  }
  mana_comm_sinks_release();
  discard_predefined(MPI_COMM_WORLD, &world_rec, "MPI_COMM_WORLD");
  discard_predefined(MPI_COMM_SELF, &self_rec, "MPI_COMM_SELF");
  return MPI_SUCCESS;
}

static int rebuild_tag(const struct comm_rec *r)
{
  return (int)(r->index & 0x7fff);
}

/* The topology, made again from the plain communicator without reordering, replaces it. */
static int rebuild_topology(const struct comm_topo *t, MPI_Comm *c)
{
  const struct mana_lh_services *svc = &MANA_BOUNDARY->lh->svc;
  MPI_Comm out = MPI_COMM_NULL;
  int rc;
  if (t->kind == MPI_CART)
    rc = MANA_LH_CALL_NOPARK(MPI_Cart_create, *c, t->ndims, t->dims, t->periods, 0, &out);
  else if (t->kind == MPI_GRAPH)
    rc = MANA_LH_CALL_NOPARK(MPI_Graph_create, *c, t->nnodes, t->index, t->edges, 0, &out);
  else if (t->kind == MPI_DIST_GRAPH)
    rc = MANA_LH_CALL_NOPARK(MPI_Dist_graph_create_adjacent, *c, t->indegree, t->sources,
                             !t->weighted  ? svc->unweighted
                             : t->indegree ? t->sourceweights
                                           : svc->weights_empty,
                             t->outdegree, t->destinations,
                             !t->weighted   ? svc->unweighted
                             : t->outdegree ? t->destweights
                                            : svc->weights_empty,
                             MPI_INFO_NULL, 0, &out);
  else
    return MPI_SUCCESS;
  if (rc == MPI_SUCCESS) {
    MANA_LH_CALL_NOPARK(MPI_Comm_free, c);
    *c = out;
  }
  return rc;
}

/* Name, error handler, hints and attributes: on rebuilt and predefined communicators alike. */
static int rebuild_properties(const struct comm_rec *r, MPI_Comm c, uint32_t v)
{
  int rc = MPI_SUCCESS;
  if (r->name && (rc = MANA_LH_CALL_NOPARK(MPI_Comm_set_name, c, r->name)) != MPI_SUCCESS)
    return mana_rebuild_error("communicator", v, "MPI_Comm_set_name", rc);
  /* MPI_COMM_WORLD's is always set: the rebuild made it MPI_ERRORS_RETURN.  One whose
   * handler was never set gets MPI_COMM_WORLD's, as follow_world gives it. */
  const struct mana_eh_ref *eh = r->eh_explicit || r == &world_rec ? &r->errhandler
                                 : world_rec.eh_explicit           ? &world_rec.errhandler
                                                                   : NULL;
  if (eh &&
      (rc = MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, c, mana_eh_ref_real(eh))) != MPI_SUCCESS)
    return mana_rebuild_error("communicator", v, "MPI_Comm_set_errhandler", rc);
  if (r == &world_rec && r->eh_explicit)
    world_errhandler = mana_eh_ref_real(eh);
  if (r->has_info) {
    MPI_Info info = MPI_INFO_NULL;
    rc = mana_kvlist_to_real(&r->info, &info);
    if (rc == MPI_SUCCESS)
      rc = MANA_LH_CALL_NOPARK(MPI_Comm_set_info, c, info);
    if (info != MPI_INFO_NULL)
      MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("communicator", v, "MPI_Comm_set_info", rc);
  }
  return mana_attr_replay(r->attrs, MANA_KIND_COMM, (uint64_t)c, "communicator", v);
}

/* The members' communicator, in the recorded rank order.  Every member rebuilds it as its
 * (ggid, index)-th: the tag only has to be the same on all of them. */
static int make_local(const struct comm_rec *r, uint32_t v, MPI_Comm *out)
{
  MPI_Group g, world = mana_world_group();
  int rc = MANA_LH_CALL_NOPARK(MPI_Group_incl, world, r->size, r->ranks, &g);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("communicator", v, "MPI_Group_incl", rc);
  rc = MANA_LH_CALL_NOPARK(MPI_Comm_create_group, MPI_COMM_WORLD, g, rebuild_tag(r), out);
  MANA_LH_CALL_NOPARK(MPI_Group_free, &g);
  return rc == MPI_SUCCESS ? rc
                           : mana_rebuild_error("communicator", v, "MPI_Comm_create_group", rc);
}

/* An intercommunicator: the local side as above, bridged through MPI_COMM_WORLD.  The leaders
 * exchange on MPICH's collective context of MPI_COMM_WORLD, so the tag meets no message of
 * the application (and none is in flight at a rebuild: pending receives are posted later). */
static int make_inter(const struct comm_rec *r, uint32_t v, MPI_Comm *out)
{
  MPI_Comm local = MPI_COMM_NULL;
  int rc = make_local(r, v, &local);
  if (rc != MPI_SUCCESS)
    return rc;
  rc = MANA_LH_CALL_NOPARK(MPI_Intercomm_create, local, 0, MPI_COMM_WORLD, r->remote_ranks[0],
                           rebuild_tag(r), out);
  MANA_LH_CALL_NOPARK(MPI_Comm_free, &local);
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("communicator", v, "MPI_Intercomm_create", rc);
}

/* The communicator itself: what every member makes alike, ghosts too (comm_orphans.c). */
static int rebuild_shape(const struct comm_rec *r, uint32_t v, MPI_Comm *out)
{
  int rc = r->inter ? make_inter(r, v, out) : make_local(r, v, out);
  if (rc != MPI_SUCCESS)
    return rc;
  if ((rc = rebuild_topology(&r->topo, out)) != MPI_SUCCESS)
    return mana_rebuild_error("communicator", v, "the topology constructor", rc);
  return MPI_SUCCESS;
}

/* A key's slot with this bit set is the index of a ghost: a communicator this process had
 * freed and makes only with the members that still hold it. */
#define GHOST (UINT32_C(1) << 31)

static int rebuild_key(const struct mana_comm_key *key, struct comm_rec *const *ghosts)
{
  MPI_Comm c = MPI_COMM_NULL;
  if (key->slot & GHOST) {
    int rc = rebuild_shape(ghosts[key->slot & ~GHOST], 0, &c);
    if (rc == MPI_SUCCESS) {
      mana_comm_sink_keep(c); /* its holders may still send on it */
      MANA_LH_CALL_NOPARK(MPI_Comm_free, &c);
    }
    return rc;
  }
  struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_COMM], key->slot);
  uint32_t v = mana_handle_make(MANA_KIND_COMM, key->slot);
  int rc = rebuild_shape(s->meta, v, &c);
  if (rc == MPI_SUCCESS && (rc = rebuild_properties(s->meta, c, v)) == MPI_SUCCESS)
    s->real = (uint32_t)c;
  return rc;
}

/* Every communicator any member holds, live or freed with requests pinning it, is made again
 * over all its members, in the one order (comm_order.h); members that had freed it take part
 * as ghosts (comm_orphans.c), and the freed ones are freed again at finish (comm_freed.c). */
static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  size_t cap = t->in_use ? t->in_use : 1, n = 0, nghosts = 0;
  mana_comm_sinks_forget(); /* a restart's MPI has none; a rebuild in place let them go */
  struct mana_comm_key *keys = calloc(cap, sizeof(*keys));
  const struct comm_rec **held = calloc(cap, sizeof(*held));
  struct comm_rec **ghosts = NULL;
  int rc = keys && held
               ? MPI_SUCCESS
               : mana_rebuild_error("communicators", 0, "allocating their list", MPI_ERR_NO_MEM);
  for (uint32_t i = 0; rc == MPI_SUCCESS && i < t->capacity && n < t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct comm_rec *r = s->meta;
    if ((s->flags & MANA_SLOT_USED) && r) {
      held[n] = r;
      keys[n++] = (struct mana_comm_key){r->ggid, r->index, i};
    }
  }
  if (rc == MPI_SUCCESS)
    rc = mana_comm_orphans(held, n, &ghosts, &nghosts);
  if (rc == MPI_SUCCESS && nghosts > 0) {
    struct mana_comm_key *all = realloc(keys, (n + nghosts) * sizeof(*keys));
    if (all) {
      keys = all;
      for (size_t g = 0; g < nghosts; g++)
        keys[n++] = (struct mana_comm_key){ghosts[g]->ggid, ghosts[g]->index, (uint32_t)g | GHOST};
    } else {
      rc = mana_rebuild_error("communicators", 0, "allocating their list", MPI_ERR_NO_MEM);
    }
  }
  if (nghosts > 0 && getenv("MANA_TEST_REBUILD_TRACE"))
    fprintf(stderr, "mana: making %zu communicators freed here with the members that hold them\n",
            nghosts);
  mana_comm_sort(keys, n);
  for (size_t k = 0; k < n && rc == MPI_SUCCESS; k++)
    rc = rebuild_key(&keys[k], ghosts);
  for (size_t g = 0; g < nghosts; g++)
    mana_comm_rec_free(ghosts[g]);
  free(ghosts);
  free(held);
  free(keys);
  if (rc == MPI_SUCCESS)
    rc = rebuild_properties(&self_rec, MPI_COMM_SELF, (uint32_t)MPI_COMM_SELF);
  if (rc == MPI_SUCCESS) /* last: until now the rebuild wanted MPI_COMM_WORLD's errors back */
    rc = rebuild_properties(&world_rec, MPI_COMM_WORLD, (uint32_t)MPI_COMM_WORLD);
  return rc;
}

const struct mana_kind_ops mana_comm_ops = {
    .name = "communicator",
    .kind = MANA_KIND_COMM,
    .release = release,
    .retain = mana_comm_retain,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
    .finish = mana_comm_freed_finish,
};
