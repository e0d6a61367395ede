/* User-defined reduction operations.  MPICH runs them from inside the lower half; each user
 * function gets a trampoline that restores the application's thread pointer and shows the
 * function the datatype handle the application knows.  For restart an operation is its
 * trampoline and its commute flag (the slot's record): making it again is registering the
 * same trampoline. */
#include <stdio.h>

#include "records.h"
#include "trampoline_pool.h"

/* The C++ binding registers a dispatcher that calls the C++ function (MPII_Op_set_cxx).  MPICH
 * calls it with the count and the datatype by value, unlike a C user function. */
typedef void(cxx_op_dispatch)(const void *in, void *inout, int len, MPI_Datatype dt,
                              MPI_User_function *fn);

struct op_record {
  cxx_op_dispatch *cxx;
  MPI_User_function *fn;
  MPI_User_function_c *fn_c;
};
static struct op_record ops[MANA_POOL_SIZE];

/* What one operation handle is: the slot's meta. */
struct op_meta {
  int index; /* trampoline */
  int commute;
};

static void run(int i, void *in, void *inout, MPI_Count len, MPI_Datatype *dt)
{
  uint64_t saved = mana_callback_enter();
  MPI_Datatype v = (MPI_Datatype)mana_handle_virtual_of(MANA_KIND_DATATYPE, (uint32_t)*dt);
  if (ops[i].cxx) {
    ops[i].cxx(in, inout, (int)len, v, ops[i].fn);
  } else if (ops[i].fn_c) {
    ops[i].fn_c(in, inout, &len, &v);
  } else {
    int n = (int)len;
    ops[i].fn(in, inout, &n, &v);
  }
  mana_callback_leave(saved);
}

#define TRAMP(i)                                                                   \
  static void tramp_##i(void *in, void *inout, int *len, MPI_Datatype *dt)         \
  {                                                                                \
    run(0##i, /* 0##i is an octal literal: 000 .. 077 */ in, inout, *len, dt);     \
  }                                                                                \
  static void tramp_c_##i(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) \
  {                                                                                \
    run(0##i, /* 0##i is an octal literal: 000 .. 077 */ in, inout, *len, dt);     \
  }
MANA_POOL_64(TRAMP)
#define ENTRY_C(i) tramp_c_##i,
static MPI_User_function *const tramps[] = {MANA_POOL_64(MANA_POOL_ENTRY)};
static MPI_User_function_c *const tramps_c[] = {MANA_POOL_64(ENTRY_C)};

/* A trampoline stays bound to its function for the life of the process (a pending
 * non-blocking reduction may still use an operation the application has freed); registering
 * the same function again reuses its slot. */
static int record_for(MPI_User_function *fn, MPI_User_function_c *fn_c)
{
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if ((ops[i].fn || ops[i].fn_c) && ops[i].fn == fn && ops[i].fn_c == fn_c)
      return i;
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (!ops[i].fn && !ops[i].fn_c)
      return i;
  return -1;
}

static int create(MPI_User_function *fn, MPI_User_function_c *fn_c, int commute, MPI_Op *op)
{
  int i = record_for(fn, fn_c);
  if (i < 0) {
    fprintf(stderr, "mana: more than %d distinct user reduction functions are not supported\n",
            MANA_POOL_SIZE);
    return MPI_ERR_INTERN;
  }
  MPI_Op real;
  int rc = fn_c ? MANA_LH_CALL_NOPARK(MPI_Op_create_c, tramps_c[i], commute, &real)
                : MANA_LH_CALL_NOPARK(MPI_Op_create, tramps[i], commute, &real);
  if (rc != MPI_SUCCESS)
    return rc;
  ops[i].fn = fn;
  ops[i].fn_c = fn_c;
  *op = MANA_NEW(OP, MPI_Op, real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_OP, (uint32_t)*op);
  struct op_meta *m = s ? malloc(sizeof(*m)) : NULL;
  if (m) {
    *m = (struct op_meta){i, commute};
    s->meta = m;
  }
  return rc;
}

/* Parking waits until the new handle and its record exist (stub.h, MANA_LH_CALL_NOPARK). */
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
  int rc = create(user_fn, NULL, commute, op);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
  int rc = create(NULL, user_fn, commute, op);
  MANA_PARK_CHECK();
  return rc;
}

/* Kept on the stub's side: MPICH would call the dispatcher from the lower half. */
void MPII_Op_set_cxx(MPI_Op op, void (*dispatch)(void));
void MPII_Op_set_cxx(MPI_Op op, void (*dispatch)(void))
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_OP, (uint32_t)op);
  if (s && s->meta)
    ops[((struct op_meta *)s->meta)->index].cxx = (cxx_op_dispatch *)(void *)dispatch;
}

/* ---- restart ---- */

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_OP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->meta) {
      mana_reason(reason, len, "no record of", "operation", mana_handle_make(MANA_KIND_OP, i));
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_OP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Op real = (MPI_Op)s->real;
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real))
      MANA_LH_CALL_NOPARK(MPI_Op_free, &real);
  }
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_OP];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct op_meta *m = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !m)
      continue;
    MPI_Op real;
    int t = m->index; /* the trampoline */
    int rc = ops[t].fn_c ? MANA_LH_CALL_NOPARK(MPI_Op_create_c, tramps_c[t], m->commute, &real)
                         : MANA_LH_CALL_NOPARK(MPI_Op_create, tramps[t], m->commute, &real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("operation", mana_handle_make(MANA_KIND_OP, i), "MPI_Op_create",
                                rc);
    s->real = (uint32_t)real;
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_op_ops = {
    .name = "operation",
    .kind = MANA_KIND_OP,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
