/* User error handlers for communicators, windows, files and sessions.  MPICH invokes them from
 * the lower half with the real object handle; the trampoline switches to the application's
 * thread pointer and passes the handle the application holds.
 *
 * For restart, an error handler is its trampoline: the slot's aux names it, and making the
 * handler again is registering the same trampoline for the same kind of object.  Error classes,
 * codes and strings the application added are replayed in order, so they keep their numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "records.h"
#include "stub_hooks.h"
#include "trampoline_pool.h"
#include "u64map.h"

enum eh_kind { EH_COMM, EH_WIN, EH_FILE, EH_SESSION };

/* The C++ binding's dispatcher (MPII_Errhandler_set_cxx): kind 0 comm, 1 file, 2 win. */
typedef void(cxx_eh_dispatch)(int kind, int *handle, int *code, void (*fn)(void));

struct eh_record {
  cxx_eh_dispatch *cxx;
  void (*fn)(void *, int *, ...);
  enum eh_kind kind;
  /* During a rebuild: one real handler for the objects that use this function, that of a
   * handle the application holds (borrowed) when there is one. */
  MPI_Errhandler rebuilt;
  uint32_t rebuilt_epoch;
  int borrowed;
};
static struct eh_record handlers[MANA_POOL_SIZE];

/* Real handle to trampoline index + 1, for handlers MPI reports (MPI_Comm_get_errhandler, a
 * new communicator's inherited handler).  Every user handler is made by CREATE below, so the
 * newest entry for a real handle is the live object that has it. */
static struct mana_u64map by_real;

static void run(int i, void *obj, int *code)
{
  static const enum mana_kind kinds[] = {MANA_KIND_COMM, MANA_KIND_WIN, MANA_KIND_FILE,
                                         MANA_KIND_SESSION};
  static const int cxx_kind[] = {0, 2, 1, 0};
  uint64_t saved = mana_callback_enter();
  struct eh_record *r = &handlers[i];
  /* The handle the application knows, in the representation of its C type. */
  MPI_File vfile = NULL;
  int vint = 0;
  void *vobj;
  if (r->kind == EH_FILE) {
    uint64_t real = (uint64_t)(uintptr_t) * (MPI_File *)obj;
    vfile = (MPI_File)(uintptr_t)mana_handle_virtual_of(MANA_KIND_FILE, real);
    vobj = &vfile;
  } else {
    vint = (int)mana_handle_virtual_of(kinds[r->kind], (uint32_t) * (int *)obj);
    /* Natively MPI_COMM_WORLD's handler, called with it (comm.c, mana_comm_follows_world). */
    if (r->kind == EH_COMM && mana_comm_follows_world((MPI_Comm)vint))
      vint = (int)MPI_COMM_WORLD;
    vobj = &vint;
  }
  if (r->cxx)
    r->cxx(cxx_kind[r->kind], vobj, code, (void (*)(void))(void *)r->fn);
  else
    r->fn(vobj, code);
  mana_callback_leave(saved);
}

#define TRAMP(i)                                   \
  static void tramp_##i(void *obj, int *code, ...) \
  {                                                \
    run(0##i, obj, code); /* octal: 000 .. 077 */  \
  }
MANA_POOL_64(TRAMP)
typedef void (*eh_tramp)(void *, int *, ...);
static const eh_tramp tramps[] = {MANA_POOL_64(MANA_POOL_ENTRY)};

/* A trampoline stays bound to its function for the life of the process: MPI objects keep
 * using an error handler after the application frees its handle, so a slot is never recycled;
 * a function registered again reuses its slot. */
static int record_for(void *fn, enum eh_kind kind)
{
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (handlers[i].fn == (void (*)(void *, int *, ...))fn && handlers[i].kind == kind)
      return i;
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (!handlers[i].fn)
      return i;
  fprintf(stderr, "mana: more than %d distinct user error handler functions are not supported\n",
          MANA_POOL_SIZE);
  return -1;
}

static void keep(int i, void *fn, enum eh_kind kind, MPI_Errhandler real, MPI_Errhandler *out)
{
  handlers[i].fn = (void (*)(void *, int *, ...))fn;
  handlers[i].kind = kind;
  mana_u64map_put(&by_real, (uint32_t)real, (uint64_t)i + 1, NULL);
  *out = MANA_NEW(ERRHANDLER, MPI_Errhandler, real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)*out);
  if (s)
    s->aux = (uint64_t)i + 1; /* which trampoline, for MPII_Errhandler_set_cxx */
}

#define CREATE(name, fn_t, kind)                                          \
  int name(fn_t *user_fn, MPI_Errhandler *errhandler)                     \
  {                                                                       \
    int i = record_for((void *)user_fn, kind);                            \
    if (i < 0)                                                            \
      return MPI_ERR_INTERN;                                              \
    MPI_Errhandler real;                                                  \
    int rc = MANA_LH_CALL_NOPARK(name, (fn_t *)(void *)tramps[i], &real); \
    if (rc == MPI_SUCCESS)                                                \
      keep(i, (void *)user_fn, kind, real, errhandler);                   \
    MANA_PARK_CHECK(); /* once the handle is recorded */                  \
    return rc;                                                            \
  }
CREATE(MPI_Comm_create_errhandler, MPI_Comm_errhandler_function, EH_COMM)
CREATE(MPI_Errhandler_create, MPI_Comm_errhandler_function, EH_COMM)
CREATE(MPI_Win_create_errhandler, MPI_Win_errhandler_function, EH_WIN)
CREATE(MPI_File_create_errhandler, MPI_File_errhandler_function, EH_FILE)
CREATE(MPI_Session_create_errhandler, MPI_Session_errhandler_function, EH_SESSION)

/* MPICH treats a C++ handler apart: a call whose error it handled returns MPI_SUCCESS (the C++
 * binding throws, or not, from the handler), where a C handler's call returns the error, and
 * the binding then calls the handler again through MPI_Comm_call_errhandler (MPICH's
 * errors/cxx/errhan/errsetx counted two calls).  So the real handler is marked C++ too, with
 * this dispatcher, which MPICH calls on the lower half's thread pointer with the real handle,
 * the code and the trampoline: the trampoline switches to the application and calls the
 * binding's own dispatcher (run). */
static void cxx_shim(int kind, int *handle, int *code, void (*fn)(void))
{
  (void)kind;
  ((eh_tramp)(void *)fn)(handle, code);
}

static void mark_cxx(int i, MPI_Errhandler real)
{
  if (handlers[i].cxx)
    MANA_LH_SVC_VOID_NOPARK(errhandler_set_cxx, real, (void (*)(void))cxx_shim);
}

/* The application's dispatcher is kept on the stub's side (run calls it). */
void MPII_Errhandler_set_cxx(MPI_Errhandler errhandler, void (*dispatch)(void));
void MPII_Errhandler_set_cxx(MPI_Errhandler errhandler, void (*dispatch)(void))
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)errhandler);
  if (!s || !s->aux)
    return;
  handlers[s->aux - 1].cxx = (cxx_eh_dispatch *)(void *)dispatch;
  mark_cxx((int)s->aux - 1, (MPI_Errhandler)s->real);
}

/* ---- records ---- */

void mana_errhandler_created(MPI_Errhandler v, MPI_Errhandler parent)
{
  (void)parent;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)v);
  uint64_t index_1 = 0;
  if (s && mana_u64map_get(&by_real, (uint32_t)s->real, &index_1))
    s->aux = index_1;
}

void mana_eh_ref_of_virtual(MPI_Errhandler v, struct mana_eh_ref *ref)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)v);
  ref->predefined = s ? MPI_ERRHANDLER_NULL : v;
  ref->index = s && s->aux ? (int)s->aux - 1 : -1;
}

void mana_eh_ref_of_real(MPI_Errhandler real, struct mana_eh_ref *ref)
{
  uint64_t index_1 = 0;
  ref->predefined = mana_real_is_created((uint32_t)real) ? MPI_ERRHANDLER_NULL : real;
  ref->index =
      ref->predefined == MPI_ERRHANDLER_NULL && mana_u64map_get(&by_real, (uint32_t)real, &index_1)
          ? (int)index_1 - 1
          : -1;
}

static int create_real(int i, MPI_Errhandler *out)
{
  void *t = (void *)tramps[i];
  int rc;
  switch (handlers[i].kind) {
  case EH_COMM:
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_create_errhandler, (MPI_Comm_errhandler_function *)t, out);
    break;
  case EH_WIN:
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create_errhandler, (MPI_Win_errhandler_function *)t, out);
    break;
  case EH_FILE:
    rc = MANA_LH_CALL_NOPARK(MPI_File_create_errhandler, (MPI_File_errhandler_function *)t, out);
    break;
  default:
    rc = MANA_LH_CALL_NOPARK(MPI_Session_create_errhandler, (MPI_Session_errhandler_function *)t,
                             out);
  }
  if (rc == MPI_SUCCESS)
    mark_cxx(i, *out);
  return rc;
}

/* The real handler the rebuild made for a live handle of function i, or MPI_ERRHANDLER_NULL. */
static MPI_Errhandler held_real(int i)
{
  struct mana_table *t = &mana_tables[MANA_KIND_ERRHANDLER];
  for (uint32_t k = 0; k < t->capacity; k++) {
    const struct mana_slot *s = mana_slot_at(t, k);
    if ((s->flags & MANA_SLOT_USED) && s->aux == (uint64_t)i + 1)
      return (MPI_Errhandler)s->real;
  }
  return MPI_ERRHANDLER_NULL;
}

/* The objects are rebuilt after the handles (restart_hook.c), so a communicator whose handler
 * the application still holds gets that very object back, and MPI_Comm_get_errhandler answers
 * with the handle the application holds, as it did before the checkpoint. */
MPI_Errhandler mana_eh_ref_real(const struct mana_eh_ref *ref)
{
  if (ref->index < 0)
    return ref->predefined;
  struct eh_record *h = &handlers[ref->index];
  if (h->rebuilt_epoch != mana_rebuild_epoch) {
    h->rebuilt = held_real(ref->index);
    h->borrowed = h->rebuilt != MPI_ERRHANDLER_NULL;
    if (!h->borrowed && create_real(ref->index, &h->rebuilt) != MPI_SUCCESS)
      return MPI_ERRHANDLER_NULL;
    h->rebuilt_epoch = mana_rebuild_epoch;
    mana_u64map_put(&by_real, (uint32_t)h->rebuilt, (uint64_t)ref->index + 1, NULL);
  }
  return h->rebuilt;
}

/* ---- error classes, codes and strings ---- */

enum { ADDED_CLASS, ADDED_CODE };
struct added_error {
  int what, errorclass, value;
};
struct error_list {
  struct added_error *e;
  int n, cap;
};
/* What the application added and has not deleted, in the order it added them; and what it
 * deleted that MPI has not handed out again, oldest first: MPICH hands deleted numbers out
 * again first in, first out, before new ones. */
static struct error_list added, freed;
static struct mana_kvlist error_strings; /* code (decimal) -> string, newest per code */
static int errors_lost;                  /* a record could not be kept: do not replay */

/* Where a number comes in a new MPI's sequence: class numbers one after another, code numbers
 * by an index above the class bits (MPICH 4.0.2: bits 8 and up), whatever their class. */
static int seq_of(int what, int value)
{
  return what == ADDED_CLASS ? value : (value & 0x3fffffff) >> 8;
}

static void list_push(struct error_list *l, struct added_error e)
{
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    struct added_error *a = realloc(l->e, (size_t)cap * sizeof(*a));
    if (!a) {
      errors_lost = 1;
      return;
    }
    l->e = a;
    l->cap = cap;
  }
  l->e[l->n++] = e;
}

/* Removes the newest entry for (what, value); 1 if there was one. */
static int list_remove(struct error_list *l, int what, int value)
{
  for (int i = l->n; i-- > 0;)
    if (l->e[i].what == what && l->e[i].value == value) {
      memmove(&l->e[i], &l->e[i + 1], (size_t)(l->n - i - 1) * sizeof(*l->e));
      l->n--;
      return 1;
    }
  return 0;
}

static void add_error(int what, int errorclass, int value)
{
  for (int i = 0; i < freed.n; i++) /* a deleted number handed out again, maybe in a new class */
    if (freed.e[i].what == what && seq_of(what, freed.e[i].value) == seq_of(what, value)) {
      list_remove(&freed, what, freed.e[i].value);
      break;
    }
  list_push(&added, (struct added_error){what, errorclass, value});
}

void mana_after_Add_error_class(int *errorclass)
{
  add_error(ADDED_CLASS, 0, *errorclass);
}

void mana_after_Add_error_code(int errorclass, int *errorcode)
{
  add_error(ADDED_CODE, errorclass, *errorcode);
}

void mana_after_Add_error_string(int errorcode, const char *string)
{
  char code[16];
  snprintf(code, sizeof(code), "%d", errorcode);
  if (mana_kvlist_set(&error_strings, code, string) != 0)
    errors_lost = 1;
}

/* A deleted class or code is no longer added at restart; MPICH hands its number out again. */
static void forget_error(int what, int value)
{
  for (int i = added.n; i-- > 0;)
    if (added.e[i].what == what && added.e[i].value == value) {
      list_push(&freed, added.e[i]);
      list_remove(&added, what, value);
      return;
    }
}

void mana_after_Delete_error_class(int errorclass)
{
  forget_error(ADDED_CLASS, errorclass);
}

void mana_after_Delete_error_code(int errorcode)
{
  forget_error(ADDED_CODE, errorcode);
}

void mana_after_Delete_error_string(int errorcode)
{
  char code[16];
  snprintf(code, sizeof(code), "%d", errorcode);
  mana_kvlist_delete(&error_strings, code);
}

/* A new MPI hands out numbers in sequence (seq_of).  The replay adds, in that order,
 * every number still in use and every deleted one not handed out again; a deleted one is taken
 * by a stand-in (a code under MPI_ERR_OTHER), and the stand-ins are deleted in the order the
 * application deleted them.  Every number in use comes back, and MPI hands out the same
 * numbers next as it would have (MPICH's errhan/adderr is checkpointed inside its loop of
 * additions and deletions). */
struct replayed {
  struct added_error e;
  int live, got, order; /* order: position among the deleted ones */
};

static int replay_order(const void *a_, const void *b_)
{
  const struct replayed *a = a_, *b = b_;
  if (a->e.what != b->e.what)
    return a->e.what - b->e.what; /* classes first: codes belong to them */
  int sa = seq_of(a->e.what, a->e.value), sb = seq_of(b->e.what, b->e.value);
  return (sa > sb) - (sa < sb);
}

static int add_one(int what, int errorclass, int *got)
{
  return what == ADDED_CLASS ? MANA_LH_CALL_NOPARK(MPI_Add_error_class, got)
                             : MANA_LH_CALL_NOPARK(MPI_Add_error_code, errorclass, got);
}

static void delete_one(int what, int value)
{
  if (what == ADDED_CODE)
    MANA_LH_CALL_NOPARK(MPIX_Delete_error_code, value);
  else
    MANA_LH_CALL_NOPARK(MPIX_Delete_error_class, value);
}

static int replay_numbers(struct replayed *r, int n)
{
  for (int i = 0; i < n; i++) {
    int cls = r[i].live ? r[i].e.errorclass : MPI_ERR_OTHER, got = -1, rc;
    if ((rc = add_one(r[i].e.what, cls, &got)) != MPI_SUCCESS)
      return mana_rebuild_error("error class/code", (uint32_t)r[i].e.value,
                                "MPI_Add_error_class/code", rc);
    r[i].got = got;
    if (seq_of(r[i].e.what, got) != seq_of(r[i].e.what, r[i].e.value)) {
      fprintf(stderr, "mana: rebuilding MPI objects: error %s %d came back as %d\n",
              r[i].e.what == ADDED_CLASS ? "class" : "code", r[i].e.value, got);
      return MPI_ERR_INTERN;
    }
  }
  return MPI_SUCCESS;
}

static int replay_errors(void)
{
  int n = added.n + freed.n, rc;
  struct replayed *r = malloc((size_t)(n ? n : 1) * sizeof(*r));
  if (!r)
    return mana_rebuild_error("error classes and codes", 0, "allocating their list",
                              MPI_ERR_NO_MEM);
  for (int i = 0; i < added.n; i++)
    r[i] = (struct replayed){added.e[i], 1, -1, -1};
  for (int i = 0; i < freed.n; i++)
    r[added.n + i] = (struct replayed){freed.e[i], 0, -1, i};
  qsort(r, (size_t)n, sizeof(*r), replay_order);
  rc = replay_numbers(r, n);
  /* the stand-ins go, codes before classes, each kind in the application's order */
  for (int what = ADDED_CODE; what >= ADDED_CLASS; what--)
    for (int k = 0; k < freed.n; k++)
      for (int i = 0; i < n; i++)
        if (!r[i].live && r[i].order == k && r[i].e.what == what && r[i].got != -1)
          delete_one(what, r[i].got);
  free(r);
  if (rc != MPI_SUCCESS)
    return rc;
  for (int i = 0; i < error_strings.n; i++) {
    int code = atoi(error_strings.kv[i].key);
    rc = MANA_LH_CALL_NOPARK(MPI_Add_error_string, code, error_strings.kv[i].value);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("error string of code", (uint32_t)code, "MPI_Add_error_string", rc);
  }
  return MPI_SUCCESS;
}

/* The rebuild-in-place test mode frees MPI's objects, not its error classes and codes: they
 * are not objects behind handles, and a running MPI would hand deleted numbers out again in
 * its own order, not a new MPI's.  They stay, and are not replayed. */
static int errors_in_mpi;

/* ---- restart ---- */

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_ERRHANDLER];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->aux) {
      mana_reason(reason, len, "no record of", "error handler",
                  mana_handle_make(MANA_KIND_ERRHANDLER, i));
      return 0;
    }
  }
  if (errors_lost) {
    mana_reason(reason, len, "lost track of the error classes added:", "out of memory", 0);
    return 0;
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_ERRHANDLER];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Errhandler real = (MPI_Errhandler)s->real;
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real))
      MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &real);
  }
  errors_in_mpi = 1;
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  mana_u64map_free(&by_real); /* the old real handles mean nothing now */
  struct mana_table *t = &mana_tables[MANA_KIND_ERRHANDLER];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED) || !s->aux)
      continue;
    MPI_Errhandler real;
    int rc = create_real((int)s->aux - 1, &real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("error handler", mana_handle_make(MANA_KIND_ERRHANDLER, i),
                                "MPI_*_create_errhandler", rc);
    s->real = (uint32_t)real;
    mana_u64map_put(&by_real, (uint32_t)real, s->aux, NULL);
  }
  if (errors_in_mpi) {
    errors_in_mpi = 0;
    return MPI_SUCCESS;
  }
  return replay_errors();
}

/* The handlers made for communicators only: the communicators keep them alive.  A borrowed
 * one is the application's. */
static void finish(void)
{
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (handlers[i].rebuilt_epoch == mana_rebuild_epoch &&
        handlers[i].rebuilt != MPI_ERRHANDLER_NULL) {
      if (!handlers[i].borrowed)
        MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &handlers[i].rebuilt);
      handlers[i].rebuilt = MPI_ERRHANDLER_NULL;
    }
}

const struct mana_kind_ops mana_errhandler_ops = {
    .name = "error handler",
    .kind = MANA_KIND_ERRHANDLER,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
    .finish = finish,
};
