/* Generalized requests (MPI_Grequest_start and MPICH's MPIX_ extensions).  Their callbacks get
 * the request's extra_state, so mana passes its own record there and the trampolines call the
 * application's functions with the application's extra_state on its own thread pointer.
 *
 * The record lives in the upper half, so it survives a restart: the request is started again
 * with the same record (the request slot's extras point at it), and completed again if the
 * application had completed it.  Nothing of the operation is in MPI: the application does
 * it and completes the request, which it can do as well after a restart.  The old request
 * of a rebuild in place (test mode) is completed and freed without the application's
 * callbacks.
 *
 * A request started from Fortran (libmpichfort marks it with MPII_Grequest_set_lang_f77) has
 * callbacks with Fortran's conventions: every argument by reference, the error code as a last
 * argument, the status as an integer array.  MPICH would call them so itself; here MPICH calls
 * the C trampolines, which call the application's functions the Fortran way.  The mark is in
 * the record, so it survives a restart. */
#include <string.h>

#include "p2p.h"
#include "records.h"

typedef void(f_query_fn)(void *extra_state, MPI_Fint *status, MPI_Fint *ierr);
typedef void(f_free_fn)(void *extra_state, MPI_Fint *ierr);
typedef void(f_cancel_fn)(void *extra_state, MPI_Fint *complete, MPI_Fint *ierr);

struct greq_record {
  MPI_Grequest_query_function *query;
  MPI_Grequest_free_function *free_fn;
  MPI_Grequest_cancel_function *cancel;
  MPIX_Grequest_poll_function *poll;
  MPIX_Grequest_wait_function *wait;
  void *extra_state;
  int completed; /* MPI_Grequest_complete was called (set before MPI hears it) */
  int freed;     /* free_fn has run: MPICH runs it at MPI_Request_free, even before the
                    request completes */
  int fortran;   /* the callbacks are Fortran procedures */
};

/* MPICH's C and Fortran statuses hold the same integers in the same order (MPI_Status_f2c is
 * a copy), which is what MPICH's own Fortran query path relies on. */
_Static_assert(sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
               "MPI_Status is not MPI_F_STATUS_SIZE Fortran integers");

/* The old requests of a rebuild in place: not the application's business. */
static int discarding(void)
{
  return mana_rebuilding == MANA_REBUILD_DISCARDING;
}

static int query_tramp(void *extra, MPI_Status *status)
{
  struct greq_record *r = extra;
  if (discarding())
    return MPI_SUCCESS;
  uint64_t saved = mana_callback_enter();
  int rc;
  if (r->fortran) {
    MPI_Fint f_status[MPI_F_STATUS_SIZE] = {0}, ierr = MPI_SUCCESS;
    ((f_query_fn *)(void *)r->query)(r->extra_state, f_status, &ierr);
    rc = ierr;
    if (rc == MPI_SUCCESS)
      memcpy(status, f_status, sizeof(*status));
  } else {
    rc = r->query(r->extra_state, status);
  }
  mana_callback_leave(saved);
  return rc;
}

/* The record outlives a request freed before it completes: the application still completes
 * it through its handle, and a restart must start it again (without a second free_fn). */
static int free_tramp(void *extra)
{
  struct greq_record *r = extra;
  if (discarding())
    return MPI_SUCCESS; /* the record goes on with the new request */
  uint64_t saved = mana_callback_enter();
  int rc = MPI_SUCCESS;
  if (!r->freed) {
    r->freed = 1;
    if (r->fortran) {
      MPI_Fint ierr = MPI_SUCCESS;
      ((f_free_fn *)(void *)r->free_fn)(r->extra_state, &ierr);
      rc = ierr;
    } else {
      rc = r->free_fn(r->extra_state);
    }
  }
  if (r->completed)
    free(r); /* MPI is done with the request */
  mana_callback_leave(saved);
  return rc;
}

static int cancel_tramp(void *extra, int complete)
{
  struct greq_record *r = extra;
  if (discarding())
    return MPI_SUCCESS;
  uint64_t saved = mana_callback_enter();
  int rc;
  if (r->fortran) {
    MPI_Fint f_complete = complete, ierr = MPI_SUCCESS;
    ((f_cancel_fn *)(void *)r->cancel)(r->extra_state, &f_complete, &ierr);
    rc = ierr;
  } else {
    rc = r->cancel(r->extra_state, complete);
  }
  mana_callback_leave(saved);
  return rc;
}

static int poll_tramp(void *extra, MPI_Status *status)
{
  struct greq_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->poll(r->extra_state, status);
  mana_callback_leave(saved);
  return rc;
}

/* MPICH hands wait_fn the extra_states of every request of the class being waited on. */
static int wait_tramp(int count, void **extras, double timeout, MPI_Status *status)
{
  struct greq_record *r = count > 0 ? extras[0] : NULL;
  uint64_t saved = mana_callback_enter();
  void *stack[MANA_STACK_HANDLES];
  void **user = count <= MANA_STACK_HANDLES ? stack : malloc((size_t)count * sizeof(void *));
  for (int i = 0; i < count; i++)
    user[i] = ((struct greq_record *)extras[i])->extra_state;
  int rc = r ? r->wait(count, user, timeout, status) : MPI_SUCCESS;
  if (user != stack)
    free(user);
  mana_callback_leave(saved);
  return rc;
}

static struct greq_record *record(MPI_Grequest_query_function *q, MPI_Grequest_free_function *f,
                                  MPI_Grequest_cancel_function *c, MPIX_Grequest_poll_function *p,
                                  MPIX_Grequest_wait_function *w, void *extra)
{
  struct greq_record *r = malloc(sizeof(*r));
  if (r)
    *r = (struct greq_record){q, f, c, p, w, extra, 0, 0, 0};
  return r;
}

static void keep_request(MPI_Request real, MPI_Request *request, struct greq_record *r)
{
  *request = MANA_NEW(REQUEST, MPI_Request, real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  struct mana_req_extra *e = s ? mana_req_extra(mana_req_index((uint32_t)*request)) : NULL;
  if (s)
    s->flags |= MANA_SLOT_GREQUEST;
  if (e)
    e->greq = r;
}

static struct greq_record *record_of(MPI_Request request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)request);
  struct mana_req_extra *e = s && (s->flags & MANA_SLOT_GREQUEST)
                                 ? mana_req_extra(mana_req_index((uint32_t)request))
                                 : NULL;
  return e ? e->greq : NULL;
}

/* Marked before MPI hears it: a thread parks only once the call has returned (stub.h), and
 * another thread may complete and free the request, and the record, as soon as MPI has.  A
 * request the application freed before completing it keeps its slot until now (the handle
 * it still holds must name it, and a restart must start it again): MPI frees it here. */
int MPI_Grequest_complete(MPI_Request request)
{
  struct greq_record *r = record_of(request);
  int freed = r && r->freed;
  if (r)
    r->completed = 1;
  MPI_Request real = MANA_REAL(REQUEST, MPI_Request, request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Grequest_complete, real);
  if (rc == MPI_SUCCESS && freed) { /* MPI has let it go: free_fn ran at MPI_Request_free */
    mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)request);
    free(r);
  }
  MANA_PARK_CHECK();
  return rc;
}

/* libmpichfort calls this right after MPI_Grequest_start for a Fortran program. */
void MPII_Grequest_set_lang_f77(MPI_Request greq);
void MPII_Grequest_set_lang_f77(MPI_Request greq)
{
  struct greq_record *r = record_of(greq);
  if (r)
    r->fortran = 1;
}

int mana_greq_incomplete(MPI_Request request)
{
  const struct greq_record *r = record_of(request);
  return r && !r->completed;
}

int MPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                       MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                       MPI_Request *request)
{
  struct greq_record *r = record(query_fn, free_fn, cancel_fn, NULL, NULL, extra_state);
  if (!r)
    return MPI_ERR_NO_MEM;
  MPI_Request real;
  int rc = MANA_LH_CALL_NOPARK(MPI_Grequest_start, query_tramp, free_tramp, cancel_tramp, r, &real);
  if (rc == MPI_SUCCESS)
    keep_request(real, request, r);
  else
    free(r);
  MANA_PARK_CHECK(); /* once the handle exists (stub.h) */
  return rc;
}

int MPIX_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn,
                        MPIX_Grequest_poll_function *poll_fn, MPIX_Grequest_wait_function *wait_fn,
                        void *extra_state, MPI_Request *request)
{
  struct greq_record *r = record(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, extra_state);
  if (!r)
    return MPI_ERR_NO_MEM;
  MPI_Request real;
  int rc = MANA_LH_CALL_NOPARK(MPIX_Grequest_start, query_tramp, free_tramp, cancel_tramp,
                               poll_fn ? poll_tramp : NULL, wait_fn ? wait_tramp : NULL, r, &real);
  if (rc == MPI_SUCCESS)
    keep_request(real, request, r);
  else
    free(r);
  MANA_PARK_CHECK(); /* once the handle exists (stub.h) */
  return rc;
}

/* A class is a set of functions without extra_state: the stub keeps them (in the class's
 * handle slot) and copies them into each request's record at allocation. */
int MPIX_Grequest_class_create(MPI_Grequest_query_function *query_fn,
                               MPI_Grequest_free_function *free_fn,
                               MPI_Grequest_cancel_function *cancel_fn,
                               MPIX_Grequest_poll_function *poll_fn,
                               MPIX_Grequest_wait_function *wait_fn,
                               MPIX_Grequest_class *greq_class)
{
  struct greq_record *proto = record(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, NULL);
  if (!proto)
    return MPI_ERR_NO_MEM;
  MPIX_Grequest_class real;
  int rc = MANA_LH_CALL_NOPARK(MPIX_Grequest_class_create, query_tramp, free_tramp, cancel_tramp,
                               poll_fn ? poll_tramp : NULL, wait_fn ? wait_tramp : NULL, &real);
  if (rc != MPI_SUCCESS) {
    free(proto);
    return rc;
  }
  *greq_class = (MPIX_Grequest_class)mana_new32(MANA_KIND_GREQ_CLASS, (uint32_t)real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_GREQ_CLASS, (uint32_t)*greq_class);
  if (s)
    s->meta = proto;
  else
    free(proto);
  MANA_PARK_CHECK(); /* once the handle exists (stub.h) */
  return rc;
}

int MPIX_Grequest_class_allocate(MPIX_Grequest_class greq_class, void *extra_state,
                                 MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_GREQ_CLASS, (uint32_t)greq_class);
  if (!s || !s->meta)
    return MANA_LH_CALL_NOPARK(MPIX_Grequest_class_allocate, greq_class, extra_state, request);
  const struct greq_record *proto = s->meta;
  struct greq_record *r =
      record(proto->query, proto->free_fn, proto->cancel, proto->poll, proto->wait, extra_state);
  if (!r)
    return MPI_ERR_NO_MEM;
  MPI_Request real;
  MPIX_Grequest_class real_class = (MPIX_Grequest_class)s->real;
  int rc = MANA_LH_CALL_NOPARK(MPIX_Grequest_class_allocate, real_class, r, &real);
  if (rc == MPI_SUCCESS)
    keep_request(real, request, r);
  else
    free(r);
  MANA_PARK_CHECK(); /* once the handle exists (stub.h) */
  return rc;
}

/* ---- restart ---- */

/* Request slot i, a generalized request, started again in a new MPI (or the old one after
 * discard) with its record; completed again if it was. */
int mana_greq_remake(uint32_t i)
{
  struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_REQUEST], i);
  struct mana_req_extra *e = mana_req_extra(i);
  struct greq_record *r = e ? e->greq : NULL;
  uint32_t v = mana_handle_make(MANA_KIND_REQUEST, i);
  if (!r)
    return mana_rebuild_error("generalized request", v, "its record", MPI_ERR_INTERN);
  MPI_Request real;
  int rc = r->poll || r->wait ? MANA_LH_CALL_NOPARK(MPIX_Grequest_start, query_tramp, free_tramp,
                                                    cancel_tramp, r->poll ? poll_tramp : NULL,
                                                    r->wait ? wait_tramp : NULL, r, &real)
                              : MANA_LH_CALL_NOPARK(MPI_Grequest_start, query_tramp, free_tramp,
                                                    cancel_tramp, r, &real);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("generalized request", v, "MPI_Grequest_start", rc);
  s->real = (uint32_t)real;
  if (r->completed && (rc = MANA_LH_CALL_NOPARK(MPI_Grequest_complete, real)) != MPI_SUCCESS)
    return mana_rebuild_error("generalized request", v, "MPI_Grequest_complete", rc);
  MPI_Request mine = real; /* the slot keeps the handle the application completes; free_fn
                              has run, the trampoline does not run it again */
  if (r->freed && (rc = MANA_LH_CALL_NOPARK(MPI_Request_free, &mine)) != MPI_SUCCESS)
    return mana_rebuild_error("generalized request", v, "MPI_Request_free", rc);
  return MPI_SUCCESS;
}

/* Test mode: the old request goes, its record stays (the trampolines do nothing while the
 * rebuild discards).  One the application freed goes when it completes. */
void mana_greq_discard(uint32_t index, MPI_Request real)
{
  struct mana_req_extra *e = mana_req_extra(index);
  const struct greq_record *r = e ? e->greq : NULL;
  if (!r || !r->completed)
    MANA_LH_CALL_NOPARK(MPI_Grequest_complete, real);
  if (!r || !r->freed)
    MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
}

/* ---- restart: a class is its functions (the slot's record), registered again ---- */

static int class_rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_GREQ_CLASS];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct greq_record *proto = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !proto)
      continue;
    MPIX_Grequest_class real;
    int rc = MANA_LH_CALL_NOPARK(MPIX_Grequest_class_create, query_tramp, free_tramp, cancel_tramp,
                                 proto->poll ? poll_tramp : NULL, proto->wait ? wait_tramp : NULL,
                                 &real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("generalized request class",
                                mana_handle_make(MANA_KIND_GREQ_CLASS, i),
                                "MPIX_Grequest_class_create", rc);
    s->real = (uint32_t)real;
  }
  return MPI_SUCCESS;
}

/* MPI has no call that frees a class: the test mode's discard leaves the old ones. */
const struct mana_kind_ops mana_greq_class_ops = {
    .name = "generalized request class",
    .kind = MANA_KIND_GREQ_CLASS,
    .rebuild = class_rebuild,
};
