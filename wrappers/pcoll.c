/* Persistent collective requests (MPI_Allreduce_init, ...), for the collective clock and for
 * restart.
 *
 * MPI 4 makes the initialization a collective and each MPI_Start of the request the start of
 * one instance of the collective; the members may start their requests of one communicator
 * in different orders (MPI 4.1, 7.13: only the info key
 * mpi_assert_strict_persistent_collective_ordering promises the same order).  So the
 * initialization is counted on the clock of its communicator (mpi_api.txt: pcoll), as a
 * constructor whose new group is the request itself, and every MPI_Start on the request's
 * own clock id: the k-th start of a request is the same instance on every member, whatever
 * the members started in between.  At a safe point every member has started each request as
 * often as the others, and the drain completes the instances still pending like any
 * non-blocking collective.  Counted on the communicator, two members that had started A and
 * B, and C and B, looked even with A and C pending on one side each (the drain then timed
 * out; std4_pcoll).
 *
 * At restart the request is made again, inactive, from what the initialization was given
 * (pcoll.h: buffers and scalars as they were, datatypes and the operation through their
 * records, the hints as they were, copies of the count and displacement arrays).  MPICH takes
 * a tag from the communicator for each request at initialization, so the members of a
 * communicator must make its requests again in the same order and the same set of them: they
 * are made in the order they were made, and MPI_Request_free of one is counted on the clock,
 * so that at a safe point the members hold the same requests (A2: they free them at the same
 * place in their sequence of collectives on the communicator).  A hash sum the members must
 * agree on checks it, in the drain and before the rebuild: a checkpoint where they do not fails
 * with a reason instead of a restart that hangs. */
#include <stdio.h>
#include <string.h>

#include "cc_algorithm.h"
#include "comm_order.h"
#include "p2p.h"
#include "pcoll.h"

struct pcoll_rec {
  mana_pcoll_replay_fn *replay;
  uint64_t seq;      /* order of initialization on this process */
  uint64_t cc_id;    /* the communicator's clock id: freeing counts on it */
  uint64_t ordinal;  /* among the requests made on that communicator */
  uint64_t start_id; /* the request's own clock id: MPI_Start counts on it */
  MPI_Comm comm;     /* the application's handle */
  int incomplete;    /* something could not be kept (out of memory) */
  int nargs;
  struct mana_pcoll_arg args[];
};

/* Keeps a request's clock id apart from the creation indexes of communicators. */
#define PCOLL_START_SALT 0x70636f6c6c737461ull

static uint64_t made_seq;
static struct mana_u64map made_per_comm; /* clock id -> requests made on that communicator */

static int keep(struct pcoll_rec *r, struct mana_pcoll_arg *a)
{
  a->kept = NULL;
  switch (a->kind) {
  case MANA_PA_DATATYPE:
    mana_dt_arg_get((MPI_Datatype)(uint32_t)a->value, &a->type);
    return 0;
  case MANA_PA_DATATYPES: {
    const MPI_Datatype *v = (const MPI_Datatype *)(uintptr_t)a->value;
    struct mana_dt_arg *types = calloc(a->n ? a->n : 1, sizeof(*types));
    if (!types)
      return -1;
    for (size_t i = 0; i < a->n; i++)
      mana_dt_arg_get(v[i], &types[i]);
    a->kept = types;
    return 0;
  }
  case MANA_PA_COMM:
    r->comm = (MPI_Comm)(uint32_t)a->value;
    r->cc_id = mana_comm_cc_id(r->comm);
    return 0;
  case MANA_PA_INFO: {
    struct mana_kvlist *l = calloc(1, sizeof(*l));
    a->kept = l;
    return l ? mana_info_snapshot((MPI_Info)(uint32_t)a->value, l) : -1;
  }
  case MANA_PA_ARRAY:
    if (a->n == 0)
      return 0;
    if (!(a->kept = malloc(a->n * a->elem)))
      return -1;
    memcpy(a->kept, (const void *)(uintptr_t)a->value, a->n * a->elem);
    return 0;
  default:
    return 0;
  }
}

void mana_pcoll_made(MPI_Request v, mana_pcoll_replay_fn *replay, const struct mana_pcoll_arg *args,
                     int nargs)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)v);
  struct pcoll_rec *r = s ? calloc(1, sizeof(*r) + (size_t)nargs * sizeof(*args)) : NULL;
  if (!r)
    return; /* refused at checkpoint: no record */
  r->replay = replay;
  r->seq = ++made_seq;
  r->nargs = nargs;
  memcpy(r->args, args, (size_t)nargs * sizeof(*args));
  for (int i = 0; i < nargs; i++)
    if (keep(r, &r->args[i]) != 0)
      r->incomplete = 1;
  r->ordinal = mana_comm_next_index(&made_per_comm, r->cc_id);
  if (r->ordinal == UINT64_MAX || !r->cc_id)
    r->incomplete = 1;
  else
    r->start_id = cc_id_mix(cc_id_mix(r->cc_id, r->ordinal), PCOLL_START_SALT);
  s->meta = r;
  s->flags |= MANA_SLOT_PERSISTENT;
}

/* The initialization returned (the generated wrapper; request is MPI_REQUEST_NULL if it
 * failed): the request's clock id is registered before the rank can look done (a member may
 * already have started it). */
void mana_pcoll_init_leave(MPI_Request request)
{
  struct mana_slot *s =
      request != MPI_REQUEST_NULL ? mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)request) : NULL;
  const struct pcoll_rec *r = s ? s->meta : NULL;
  mana_cc_leave_made_id(MANA_CC_CONSTRUCTOR, r ? r->start_id : 0);
}

void mana_pcoll_release(struct mana_slot *s)
{
  struct pcoll_rec *r = s->meta;
  for (int i = 0; i < r->nargs; i++) {
    struct mana_pcoll_arg *a = &r->args[i];
    if (a->kind == MANA_PA_DATATYPE)
      mana_dt_arg_put(&a->type);
    if (a->kind == MANA_PA_DATATYPES && a->kept)
      for (size_t k = 0; k < a->n; k++)
        mana_dt_arg_put(&((struct mana_dt_arg *)a->kept)[k]);
    if (a->kind == MANA_PA_INFO && a->kept)
      mana_kvlist_free(a->kept);
    free(a->kept);
  }
  free(r);
}

/* ---- the clock ---- */

int mana_pcoll_start(MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  const struct pcoll_rec *r = s ? s->meta : NULL;
  mana_cc_enter_id(r ? r->start_id : 0, 0);
  /* After the entry: a thread held there across a restart starts the request made again. */
  MPI_Request real = (MPI_Request)(uint32_t)mana_handle_real(MANA_KIND_REQUEST, (uint32_t)*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Start, &real);
  if (rc == MPI_SUCCESS && (s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request)))
    s->flags |= MANA_SLOT_ACTIVE;
  if (rc != MPI_SUCCESS)
    mana_cc_failed(rc);
  mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);
  MANA_PARK_CHECK();
  return rc;
}

int mana_pcoll_free(MPI_Request *request, int (*free_fn)(MPI_Request *))
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  const struct pcoll_rec *r = s ? s->meta : NULL;
  uint64_t start_id = r ? r->start_id : 0;
  mana_cc_enter_id(r ? r->cc_id : 0, 0);
  int rc = free_fn(request);
  mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);
  /* Every member's starts of the request come before its free, which the communicator
   * counts: a safe point reached later has them all, whatever the request's own count says.
   * Kept, the groups of a program that makes a request per step would fill the tables. */
  if (rc == MPI_SUCCESS)
    mana_cc_forget_id(start_id);
  MANA_PARK_CHECK();
  return rc;
}

/* ---- checkpoint ---- */

static int comm_live(MPI_Comm v)
{
  return v == MPI_COMM_WORLD || v == MPI_COMM_SELF ||
         mana_handle_slot(MANA_KIND_COMM, (uint32_t)v) != NULL;
}

static int op_live(MPI_Op v)
{
  return !mana_handle_is_virtual((uint32_t)v, MANA_KIND_OP) ||
         mana_handle_slot(MANA_KIND_OP, (uint32_t)v) != NULL;
}

const char *mana_pcoll_refusal(const struct mana_slot *s)
{
  const struct pcoll_rec *r = s->meta;
  if (!r || r->incomplete)
    return "no complete record of the persistent collective request";
  if (!comm_live(r->comm))
    return "the communicator was freed under the persistent collective request";
  for (int i = 0; i < r->nargs; i++) {
    const struct mana_pcoll_arg *a = &r->args[i];
    if (a->kind == MANA_PA_DATATYPE && !mana_dt_arg_ok(&a->type))
      return "no usable datatype record for the persistent collective request";
    if (a->kind == MANA_PA_DATATYPES)
      for (size_t k = 0; k < a->n; k++)
        if (!mana_dt_arg_ok(&((const struct mana_dt_arg *)a->kept)[k]))
          return "no usable datatype record for the persistent collective request";
    if (a->kind == MANA_PA_OP && !op_live((MPI_Op)(uint32_t)a->value))
      return "the operation was freed under the persistent collective request";
  }
  return NULL;
}

/* Each member of a request's communicator adds a hash of (request, its world rank); the
 * member with the lowest world rank (either side of an intercommunicator) adds what all of
 * them should add.  Requests whose communicator is gone are left out: they are refused. */
void mana_pcoll_agreement(uint64_t sums[2])
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  sums[0] = sums[1] = 0;
  for (uint32_t i = 0; i < t->capacity; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    const struct pcoll_rec *r = s->meta;
    int n[2];
    const int *members[2];
    if (!(s->flags & MANA_SLOT_USED) || !(s->flags & MANA_SLOT_REQ_PCOLL) || !r ||
        mana_comm_world_members(r->comm, &n[0], &members[0], &n[1], &members[1]) != 0)
      continue;
    uint64_t key = cc_id_mix(r->cc_id, r->ordinal);
    int lowest = -1;
    for (int side = 0; side < 2; side++)
      for (int k = 0; k < n[side]; k++)
        if (lowest < 0 || members[side][k] < lowest)
          lowest = members[side][k];
    sums[0] += cc_id_mix(key, (uint64_t)mana_p2p_my_world_rank);
    if (lowest == mana_p2p_my_world_rank)
      for (int side = 0; side < 2; side++)
        for (int k = 0; k < n[side]; k++)
          sums[1] += cc_id_mix(key, (uint64_t)members[side][k]);
  }
}

/* ---- restart ---- */

struct made {
  uint64_t seq;
  uint32_t slot;
};

static int by_seq(const void *a, const void *b)
{
  const struct made *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int agree(void)
{
  uint64_t sums[2];
  mana_pcoll_agreement(sums);
  int rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM,
                               MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("persistent collective requests", 0, "MPI_Allreduce (agreement)", rc);
  if (sums[0] == sums[1])
    return MPI_SUCCESS;
  fprintf(stderr, "mana: rebuilding MPI objects: the ranks do not hold the same persistent "
                  "collective requests (one was freed by some members only)\n");
  return MPI_ERR_REQUEST;
}

/* The arguments as the new MPI knows them; what was made for the call is freed after it. */
static int resolve(struct pcoll_rec *r)
{
  for (int i = 0; i < r->nargs; i++) {
    struct mana_pcoll_arg *a = &r->args[i];
    switch (a->kind) {
    case MANA_PA_DATATYPE:
      a->real = (uint32_t)mana_dt_arg_real(&a->type);
      break;
    case MANA_PA_DATATYPES: {
      MPI_Datatype *real = calloc(a->n ? a->n : 1, sizeof(*real));
      if (!real)
        return MPI_ERR_NO_MEM;
      for (size_t k = 0; k < a->n; k++)
        real[k] = mana_dt_arg_real(&((struct mana_dt_arg *)a->kept)[k]);
      a->real = a->value ? (uint64_t)(uintptr_t)real : 0;
      if (!a->value)
        free(real);
      break;
    }
    case MANA_PA_OP:
      a->real = (uint32_t)MANA_REAL(OP, MPI_Op, a->value);
      break;
    case MANA_PA_COMM:
      a->real = (uint32_t)MANA_REAL(COMM, MPI_Comm, a->value);
      break;
    case MANA_PA_INFO: {
      MPI_Info info = MPI_INFO_NULL;
      int rc = a->kept && ((struct mana_kvlist *)a->kept)->n > 0
                   ? mana_kvlist_to_real(a->kept, &info)
                   : MPI_SUCCESS;
      if (rc != MPI_SUCCESS)
        return rc;
      a->real = (uint32_t)info;
      break;
    }
    case MANA_PA_ARRAY:
      a->real = a->kept ? (uint64_t)(uintptr_t)a->kept : a->value;
      break;
    default:
      a->real = a->value;
    }
  }
  return MPI_SUCCESS;
}

static void unresolve(struct pcoll_rec *r)
{
  for (int i = 0; i < r->nargs; i++) {
    struct mana_pcoll_arg *a = &r->args[i];
    if (a->kind == MANA_PA_DATATYPES && a->value)
      free((void *)(uintptr_t)a->real);
    if (a->kind == MANA_PA_INFO && (MPI_Info)(uint32_t)a->real != MPI_INFO_NULL) {
      MPI_Info info = (MPI_Info)(uint32_t)a->real;
      MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
    }
    a->real = 0;
  }
}

int mana_pcoll_rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  struct made *made = calloc(t->in_use ? t->in_use : 1, sizeof(*made));
  size_t n = 0;
  if (!made)
    return mana_rebuild_error("persistent collective requests", 0, "allocating their list",
                              MPI_ERR_NO_MEM);
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct pcoll_rec *r = s->meta;
    if ((s->flags & MANA_SLOT_USED) && (s->flags & MANA_SLOT_REQ_PCOLL) && r)
      made[n++] = (struct made){r->seq, i};
  }
  qsort(made, n, sizeof(*made), by_seq);
  int rc = agree();
  for (size_t k = 0; k < n && rc == MPI_SUCCESS; k++) {
    struct mana_slot *s = mana_slot_at(t, made[k].slot);
    struct pcoll_rec *r = s->meta;
    MPI_Request real = MPI_REQUEST_NULL;
    rc = resolve(r);
    if (rc == MPI_SUCCESS)
      rc = r->replay(r->args, &real);
    unresolve(r);
    if (rc != MPI_SUCCESS)
      rc = mana_rebuild_error("persistent collective request",
                              mana_handle_make(MANA_KIND_REQUEST, made[k].slot),
                              "its initialization", rc);
    else
      s->real = (uint32_t)real;
  }
  free(made);
  return rc;
}
