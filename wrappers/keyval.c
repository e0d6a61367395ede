/* Attribute keyvals and their copy/delete callbacks.  MPI passes the keyval's extra_state to
 * both callbacks, so one trampoline pair serves every keyval: mana registers its own record as
 * the extra_state, and the trampolines switch to the application's thread pointer and call the
 * application's functions with the handles and extra_state it knows.  The Fortran binding
 * installs "proxies" that adapt the calling convention (MPII_Keyval_set_proxy); those are
 * application-side code too and get the same treatment. */
#include <stdio.h>

#include "stub.h"

typedef int mana_attr_type; /* MPICH's MPIR_Attr_type enum */
typedef int(copy_proxy_fn)(MPI_Comm_copy_attr_function *user_function, int handle, int keyval,
                           void *extra_state, mana_attr_type attrib_type, void *attrib,
                           void **attrib_copy, int *flag);
typedef int(delete_proxy_fn)(MPI_Comm_delete_attr_function *user_function, int handle,
                             int keyval, mana_attr_type attrib_type, void *attrib,
                             void *extra_state);

struct keyval_record {
  enum mana_kind object_kind; /* communicator, datatype or window */
  MPI_Comm_copy_attr_function *copy;
  MPI_Comm_delete_attr_function *del;
  void *extra_state;
  int virt_keyval;
  copy_proxy_fn *copy_proxy;
  delete_proxy_fn *delete_proxy;
};

static int virtual_object(struct keyval_record *r, int real)
{
  return (int)mana_handle_virtual_of(r->object_kind, (uint32_t)real);
}

static int copy_tramp(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)keyval;
  struct keyval_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->copy(virtual_object(r, old), r->virt_keyval, r->extra_state, in, out, flag);
  mana_callback_leave(saved);
  return rc;
}

static int delete_tramp(MPI_Comm comm, int keyval, void *value, void *extra)
{
  (void)keyval;
  struct keyval_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->del(virtual_object(r, comm), r->virt_keyval, value, r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

static int copy_proxy_tramp(MPI_Comm_copy_attr_function *fn, int handle, int keyval,
                            void *extra, mana_attr_type type, void *attrib, void **copy,
                            int *flag)
{
  (void)fn;
  (void)keyval;
  struct keyval_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->copy_proxy(r->copy, virtual_object(r, handle), r->virt_keyval, r->extra_state,
                         type, attrib, copy, flag);
  mana_callback_leave(saved);
  return rc;
}

static int delete_proxy_tramp(MPI_Comm_delete_attr_function *fn, int handle, int keyval,
                              mana_attr_type type, void *attrib, void *extra)
{
  (void)fn;
  (void)keyval;
  struct keyval_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->delete_proxy(r->del, virtual_object(r, handle), r->virt_keyval, type, attrib,
                           r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

typedef int(create_fn)(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *,
                       void *);

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
  MPI_Comm_copy_attr_function *real_copy = copy ? copy_tramp : NULL;
  MPI_Comm_delete_attr_function *real_del = del ? delete_tramp : NULL;
  int real = 0, rc;
  if (legacy)
    rc = MANA_LH_CALL(MPI_Keyval_create, real_copy, real_del, &real, r);
  else if (object_kind == MANA_KIND_COMM)
    rc = MANA_LH_CALL(MPI_Comm_create_keyval, real_copy, real_del, &real, r);
  else if (object_kind == MANA_KIND_DATATYPE)
    rc = MANA_LH_CALL(MPI_Type_create_keyval, (MPI_Type_copy_attr_function *)real_copy,
                      (MPI_Type_delete_attr_function *)real_del, &real, r);
  else
    rc = MANA_LH_CALL(MPI_Win_create_keyval, (MPI_Win_copy_attr_function *)real_copy,
                      (MPI_Win_delete_attr_function *)real_del, &real, r);
  if (rc != MPI_SUCCESS) {
    free(r);
    return rc;
  }
  /* The record lives as long as the process: MPI may call the delete function after
   * MPI_*_free_keyval, for attributes still attached. */
  r->virt_keyval = *keyval = (int)mana_new32(MANA_KIND_KEYVAL, (uint32_t)real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)*keyval);
  if (s)
    s->aux = (uint64_t)(uintptr_t)r;
  return rc;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                           MPI_Comm_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create(MANA_KIND_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                      void *extra)
{
  return create(MANA_KIND_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra, 1);
}

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *copy_fn,
                           MPI_Type_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create(MANA_KIND_DATATYPE, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn,
                          MPI_Win_delete_attr_function *delete_fn, int *keyval, void *extra)
{
  return create(MANA_KIND_WIN, (void *)copy_fn, (void *)delete_fn, keyval, extra, 0);
}

/* Called by the real libmpichfort (loaded in the upper half) right after it creates a keyval. */
void MPII_Keyval_set_proxy(int keyval, copy_proxy_fn *copy_proxy, delete_proxy_fn *delete_proxy)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_KEYVAL, (uint32_t)keyval);
  if (!s || !s->aux)
    return;
  struct keyval_record *r = (struct keyval_record *)(uintptr_t)s->aux;
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
