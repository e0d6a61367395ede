/* Request completion: MPI_Wait/Test and their any/all/some forms, Start, Request_free; and
 * persistent point-to-point requests for restart.
 *
 * Waits never block inside the lower half: the lower half polls (svc.*_until) and hands
 * control back when the checkpoint machinery asks, and the wrapper parks here.
 * After a call, a request whose real handle became MPI_REQUEST_NULL is finished and its virtual
 * handle is retired; one whose real handle stayed (persistent, generalized, still active)
 * keeps its virtual handle.
 *
 * A persistent send or receive (MPI_Send_init, MPI_Recv_init, ...) is recorded with its
 * arguments and made again, inactive, at restart.  Whether it is active is tracked from
 * MPI_Start to its completion, because only an inactive one can be made again as it was.
 * Every other live request is an operation in progress: the stub cannot rebuild it. */
#include "records.h"
#include "stub_hooks.h"

enum preq_mode { PREQ_SEND, PREQ_BSEND, PREQ_SSEND, PREQ_RSEND, PREQ_RECV };

struct preq_rec {
  enum preq_mode mode;
  int large; /* made by the _c form */
  void *buf;
  MPI_Count count;
  struct mana_dt_arg type;
  int peer, tag;
  MPI_Comm comm; /* the application's handle */
};

static MPI_Request real_of(MPI_Request v)
{
  return (MPI_Request)(uint32_t)mana_handle_real(MANA_KIND_REQUEST, (uint32_t)v);
}

/* `done`: the call completed this request (a persistent one becomes inactive). */
static void settle(MPI_Request *virt, MPI_Request real, int done)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*virt);
  if (!s) {
    *virt = real; /* predefined or null: nothing virtual behind it */
    return;
  }
  if (real == MPI_REQUEST_NULL) {
    mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)*virt);
    *virt = MPI_REQUEST_NULL;
  } else {
    s->real = (uint64_t)(uint32_t)real;
    if (done)
      s->flags &= ~MANA_SLOT_ACTIVE;
  }
}

/* done == NULL: all completed or none (all_done); else done[i] per request. */
static void settle_all(int n, MPI_Request virt[], const MPI_Request real[], int all_done,
                       const unsigned char *done)
{
  for (int i = 0; i < n; i++)
    settle(&virt[i], real[i], done ? done[i] : all_done);
}

/* Waitany/Testany and the some forms complete the requests they name. */
static void settle_named(int n, MPI_Request virt[], const MPI_Request real[], int nnamed,
                         const int named[])
{
  for (int k = 0; k < nnamed; k++)
    if (named[k] >= 0 && named[k] < n) {
      struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt[named[k]]);
      if (s && real[named[k]] != MPI_REQUEST_NULL)
        s->flags &= ~MANA_SLOT_ACTIVE;
    }
  settle_all(n, virt, real, 0, NULL);
}

/* Completion calls park while the request is pending, but once MPI has completed (and maybe
 * freed) it, only after the virtual handle is settled (stub.h, MANA_LH_CALL_NOPARK): a
 * checkpoint must never find a slot whose real request is gone. */
static int wait_real(MPI_Request *real, MPI_Status *status)
{
  for (;;) {
    int flag = 0;
    int rc = MANA_LH_SVC_NOPARK(test_until, real, &flag, status);
    if (rc != MPI_SUCCESS || flag)
      return rc;
    mana_park_point();
  }
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
  MPI_Request real = real_of(*request);
  int rc;
  if (real == MPI_REQUEST_NULL)
    rc = MANA_LH_CALL_NOPARK(MPI_Wait, &real, status); /* empty status, as MPI defines it */
  else
    rc = wait_real(&real, status);
  settle(request, real, rc == MPI_SUCCESS);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Test, &real, flag, status);
  settle(request, real, rc == MPI_SUCCESS && *flag);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
  return MANA_LH_CALL(MPI_Request_get_status, real_of(request), flag, status);
}

int MPI_Request_free(MPI_Request *request)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
  if (rc == MPI_SUCCESS) {
    mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)*request);
    *request = MPI_REQUEST_NULL;
  }
  MANA_PARK_CHECK();
  return rc;
}

/* A recorded persistent request between MPI_Start and its completion cannot be rebuilt. */
static void mark_started(MPI_Request *requests, int n, int rc)
{
  for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
    struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)requests[i]);
    if (s && s->meta)
      s->flags |= MANA_SLOT_ACTIVE;
  }
}

int MPI_Start(MPI_Request *request)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Start, &real);
  settle(request, real, 0);
  mark_started(request, 1, rc);
  MANA_PARK_CHECK();
  return rc;
}

/* Runs `body` on a real copy of the request array, then settles every entry with `settle`
 * (a call naming `real`). */
#define WITH_REAL_REQUESTS(n, virt, real, body, settle)                                 \
  do {                                                                                  \
    MPI_Request stack_[MANA_STACK_HANDLES];                                             \
    MPI_Request *real = mana_real_array_request((virt), (size_t)((n) > 0 ? (n) : 0), stack_); \
    body;                                                                               \
    settle;                                                                             \
    if (real != stack_)                                                                 \
      free(real);                                                                       \
  } while (0)

int MPI_Startall(int count, MPI_Request array_of_requests[])
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL_NOPARK(MPI_Startall, count, real),
                     settle_all(count, array_of_requests, real, 0, NULL));
  mark_started(array_of_requests, count, rc);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
  int rc;
  unsigned char stack_done[MANA_STACK_HANDLES] = {0};
  unsigned char *done = count <= MANA_STACK_HANDLES ? stack_done : calloc((size_t)count, 1);
  if (!done)
    return MPI_ERR_NO_MEM;
  WITH_REAL_REQUESTS(count, array_of_requests, real, {
    for (;;) {
      int flag = 0;
      rc = MANA_LH_SVC_NOPARK(waitall_until, count, real, done, &flag, array_of_statuses);
      if (rc != MPI_SUCCESS || flag)
        break;
      mana_park_point();
    }
  }, settle_all(count, array_of_requests, real, 0, done));
  if (done != stack_done)
    free(done);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real, {
    for (;;) {
      int flag = 0;
      rc = MANA_LH_SVC_NOPARK(testany_until, count, real, index, &flag, status);
      if (rc != MPI_SUCCESS || flag)
        break;
      mana_park_point();
    }
  }, settle_named(count, array_of_requests, real, rc == MPI_SUCCESS, index));
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(incount, array_of_requests, real, {
    for (;;) {
      *outcount = 0;
      rc = MANA_LH_SVC_NOPARK(testsome_until, incount, real, outcount, array_of_indices,
                              array_of_statuses);
      if (rc != MPI_SUCCESS || *outcount != 0)
        break;
      mana_park_point();
    }
  }, settle_named(incount, array_of_requests, real, *outcount, array_of_indices));
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL_NOPARK(MPI_Testall, count, real, flag, array_of_statuses),
                     settle_all(count, array_of_requests, real, rc == MPI_SUCCESS && *flag,
                                NULL));
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL_NOPARK(MPI_Testany, count, real, index, flag, status),
                     settle_named(count, array_of_requests, real,
                                  rc == MPI_SUCCESS && *flag, index));
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(incount, array_of_requests, real,
                     rc = MANA_LH_CALL_NOPARK(MPI_Testsome, incount, real, outcount,
                                              array_of_indices, array_of_statuses),
                     settle_named(incount, array_of_requests, real,
                                  rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED ? *outcount : 0,
                                  array_of_indices));
  MANA_PARK_CHECK();
  return rc;
}

/* ---- persistent point-to-point requests ---- */

static void record(enum preq_mode mode, int large, const void *buf, MPI_Count count,
                   MPI_Datatype datatype, int peer, int tag, MPI_Comm comm,
                   const MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  struct preq_rec *r = s ? malloc(sizeof(*r)) : NULL;
  if (!r)
    return; /* a live request without a record is refused at checkpoint */
  *r = (struct preq_rec){mode, large, (void *)buf, count, {0, NULL}, peer, tag, comm};
  mana_dt_arg_get(datatype, &r->type);
  s->meta = r;
  s->flags |= MANA_SLOT_PERSISTENT;
}

#define RECORD_INIT(name, mode, large, count_t, buf_t)                                      \
  void mana_after_##name(buf_t *buf, count_t count, MPI_Datatype datatype, int peer,        \
                         int tag, MPI_Comm comm, MPI_Request *request)                      \
  {                                                                                         \
    record(mode, large, buf, count, datatype, peer, tag, comm, request);                    \
  }
RECORD_INIT(Send_init, PREQ_SEND, 0, int, const void)
RECORD_INIT(Bsend_init, PREQ_BSEND, 0, int, const void)
RECORD_INIT(Ssend_init, PREQ_SSEND, 0, int, const void)
RECORD_INIT(Rsend_init, PREQ_RSEND, 0, int, const void)
RECORD_INIT(Recv_init, PREQ_RECV, 0, int, void)
RECORD_INIT(Send_init_c, PREQ_SEND, 1, MPI_Count, const void)
RECORD_INIT(Bsend_init_c, PREQ_BSEND, 1, MPI_Count, const void)
RECORD_INIT(Ssend_init_c, PREQ_SSEND, 1, MPI_Count, const void)
RECORD_INIT(Rsend_init_c, PREQ_RSEND, 1, MPI_Count, const void)
RECORD_INIT(Recv_init_c, PREQ_RECV, 1, MPI_Count, void)

static void release(struct mana_slot *s)
{
  struct preq_rec *r = s->meta;
  mana_dt_arg_put(&r->type);
  free(r);
}

static int comm_live(MPI_Comm v)
{
  return v == MPI_COMM_WORLD || v == MPI_COMM_SELF ||
         mana_handle_slot(MANA_KIND_COMM, (uint32_t)v) != NULL;
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct preq_rec *r = s->meta;
    uint32_t v = mana_handle_make(MANA_KIND_REQUEST, i);
    const char *why = NULL;
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    if (s->flags & MANA_SLOT_GREQUEST)
      why = "mana cannot rebuild generalized requests:";
    else if (!r)
      why = "an operation is in progress (mana rebuilds inactive persistent point-to-point "
            "requests only):";
    else if (s->flags & MANA_SLOT_ACTIVE)
      why = "a persistent operation is in progress:";
    else if (!comm_live(r->comm))
      why = "the communicator was freed under";
    else if (!mana_dt_arg_ok(&r->type))
      why = "no usable datatype record for";
    if (why) {
      mana_reason(reason, len, why, "request", v);
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Request real = (MPI_Request)s->real;
    if ((s->flags & MANA_SLOT_USED) && s->meta && real != MPI_REQUEST_NULL)
      MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
  }
  return MPI_SUCCESS;
}

/* The large-count forms take the same arguments with an MPI_Count count. */
#define INIT(fn) \
  (r->large ? MANA_LH_CALL_NOPARK(fn##_c, r->buf, r->count, type, r->peer, r->tag, comm, out) \
            : MANA_LH_CALL_NOPARK(fn, r->buf, (int)r->count, type, r->peer, r->tag, comm, out))

static int make(const struct preq_rec *r, MPI_Request *out)
{
  MPI_Datatype type = mana_dt_arg_real(&r->type);
  MPI_Comm comm = MANA_REAL(COMM, MPI_Comm, r->comm);
  switch (r->mode) {
  case PREQ_SEND:
    return INIT(MPI_Send_init);
  case PREQ_BSEND:
    return INIT(MPI_Bsend_init);
  case PREQ_SSEND:
    return INIT(MPI_Ssend_init);
  case PREQ_RSEND:
    return INIT(MPI_Rsend_init);
  default:
    return INIT(MPI_Recv_init);
  }
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Request real;
    if (!(s->flags & MANA_SLOT_USED) || !s->meta)
      continue;
    int rc = make(s->meta, &real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("persistent request", mana_handle_make(MANA_KIND_REQUEST, i),
                                "MPI_*_init", rc);
    s->real = (uint32_t)real;
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_request_ops = {
    .name = "request",
    .kind = MANA_KIND_REQUEST,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
