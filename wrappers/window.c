/* RMA windows, for restart (see window.h for how the three window files divide the work).
 *
 * Every constructor (MPI_Win_create, _allocate, _allocate_shared, _create_dynamic and the _c
 * forms) is counted on the collective clock of the application's communicator as a blocking
 * constructor whose new communicator is the window's hidden one (split from the application's,
 * same members, same order): fences and MPI_Win_free count on that communicator's id, which a
 * member still inside the constructor knows only once it returns (protocol 1.7).
 *
 * Memory stays in the upper half: MPI_Win_allocate's comes from the stub's malloc and
 * MPI_Win_allocate_shared's from a shared file mapping (window_shm.c); the real window is made
 * with MPI_Win_create over it, so MPI_WIN_CREATE_FLAVOR is answered from the record (MPICH
 * 4.0.2 reports MPI_WIN_UNIFIED for every flavor and the same hints but alloc_shm, which the
 * stub passes on).  A dynamic window's attached regions are recorded in order.
 *
 * At restart the windows are made again in ascending (group id, creation index) of their
 * hidden communicators, after the communicators: the same argument as for communicators
 * (comm_order.h) makes the order agree across ranks and keeps the rebuild from deadlocking.
 * Then name, error handler, hints and attributes, the fence state, and finally the locks the
 * rank held (window_sync.c). */
#include <stdio.h>
#include <string.h>

#include "cc_algorithm.h"
#include "p2p.h"
#include "stub_hooks.h"
#include "window.h"

static struct win_rec *windows; /* sorted by (ggid, cindex) */

struct win_rec *mana_win_rec(MPI_Win v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_WIN, (uint32_t)v);
  return s ? s->meta : NULL;
}

struct win_rec *mana_win_first(void)
{
  return windows;
}

static int before(const struct win_rec *a, const struct win_rec *b)
{
  return a->ggid != b->ggid ? a->ggid < b->ggid : a->cindex < b->cindex;
}

static void list_insert(struct win_rec *r)
{
  struct win_rec **at = &windows;
  while (*at && before(*at, r))
    at = &(*at)->next;
  r->next = *at;
  *at = r;
}

static void list_remove(struct win_rec *r)
{
  for (struct win_rec **at = &windows; *at; at = &(*at)->next)
    if (*at == r) {
      *at = r->next;
      return;
    }
}

/* The collective clock's id of the window: its hidden communicator's (0: none, refused). */
uint64_t mana_win_cc_id(MPI_Win win);
uint64_t mana_comm_cc_id(MPI_Comm v);
uint64_t mana_win_cc_id(MPI_Win win)
{
  const struct win_rec *r = mana_win_rec(win);
  return r ? mana_comm_cc_id(r->comm) : 0;
}

/* ---- making windows ---- */

/* What the real MPI_Win_create gets: the application's hints, and for the flavors whose
 * memory MPICH would have allocated, alloc_shm=true as MPICH reports it for them. */
static int real_info(const struct win_rec *r, MPI_Info *out)
{
  struct mana_kvlist l = {0, 0, NULL};
  int rc = mana_kvlist_copy(&l, &r->create_info) == 0 ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  int has = 0;
  for (int i = 0; i < l.n; i++)
    has |= strcmp(l.kv[i].key, "alloc_shm") == 0;
  if (rc == MPI_SUCCESS && !has &&
      (r->flavor == MPI_WIN_FLAVOR_ALLOCATE || r->flavor == MPI_WIN_FLAVOR_SHARED) &&
      mana_kvlist_set(&l, "alloc_shm", "true") != 0)
    rc = MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS)
    rc = mana_kvlist_to_real(&l, out);
  mana_kvlist_free(&l);
  return rc;
}

/* The real window over the hidden communicator (real `c`), from the record. */
static int make_real(const struct win_rec *r, MPI_Comm c, MPI_Win *out)
{
  MPI_Info info = MPI_INFO_NULL;
  int rc = real_info(r, &info);
  if (rc != MPI_SUCCESS)
    return rc;
  if (r->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create_dynamic, info, c, out);
  } else if (r->shm) { /* displacements in bytes from a 16-byte boundary (window_shm.c) */
    void *base;
    MPI_Aint size;
    mana_win_shm_real_part(r, &base, &size);
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create, base, size, 1, info, c, out);
  } else if (r->large) {
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create_c, r->base, r->size, r->disp_unit, info, c, out);
  } else {
    rc = MANA_LH_CALL_NOPARK(MPI_Win_create, r->base, r->size, (int)r->disp_unit, info, c, out);
  }
  if (info != MPI_INFO_NULL)
    MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
  return rc;
}

static void free_rec(struct win_rec *r)
{
  mana_kvlist_free(&r->create_info);
  mana_kvlist_free(&r->later_info);
  mana_attr_free(&r->attrs);
  free(r->name);
  free(r->regions);
  free(r->locks);
  free(r->access);
  free(r->access_locked);
  free(r->expose);
  free(r->expose_done);
  if (r->shm) {
    free(r->shm->sizes);
    free(r->shm->disp_units);
    free(r->shm->offsets);
    free(r->shm);
  }
  free(r);
}

/* The hidden communicator: same members, same order, no attributes copied (a split calls no
 * copy callback of the application's). */
static int hidden_comm(MPI_Comm app, MPI_Comm *v)
{
  MPI_Comm real = MPI_COMM_NULL;
  int rank = 0;
  int rc = MANA_LH_CALL_NOPARK(MPI_Comm_rank, MANA_REAL(COMM, MPI_Comm, app), &rank);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_split, MANA_REAL(COMM, MPI_Comm, app), 0, rank, &real);
  if (rc != MPI_SUCCESS)
    return rc;
  *v = MANA_NEW(COMM, MPI_Comm, real);
  /* Named among the windows made on `app` (every member makes them in the same order, as the
   * constructors are collective on it), apart from app's own children. */
  mana_comm_created_in(*v, MPI_COMM_NULL, cc_id_mix(mana_comm_cc_id(app), 0x77696e646f77ull));
  return MPI_SUCCESS;
}

static void drop_hidden_comm(MPI_Comm v)
{
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, v);
  MANA_LH_CALL_NOPARK(MPI_Comm_free, &real);
  MANA_RETIRE(COMM, MPI_Comm, v);
}

static int record_errhandler(struct win_rec *r, MPI_Win real)
{
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  if (MANA_LH_CALL_NOPARK(MPI_Win_get_errhandler, real, &eh) != MPI_SUCCESS)
    return -1;
  mana_eh_ref_of_real(eh, &r->errhandler);
  if (mana_real_is_created((uint32_t)eh))
    MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &eh);
  return 0;
}

/* Every constructor.  base_io: the application's memory (create), or where the allocated
 * memory is returned (allocate, shared). */
static int make_window(int flavor, int large, void *base_io, MPI_Aint size, MPI_Aint disp_unit,
                       MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
  mana_cc_enter(comm, 1);
  MPI_Comm hidden = MPI_COMM_NULL;
  struct win_rec *r = calloc(1, sizeof(*r));
  int rc = r ? hidden_comm(comm, &hidden) : MPI_ERR_NO_MEM;
  const int *ranks;
  int n;
  if (rc == MPI_SUCCESS) {
    r->comm = hidden;
    r->flavor = flavor;
    r->large = large;
    r->size = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : size;
    r->disp_unit = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 1 : disp_unit;
    r->base = flavor == MPI_WIN_FLAVOR_CREATE ? base_io : NULL;
    r->disp_unit_attr = (int)r->disp_unit;
    if (mana_comm_members(hidden, &r->ggid, &r->cindex, &n, &ranks) != 0 ||
        mana_info_snapshot(info, &r->create_info) != 0)
      r->incomplete = 1;
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE && size > 0 &&
        posix_memalign(&r->base, 64, (size_t)size) != 0)
      rc = MPI_ERR_NO_MEM;
    else if (flavor == MPI_WIN_FLAVOR_SHARED)
      rc = mana_win_shm_create(r, MANA_REAL(COMM, MPI_Comm, hidden), size, disp_unit, &r->base);
  }
  MPI_Win real = MPI_WIN_NULL;
  if (rc == MPI_SUCCESS)
    rc = make_real(r, MANA_REAL(COMM, MPI_Comm, hidden), &real);
  if (rc == MPI_SUCCESS) {
    *win = MANA_NEW(WIN, MPI_Win, real);
    struct mana_slot *s = mana_handle_slot(MANA_KIND_WIN, (uint32_t)*win);
    r->self = (uint32_t)*win;
    if (record_errhandler(r, real) != 0)
      r->incomplete = 1;
    if (s)
      s->meta = r;
    list_insert(r);
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED)
      *(void **)base_io = r->base;
  } else {
    if (r && flavor == MPI_WIN_FLAVOR_ALLOCATE)
      free(r->base);
    if (r && r->shm)
      mana_win_shm_free(r);
    if (hidden != MPI_COMM_NULL)
      drop_hidden_comm(hidden);
    if (r)
      free_rec(r);
    hidden = MPI_COMM_NULL;
  }
  mana_cc_leave(MANA_CC_CONSTRUCTOR, hidden);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_CREATE, 0, base, size, disp_unit, info, comm, win);
}

int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_CREATE, 1, base, size, disp_unit, info, comm, win);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_ALLOCATE, 0, baseptr, size, disp_unit, info, comm, win);
}

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_ALLOCATE, 1, baseptr, size, disp_unit, info, comm, win);
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_SHARED, 0, baseptr, size, disp_unit, info, comm, win);
}

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_SHARED, 1, baseptr, size, disp_unit, info, comm, win);
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
  return make_window(MPI_WIN_FLAVOR_DYNAMIC, 0, NULL, 0, 1, info, comm, win);
}

/* Collective like a fence: counted on the window's communicator.  The hidden communicator and
 * the memory the stub allocated go with the window. */
void mana_cc_enter_win(MPI_Win win);
int MPI_Win_free(MPI_Win *win)
{
  mana_cc_enter_win(*win);
  struct win_rec *r = mana_win_rec(*win);
  MPI_Win real = MANA_REAL(WIN, MPI_Win, *win);
  int rc = MANA_LH_CALL_NOPARK(MPI_Win_free, &real);
  if (rc == MPI_SUCCESS && r) {
    list_remove(r);
    if (r->flavor == MPI_WIN_FLAVOR_ALLOCATE)
      free(r->base);
    if (r->shm)
      mana_win_shm_free(r);
    drop_hidden_comm(r->comm);
  }
  if (rc == MPI_SUCCESS) {
    MANA_RETIRE(WIN, MPI_Win, *win);
    *win = MPI_WIN_NULL;
  }
  mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);
  MANA_PARK_CHECK();
  return rc;
}

/* ---- properties ---- */

/* MPI_WIN_CREATE_FLAVOR from the record (the real window is always MPI_Win_create's); the
 * value lives in the record, as MPICH's lives in its window object. */
/* The predefined attributes the stub answers: the flavor of every window, and base, size and
 * displacement unit of a shared window (its real window is made differently: window_shm.c).
 * Values live in the record, as MPICH's live in its window object. */
static int own_attr(struct win_rec *r, int keyval, void **value)
{
  if (keyval == MPI_WIN_CREATE_FLAVOR)
    *value = &r->flavor;
  else if (r->shm && keyval == MPI_WIN_BASE)
    *value = r->base;
  else if (r->shm && keyval == MPI_WIN_SIZE)
    *value = &r->size;
  else if (r->shm && keyval == MPI_WIN_DISP_UNIT)
    *value = &r->disp_unit_attr;
  else
    return 0;
  return 1;
}

int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
  struct win_rec *r = mana_win_rec(win);
  if (r && own_attr(r, win_keyval, (void **)attribute_val)) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  return MANA_LH_CALL(MPI_Win_get_attr, MANA_REAL(WIN, MPI_Win, win),
                      (int)mana_handle_real(MANA_KIND_KEYVAL, (uint32_t)win_keyval), attribute_val,
                      flag);
}

/* The Fortran binding's entry point.  MPICH's Fortran binding asks for a predefined
 * attribute with its keyval + 1 and gets the value itself, address-sized; the C forms come
 * through here too (MPI_Win_get_attr of the C++ binding). */
int MPII_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag, int attr_type);
int MPII_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag, int attr_type)
{
  struct win_rec *r = mana_win_rec(win);
  void *own;
  if (r && own_attr(r, keyval, (void **)value)) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (r && own_attr(r, keyval - 1, &own)) { /* the Fortran form: the value */
    *(intptr_t *)value = keyval - 1 == MPI_WIN_BASE   ? (intptr_t)own
                         : keyval - 1 == MPI_WIN_SIZE ? (intptr_t) * (MPI_Aint *)own
                                                      : (intptr_t) * (int *)own;
    *flag = 1;
    return MPI_SUCCESS;
  }
  return MANA_LH_SVC(win_get_attr, MANA_REAL(WIN, MPI_Win, win),
                     (int)mana_handle_real(MANA_KIND_KEYVAL, (uint32_t)keyval), value, flag,
                     attr_type);
}

void mana_win_attr_set(MPI_Win v, int virt_keyval, void *value, int attr_type)
{
  struct win_rec *r = mana_win_rec(v);
  if (r)
    mana_attr_set(&r->attrs, virt_keyval, value, attr_type);
}

void mana_after_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
  mana_win_attr_set(win, win_keyval, attribute_val, 0);
}

void mana_after_Win_delete_attr(MPI_Win win, int win_keyval)
{
  struct win_rec *r = mana_win_rec(win);
  if (r)
    mana_attr_delete(&r->attrs, win_keyval);
}

void mana_after_Win_set_name(MPI_Win win, const char *win_name)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return;
  free(r->name);
  r->name = strdup(win_name);
  if (!r->name)
    r->incomplete = 1;
}

void mana_after_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
  struct win_rec *r = mana_win_rec(win);
  if (r) {
    mana_eh_ref_of_virtual(errhandler, &r->errhandler);
    r->eh_set = 1;
  }
}

/* Hints accumulate: keys set earlier and not named again keep their values. */
void mana_after_Win_set_info(MPI_Win win, MPI_Info info)
{
  struct win_rec *r = mana_win_rec(win);
  struct mana_kvlist now = {0, 0, NULL};
  if (!r)
    return;
  if (mana_info_snapshot(info, &now) != 0)
    r->incomplete = 1;
  for (int i = 0; i < now.n; i++)
    if (mana_kvlist_set(&r->later_info, now.kv[i].key, now.kv[i].value) != 0)
      r->incomplete = 1;
  mana_kvlist_free(&now);
}

void mana_after_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return;
  if (r->nregions == r->cap_regions) {
    int cap = r->cap_regions ? 2 * r->cap_regions : 4;
    struct win_region *more = realloc(r->regions, (size_t)cap * sizeof(*more));
    if (!more) {
      r->incomplete = 1;
      return;
    }
    r->regions = more;
    r->cap_regions = cap;
  }
  r->regions[r->nregions++] = (struct win_region){base, size};
}

void mana_after_Win_detach(MPI_Win win, const void *base)
{
  struct win_rec *r = mana_win_rec(win);
  for (int i = 0; r && i < r->nregions; i++)
    if (r->regions[i].base == base) {
      memmove(&r->regions[i], &r->regions[i + 1],
              (size_t)(r->nregions - i - 1) * sizeof(r->regions[0]));
      r->nregions--;
      return;
    }
}

/* A shared window's segment is the stub's: answered from the record. */
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
  struct win_rec *r = mana_win_rec(win);
  if (r && r->shm) {
    MPI_Aint du = 0;
    int rc = mana_win_shm_query(r, rank, size, &du, baseptr);
    if (rc == MPI_SUCCESS)
      *disp_unit = (int)du;
    return rc;
  }
  return MANA_LH_CALL(MPI_Win_shared_query, MANA_REAL(WIN, MPI_Win, win), rank, size, disp_unit,
                      baseptr);
}

int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                           void *baseptr)
{
  struct win_rec *r = mana_win_rec(win);
  if (r && r->shm)
    return mana_win_shm_query(r, rank, size, disp_unit, baseptr);
  return MANA_LH_CALL(MPI_Win_shared_query_c, MANA_REAL(WIN, MPI_Win, win), rank, size, disp_unit,
                      baseptr);
}

/* ---- the kind's operations ---- */

static void release(struct mana_slot *s)
{
  if (s->meta)
    free_rec(s->meta);
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_WIN];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct win_rec *r = s->meta;
    if ((s->flags & MANA_SLOT_USED) && (!r || r->incomplete)) {
      mana_reason(reason, len, "no complete record of", "window",
                  mana_handle_make(MANA_KIND_WIN, i));
      return 0;
    }
  }
  return 1;
}

/* Test mode: the real windows go, in the global order (freeing is collective); the memory
 * and the hidden communicators stay (the communicators' own discard frees those). */
static int discard(void)
{
  for (struct win_rec *r = windows; r; r = r->next) {
    mana_win_sync_release(r);
    MPI_Win real = mana_win_real(r);
    MANA_LH_CALL_NOPARK(MPI_Win_free, &real);
  }
  return MPI_SUCCESS;
}

static int rebuild_properties(const struct win_rec *r, MPI_Win w)
{
  int rc = MPI_SUCCESS;
  if (r->name && (rc = MANA_LH_CALL_NOPARK(MPI_Win_set_name, w, r->name)) != MPI_SUCCESS)
    return mana_rebuild_error("window", r->self, "MPI_Win_set_name", rc);
  if (r->later_info.n) {
    MPI_Info info = MPI_INFO_NULL;
    rc = mana_kvlist_to_real(&r->later_info, &info);
    if (rc == MPI_SUCCESS)
      rc = MANA_LH_CALL_NOPARK(MPI_Win_set_info, w, info);
    if (info != MPI_INFO_NULL)
      MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("window", r->self, "MPI_Win_set_info", rc);
  }
  for (int i = 0; i < r->nregions; i++)
    if ((rc = MANA_LH_CALL_NOPARK(MPI_Win_attach, w, r->regions[i].base, r->regions[i].size)) !=
        MPI_SUCCESS)
      return mana_rebuild_error("window", r->self, "MPI_Win_attach", rc);
  if ((rc = mana_attr_replay(r->attrs, MANA_KIND_WIN, (uint64_t)w, "window", r->self)) !=
      MPI_SUCCESS)
    return rc;
  MPI_Errhandler eh = r->eh_set ? mana_eh_ref_real(&r->errhandler) : MPI_ERRHANDLER_NULL;
  if (eh != MPI_ERRHANDLER_NULL &&
      (rc = MANA_LH_CALL_NOPARK(MPI_Win_set_errhandler, w, eh)) != MPI_SUCCESS)
    return mana_rebuild_error("window", r->self, "MPI_Win_set_errhandler", rc);
  return MPI_SUCCESS;
}

static int rebuild_one(struct win_rec *r)
{
  MPI_Comm c = MANA_REAL(COMM, MPI_Comm, r->comm);
  MPI_Win w = MPI_WIN_NULL;
  int rc = MPI_SUCCESS;
  if (r->shm && (rc = mana_win_shm_reshare(r, c)) != MPI_SUCCESS)
    return rc;
  if ((rc = make_real(r, c, &w)) != MPI_SUCCESS)
    return mana_rebuild_error("window", r->self, "MPI_Win_create", rc);
  mana_handle_update(MANA_KIND_WIN, r->self, (uint32_t)w);
  if ((rc = rebuild_properties(r, w)) != MPI_SUCCESS)
    return rc;
  return mana_win_refence(r);
}

static int rebuild(void)
{
  int rc = MPI_SUCCESS;
  for (struct win_rec *r = windows; r && rc == MPI_SUCCESS; r = r->next)
    rc = rebuild_one(r);
  /* Locks last: every window exists on every rank by the time a lock request arrives. */
  for (struct win_rec *r = windows; r && rc == MPI_SUCCESS; r = r->next)
    rc = mana_win_relock(r);
  /* No application thread may run before every rank holds its locks again: a rank that
   * resumed early could take a lock its peer held at the checkpoint and still asks for (a
   * counter updated under an exclusive lock lost an increment that way).  Every rank
   * rebuilds, so the barrier is over all of them. */
  if (rc == MPI_SUCCESS && (rc = MANA_LH_CALL_NOPARK(MPI_Barrier, MPI_COMM_WORLD)) != MPI_SUCCESS)
    rc = mana_rebuild_error("windows", 0, "MPI_Barrier (after the locks)", rc);
  return rc;
}

/* The job ends after a --kill checkpoint: MPICH 4.0.2 with UCX aborts in MPI_Finalize when a
 * window is still there (a registration still in use), so the checkpoint thread frees them,
 * collectively, in the global order (the application is parked, nothing is in flight).  The
 * application's attribute delete callbacks are not run: the job has not freed its windows,
 * and this thread is not one of its threads. */
void mana_windows_free_for_exit(void)
{
  mana_rebuilding = MANA_REBUILD_DISCARDING;
  for (struct win_rec *r = windows; r; r = r->next) {
    mana_win_sync_release(r);
    MPI_Win real = mana_win_real(r);
    MANA_LH_ANY(MPI_Win_free, &real);
  }
}

const struct mana_kind_ops mana_win_ops = {
    .name = "window",
    .kind = MANA_KIND_WIN,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
