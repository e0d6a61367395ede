/* Attribute keyvals and their copy/delete callbacks.  MPI passes the keyval's extra_state to
 * both callbacks, so one trampoline pair serves every keyval: mana registers its own record as
 * the extra_state, and the trampolines switch to the application's thread pointer and call the
 * application's functions with the handles and extra_state it knows.  The Fortran binding
 * installs "proxies" that adapt the calling convention (MPII_Keyval_set_proxy); those are
 * application-side code too and get the same treatment.
 *
 * For restart a keyval is its record (the slot's meta): making it again is registering the
 * same trampolines with the same record.  Records live as long as the process, so attributes
 * can name their keyval even after the application frees it.
 *
 * A freed keyval stays valid in MPI for as long as attributes use it: its delete callback
 * still runs, the callbacks receive it and may use it (free it again, even), and MPICH
 * ignores every free after the first.  Its virtual handle therefore stays mapped after
 * MPI_*_free_keyval; the slot is given up only when MPICH hands the real keyval out again for
 * a new one (it no longer exists then, and a stale handle would name the new keyval in a
 * native run too). */
#include <stdio.h>

#include "records.h"

typedef int mana_attr_type; /* MPICH's MPIR_Attr_type enum */
typedef int(copy_proxy_fn)(MPI_Comm_copy_attr_function *user_function, int handle, int keyval,
                           void *extra_state, mana_attr_type attrib_type, void *attrib,
                           void **attrib_copy, int *flag);
typedef int(delete_proxy_fn)(MPI_Comm_delete_attr_function *user_function, int handle, int keyval,
                             mana_attr_type attrib_type, void *attrib, void *extra_state);

struct keyval_record {
  enum mana_kind object_kind; /* communicator, datatype or window */
  MPI_Comm_copy_attr_function *copy;
  MPI_Comm_delete_attr_function *del;
  void *extra_state;
  int virt_keyval;
  copy_proxy_fn *copy_proxy;
  delete_proxy_fn *delete_proxy;
  int legacy; /* made by MPI_Keyval_create */
  int live;   /* the application has not freed its handle */
  int real;   /* the real keyval now */
  uint32_t rebuilt_epoch;
  struct keyval_record *next; /* every record ever made */
};
static struct keyval_record *all_records;

static int virtual_object(struct keyval_record *r, int real)
{
  return (int)mana_handle_virtual_of(r->object_kind, (uint32_t)real);
}

/* While mana rebuilds objects, attribute callbacks are its own doing (freeing the old objects
 * in the test mode, setting values again): the application never sees them. */
static int copy_tramp(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)keyval;
  struct keyval_record *r = extra;
  if (mana_rebuilding) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  uint64_t saved = mana_callback_enter();
  int rc = r->copy(virtual_object(r, old), r->virt_keyval, r->extra_state, in, out, flag);
  mana_callback_leave(saved);
  return rc;
}

static int delete_tramp(MPI_Comm comm, int keyval, void *value, void *extra)
{
  (void)keyval;
  struct keyval_record *r = extra;
  if (mana_rebuilding)
    return MPI_SUCCESS;
  uint64_t saved = mana_callback_enter();
  int rc = r->del(virtual_object(r, comm), r->virt_keyval, value, r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

static int copy_proxy_tramp(MPI_Comm_copy_attr_function *fn, int handle, int keyval, void *extra,
                            mana_attr_type type, void *attrib, void **copy, int *flag)
{
  (void)fn;
  (void)keyval;
  struct keyval_record *r = extra;
  if (mana_rebuilding) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  uint64_t saved = mana_callback_enter();
  int rc = r->copy_proxy(r->copy, virtual_object(r, handle), r->virt_keyval, r->extra_state, type,
                         attrib, copy, flag);
  mana_callback_leave(saved);
  return rc;
}

static int delete_proxy_tramp(MPI_Comm_delete_attr_function *fn, int handle, int keyval,
                              mana_attr_type type, void *attrib, void *extra)
{
  (void)fn;
  (void)keyval;
  struct keyval_record *r = extra;
  if (mana_rebuilding)
    return MPI_SUCCESS;
  uint64_t saved = mana_callback_enter();
  int rc = r->delete_proxy(r->del, virtual_object(r, handle), r->virt_keyval, type, attrib,
                           r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

typedef int(create_fn)(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *,
                       void *);

/* Registers the record's keyval with MPI: the trampolines stand for the application's
 * functions, the record for its extra_state. */
static int create_real(struct keyval_record *r, int *real)
{
  MPI_Comm_copy_attr_function *real_copy = r->copy ? copy_tramp : NULL;
  MPI_Comm_delete_attr_function *real_del = r->del ? delete_tramp : NULL;
  int rc;
  if (r->legacy)
    rc = MANA_LH_CALL_NOPARK(MPI_Keyval_create, real_copy, real_del, real, r);
  else if (r->object_kind == MANA_KIND_COMM)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_create_keyval, real_copy, real_del, real, r);
  else if (r->object_kind == MANA_KIND_DATATYPE)
    rc = MANA_LH_CALL_NOPARK(MPI_Type_create_keyval, (MPI_Type_copy_attr_function *)real_copy,
                             (MPI_Type_delete_attr_function *)real_del, real, r);
  else
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create_keyval, (MPI_Win_copy_attr_function *)real_copy,
                             (MPI_Win_delete_attr_function *)real_del, real, r);
  if (rc == MPI_SUCCESS && (r->copy_proxy || r->delete_proxy))
    MANA_LH_SVC_VOID_NOPARK(keyval_set_proxy, *real, (void *)copy_proxy_tramp,
                            (void *)delete_proxy_tramp);
  return rc;
}

/* MPICH puts the kind of object a keyval is for into bits 22-25 of its handle; the rest names
 * the keyval object itself. */
#define KEYVAL_OBJECT_KIND_BITS 0x03c00000u

static int same_keyval_object(int a, int b)
{
  return (((uint32_t)a ^ (uint32_t)b) & ~KEYVAL_OBJECT_KIND_BITS) == 0;
}

/* MPICH made a new keyval as `real`: a freed keyval that had it is gone, and its slot too. */
static void forget_reused(int real)
{
  struct mana_table *t = &mana_tables[MANA_KIND_KEYVAL];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct keyval_record *r = s->meta;
    if ((s->flags & MANA_SLOT_USED) && r && !r->live && same_keyval_object(r->real, real))
      mana_handle_retire(MANA_KIND_KEYVAL, mana_handle_make(MANA_KIND_KEYVAL, i));
  }
}

static int create(enum mana_kind object_kind, void *copy, void *del, int *keyval, void *extra,
                  int legacy)
{
  struct keyval_record *r = calloc(1, sizeof(*r));
  if (!r)
    return MPI_ERR_NO_MEM;
  r->object_kind = object_kind;
  r->copy = (MPI_Comm_copy_attr_function *)copy;
  r->del = (MPI_Comm_delete_attr_function *)del;
  r->extra_state = extra;
  r->legacy = legacy;
  int real = 0;
  int rc = create_real(r, &real);
  if (rc != MPI_SUCCESS) {
    free(r);
    return rc;
  }
  /* The record lives as long as the process: MPI may call the delete function after
   * MPI_*_free_keyval, for attributes still attached. */
  forget_reused(real);
  r->real = real;
  r->live = 1;
  r->next = all_records;
  all_records = r;
  r->virt_keyval = *keyval = (int)mana_new32(MANA_KIND_KEYVAL, (uint32_t)real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)*keyval);
  if (s)
    s->meta = r;
  return rc;
}

/* Parking waits until the new handle and its record exist (stub.h, MANA_LH_CALL_NOPARK). */
static int create_then_park(enum mana_kind object_kind, void *copy, void *del, int *keyval,
                            void *extra, int legacy)
{
  int rc = create(object_kind, copy, del, keyval, extra, legacy);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                           MPI_Comm_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create_then_park(MANA_KIND_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                      void *extra)
{
  return create_then_park(MANA_KIND_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra, 1);
}

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *copy_fn,
                           MPI_Type_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create_then_park(MANA_KIND_DATATYPE, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn,
                          MPI_Win_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create_then_park(MANA_KIND_WIN, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

static int free_real(enum mana_kind object_kind, int legacy, int *real)
{
  if (legacy)
    return MANA_LH_CALL_NOPARK(MPI_Keyval_free, real);
  if (object_kind == MANA_KIND_COMM)
    return MANA_LH_CALL_NOPARK(MPI_Comm_free_keyval, real);
  if (object_kind == MANA_KIND_DATATYPE)
    return MANA_LH_CALL_NOPARK(MPI_Type_free_keyval, real);
  return MANA_LH_CALL_NOPARK(MPI_Win_free_keyval, real);
}

/* The first free goes to MPI, which keeps the keyval while attributes use it; the handle stays
 * mapped (see the top of this file).  A later free of the same keyval does nothing in MPICH:
 * the stub does not ask MPI, whose keyval may be gone after a restart.  A handle that is not
 * a keyval of this kind goes to MPI as it is, for MPI's error. */
static int free_keyval(enum mana_kind object_kind, int legacy, int *keyval)
{
  struct mana_slot *s = keyval ? mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)*keyval) : NULL;
  struct keyval_record *r = s ? s->meta : NULL;
  if (r && !r->live && r->object_kind == object_kind) {
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
  }
  int real = keyval ? (int)mana_handle_real(MANA_KIND_KEYVAL, (uint32_t)*keyval) : 0;
  int rc = free_real(object_kind, legacy, keyval ? &real : NULL);
  if (rc == MPI_SUCCESS) {
    if (r)
      r->live = 0;
    *keyval = real;
  }
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Comm_free_keyval(int *keyval)
{
  return free_keyval(MANA_KIND_COMM, 0, keyval);
}

int MPI_Keyval_free(int *keyval)
{
  return free_keyval(MANA_KIND_COMM, 1, keyval);
}

int MPI_Type_free_keyval(int *keyval)
{
  return free_keyval(MANA_KIND_DATATYPE, 0, keyval);
}

int MPI_Win_free_keyval(int *keyval)
{
  return free_keyval(MANA_KIND_WIN, 0, keyval);
}

/* Called by the real libmpichfort (loaded in the upper half) right after it creates a keyval. */
void MPII_Keyval_set_proxy(int keyval, copy_proxy_fn *copy_proxy, delete_proxy_fn *delete_proxy)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)keyval);
  if (!s || !s->meta)
    return;
  struct keyval_record *r = s->meta;
  r->copy_proxy = copy_proxy;
  r->delete_proxy = delete_proxy;
  MANA_LH_SVC_VOID(keyval_set_proxy, (int)s->real, (void *)copy_proxy_tramp,
                   (void *)delete_proxy_tramp);
}

/* MPI_DUP_FN / MPI_COMM_DUP_FN etc. point here in the application's mpi.h. */
int MPIR_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in,
                void *attribute_val_out, int *flag)
{
  (void)oldcomm;
  (void)keyval;
  (void)extra_state;
  *(void **)attribute_val_out = attribute_val_in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* ---- restart ---- */

struct keyval_record *mana_keyval_record(int virt_keyval)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)virt_keyval);
  return s ? s->meta : NULL;
}

/* The slot of record r, if it still has one. */
static struct mana_slot *slot_of(struct keyval_record *r)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)r->virt_keyval);
  return s && s->meta == r ? s : NULL;
}

int mana_keyval_real(struct keyval_record *r)
{
  if (mana_rebuilding == MANA_REBUILD_MAKING && r->rebuilt_epoch != mana_rebuild_epoch) {
    /* Freed by the application, still named by attributes: made again for them alone (and
     * for the callbacks, which receive its handle). */
    if (create_real(r, &r->real) != MPI_SUCCESS)
      return -1;
    r->rebuilt_epoch = mana_rebuild_epoch;
    struct mana_slot *s = slot_of(r);
    if (s)
      s->real = (uint32_t)r->real;
  }
  return r->real;
}

/* The record outlives the handle (see create). */
static void release(struct mana_slot *s)
{
  ((struct keyval_record *)s->meta)->live = 0;
}

static int free_record_real(struct keyval_record *r)
{
  int real = r->real;
  return free_real(r->object_kind, r->legacy, &real);
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_KEYVAL];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->meta) {
      mana_reason(reason, len, "no record of", "keyval", mana_handle_make(MANA_KIND_KEYVAL, i));
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  for (struct keyval_record *r = all_records; r; r = r->next)
    if (r->live)
      free_record_real(r);
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_KEYVAL];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct keyval_record *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r || !r->live)
      continue; /* a freed one is made again only if attributes use it (mana_keyval_real) */
    int rc = create_real(r, &r->real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("keyval", mana_handle_make(MANA_KIND_KEYVAL, i),
                                "MPI_*_create_keyval", rc);
    r->rebuilt_epoch = mana_rebuild_epoch;
    s->real = (uint32_t)r->real;
  }
  return MPI_SUCCESS;
}

/* Keyvals made again only for attributes are freed as the application had freed them: MPI
 * keeps them for as long as the attributes exist.  Freed keyvals no attribute uses any more
 * do not exist in the new MPI: their handles stay, so freeing them again still does nothing,
 * but name no keyval. */
static void finish(void)
{
  for (struct keyval_record *r = all_records; r; r = r->next) {
    if (r->live)
      continue;
    struct mana_slot *s = slot_of(r);
    if (r->rebuilt_epoch == mana_rebuild_epoch) {
      free_record_real(r);
    } else if (s) {
      r->real = MPI_KEYVAL_INVALID;
      s->real = (uint32_t)MPI_KEYVAL_INVALID;
    }
  }
}

const struct mana_kind_ops mana_keyval_ops = {
    .name = "keyval",
    .kind = MANA_KIND_KEYVAL,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
    .finish = finish,
};
