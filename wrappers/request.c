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
 * arguments and made again, inactive, at restart; persistent collectives have their own file
 * (pcoll.c), to which MPI_Start, MPI_Startall and MPI_Request_free hand them, and so have
 * partitioned ones (partitioned.c), whose starts pass through here.  Whether a persistent
 * send or receive is active is tracked from MPI_Start to its completion, because only an
 * inactive one can be made again as it was.
 *
 * Point-to-point and non-blocking collective operations in progress are completed by the
 * drain before a checkpoint (drain.c); a request it completed, or a receive that a buffered
 * message satisfied, stands behind a complete generalized request the stub made
 * (MANA_SLOT_REQ_DONE, p2p_requests.c), so the completion calls below treat it like any other.
 * They count the receives they complete (p2p.h), and a call that waits re-reads the real
 * handles after every park point: the drain or a restart may have replaced them.  Receives
 * still pending at a restart are posted again, in the order they were posted. */
#include <stdio.h>

#include "p2p.h"
#include "partitioned.h"
#include "pcoll.h"
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

/* `done`: the call completed this request, maybe with an error (a persistent one becomes
 * inactive); st its status (a receive is counted from it: a truncated one took its message
 * too).  s: the slot of *virt (mana_handle_slot), or NULL. */
static inline void settle_slot(MPI_Request *virt, struct mana_slot *s, MPI_Request *real_io,
                               int done, MPI_Status *st)
{
  MPI_Request real = *real_io;
  if (!s) {
    *virt = real; /* predefined or null: nothing virtual behind it */
    return;
  }
  uint32_t f = s->flags;
  if (__builtin_expect(
          (f & MANA_REQ_SPECIAL) == MANA_SLOT_REQ_RECV && done && !(f & MANA_SLOT_PERSISTENT), 1)) {
    /* the common case inline: a receive completed, its datatype predefined */
    const struct mana_req_extra *e = mana_req_extra(mana_req_index((uint32_t)*virt));
    if (e && !e->type.rec)
      mana_count_recv(e->comm, st);
    else
      mana_req_completed(s, mana_req_index((uint32_t)*virt), &real, st);
  } else if ((f & MANA_REQ_SPECIAL) && (done || real == MPI_REQUEST_NULL)) {
    mana_req_completed(s, mana_req_index((uint32_t)*virt), &real, done ? st : NULL);
  }
  *real_io = real; /* a persistent request is back behind its stand-in */
  if (real == MPI_REQUEST_NULL) {
    mana_retire_request_slot(s, (uint32_t)*virt);
    *virt = MPI_REQUEST_NULL;
  } else {
    s->real = (uint64_t)(uint32_t)real;
    if (done)
      s->flags &= ~MANA_SLOT_ACTIVE;
  }
}

static void settle_real(MPI_Request *virt, MPI_Request *real_io, int done, MPI_Status *st)
{
  settle_slot(virt, mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*virt), real_io, done, st);
}

/* A test's flag (or count) cleared before MPI sets it: MPI leaves it alone when progress
 * fails, and the stub reads it on every return to learn what completed, errors included. */
static inline int *cleared(int *flag)
{
  if (flag)
    *flag = 0;
  return flag;
}

static void settle(MPI_Request *virt, MPI_Request real, int done, MPI_Status *st)
{
  settle_real(virt, &real, done, st);
}

/* Whether waitall_until's mark says the request completed (lh_services.h): with an error
 * too, which MPI reports in its status. */
static inline int completed_mark(unsigned char done)
{
  return done == 1 || done == 2;
}

/* All completed or none (all_done).  st == NULL: nothing completed. */
static void settle_all(int n, MPI_Request virt[], MPI_Request real[], int all_done, MPI_Status st[])
{
  for (int i = 0; i < n; i++)
    settle_real(&virt[i], &real[i], all_done, st ? &st[i] : NULL);
}

/* Waitany/Testany and the some forms complete the requests they name; st[k] is the status of
 * named[k]. */
static void settle_named(int n, MPI_Request virt[], MPI_Request real[], int nnamed,
                         const int named[], MPI_Status st[])
{
  for (int k = 0; k < nnamed; k++)
    if (named[k] >= 0 && named[k] < n)
      settle_real(&virt[named[k]], &real[named[k]], 1, &st[k]);
  settle_all(n, virt, real, 0, NULL); /* the others: not completed, nothing to count */
}

/* Requests MPI must complete with its own blocking wait (handles.h, MANA_SLOT_REQ_MPIWAIT): a
 * wait that names one is MPI's wait, not a polling loop (wait_direct.c), entered only while
 * no park is requested; the drain completes the pending ones (drain.c, wait_mpi_own). */
static int mpi_waits(const MPI_Request virt[], int n)
{
  for (int i = 0; virt && i < n; i++) {
    const struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt[i]);
    if (s && (s->flags & MANA_SLOT_REQ_MPIWAIT))
      return 1;
  }
  return 0;
}

/* A thread enters MPI's own wait only while no park is requested (boundary.h,
 * in_mpi_own_wait); otherwise the caller's loop finds nothing completed and parks. */
static int own_wait_enter(void)
{
  __atomic_add_fetch(&MANA_BOUNDARY->in_mpi_own_wait, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&MANA_BOUNDARY->park_requested, __ATOMIC_SEQ_CST))
    return 1;
  __atomic_sub_fetch(&MANA_BOUNDARY->in_mpi_own_wait, 1, __ATOMIC_SEQ_CST);
  return 0;
}

static void own_wait_leave(void)
{
  __atomic_sub_fetch(&MANA_BOUNDARY->in_mpi_own_wait, 1, __ATOMIC_SEQ_CST);
}

#define WAIT_NOPARK(virt, n, fn, ...)           \
  ({                                            \
    int rc_ = MPI_SUCCESS;                      \
    if (!mpi_waits((virt), (n))) {              \
      rc_ = MANA_UNTIL_NOPARK(fn, __VA_ARGS__); \
    } else if (own_wait_enter()) {              \
      rc_ = mana_direct_##fn(__VA_ARGS__);      \
      own_wait_leave();                         \
    }                                           \
    rc_;                                        \
  })

void mana_req_note_order(uint32_t virt)
{
  struct mana_req_extra *e = mana_req_extra(mana_req_index((uint32_t)virt));
  if (e)
    e->seq = ++mana_recv_seq;
}

/* The status a completion call fills: the application's, or ours when it ignores it (a
 * receive is counted by the source its status names). */
#define STATUS_OR_LOCAL(status, local) ((status) == MPI_STATUS_IGNORE ? &(local) : (status))

/* The status a wait has MPI fill: the application's; else ours when the stub reads it (a
 * receive is counted by its source; a stand-in reports a saved one), or none, which spares MPI
 * filling one nobody reads. */
static inline MPI_Status *wait_status(const struct mana_slot *s, MPI_Status *status,
                                      MPI_Status *local)
{
  if (status != MPI_STATUS_IGNORE)
    return status;
  return s && (s->flags & MANA_REQ_SPECIAL) ? local : MPI_STATUS_IGNORE;
}

/* mana_retire_request_slot's inline case, for a request MPI completed and freed, on the lower
 * half's thread pointer (MANA_LH_CALL_SETTLE): 1 if the slot is free again and *request is
 * MPI_REQUEST_NULL, 0 when the caller must settle it after the switch. */
static inline __attribute__((always_inline)) int retire_request_lower(struct mana_slot *s,
                                                                      MPI_Request *request)
{
  if ((s->flags & MANA_REQ_SPECIAL) || !mana_request_slot_plain(s))
    return 0;
  mana_slot_put(&mana_tables[MANA_KIND_REQUEST], s, (uint32_t)*request & MANA_HANDLE_INDEX_MASK);
  *request = MPI_REQUEST_NULL;
  return 1;
}

/* Completion calls park while the request is pending, but once MPI has completed (and maybe
 * freed) it, only after the virtual handle is settled (stub.h, MANA_LH_CALL_NOPARK): a
 * checkpoint must never find a slot whose real request is gone.  After a park point the real
 * handle is read again: the drain may have completed the request (a stand-in now), a restart
 * may have posted it again.  status may be MPI_STATUS_IGNORE. */
static inline __attribute__((always_inline)) int request_wait(MPI_Request *request,
                                                              MPI_Status *status)
{
  /* One lookup of the slot serves the real handle, the kind of wait and the settling, until a
   * park point, after which the drain or a restart may have changed it. */
  MPI_Status local;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  MPI_Request real = s ? (MPI_Request)(uint32_t)s->real : *request;
  MPI_Status *st = wait_status(s, status, &local);
  int rc, flag = 0;
  if (real == MPI_REQUEST_NULL) {
    rc = MANA_LH_CALL_NOPARK(MPI_Wait, &real, st); /* empty status, as MPI defines it */
  } else {
    for (;;) {
      flag = 0;
      if (__builtin_expect(s && !(s->flags & MANA_SLOT_REQ_MPIWAIT) && mana_world_model, 1)) {
        int retired = 0;
        rc = MANA_LH_CALL_SETTLE(
            retired, flag && real == MPI_REQUEST_NULL && retire_request_lower(s, request),
            svc.test_until, &real, &flag, st);
        if (retired)
          return rc;
      } else if (!s || !(s->flags & MANA_SLOT_REQ_MPIWAIT))
        rc = MANA_UNTIL_NOPARK(test_until, &real, &flag, st);
      else if (own_wait_enter()) {
        rc = mana_direct_test_until(&real, &flag, st);
        own_wait_leave();
      } else
        rc = MPI_SUCCESS;
      if (rc != MPI_SUCCESS || flag)
        break;
      mana_park_point();
      s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
      real = s ? (MPI_Request)(uint32_t)s->real : *request;
      st = wait_status(s, status, &local);
    }
  }
  if (__builtin_expect(s && real == MPI_REQUEST_NULL && !(s->flags & MANA_REQ_SPECIAL), 1)) {
    mana_retire_request_slot(s, (uint32_t)*request); /* settle_slot's common case */
    *request = MPI_REQUEST_NULL;
  } else {
    settle_slot(request, s, &real, rc == MPI_SUCCESS || flag, st);
  }
  return rc;
}

int mana_request_wait(MPI_Request *request, MPI_Status *st)
{
  return request_wait(request, st);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
  int rc = request_wait(request, status);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
  MPI_Status local, *st = STATUS_OR_LOCAL(status, local);
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Test, &real, cleared(flag), st);
  settle(request, real, flag && *flag, st); /* completed, maybe with an error */
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
  return MANA_LH_CALL(MPI_Request_get_status, real_of(request), flag, status);
}

static int request_free(MPI_Request *request)
{
  MPI_Request real = real_of(*request);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  /* Asked first: MPI may free the record of a complete one (grequest.c). */
  int keep = s && (s->flags & MANA_SLOT_GREQUEST) && mana_greq_incomplete(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
  if (rc == MPI_SUCCESS && s && (s->flags & MANA_REQ_SPECIAL)) {
    /* An active persistent receive freed here is never counted (docs: a limit of the drain;
     * plain pending receives are adopted instead, freed_receives.c). */
    mana_req_completed(s, mana_req_index((uint32_t)*request), &real, NULL);
    if (real != MPI_REQUEST_NULL) /* the persistent request behind a stand-in */
      MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
  }
  if (rc == MPI_SUCCESS) {
    if (!keep)
      mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)*request);
    *request = MPI_REQUEST_NULL;
  }
  return rc;
}

int MPI_Request_free(MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  if (s && (s->flags & MANA_SLOT_REQ_PCOLL))
    return mana_pcoll_free(request, request_free);
  mana_freed_recv_reap(0);
  int rc = mana_freed_recv_adopt(request) ? MPI_SUCCESS : request_free(request);
  MANA_PARK_CHECK();
  return rc;
}

/* A recorded persistent request is active from MPI_Start to its completion: a send is counted
 * when it starts, a receive takes its place in the posting order. */
static void mark_started(MPI_Request *requests, int n, int rc)
{
  for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
    struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)requests[i]);
    if (!s || !s->meta)
      continue;
    s->flags |= MANA_SLOT_ACTIVE;
    if (s->flags & MANA_SLOT_REQ_PART) {
      mana_part_started(s);
      continue;
    }
    struct mana_req_extra *e = mana_req_extra(mana_req_index((uint32_t)requests[i]));
    if (e && (s->flags & MANA_SLOT_REQ_SEND))
      mana_count_send(e->comm, e->peer);
    else if (e && (s->flags & MANA_SLOT_REQ_RECV))
      e->seq = ++mana_recv_seq;
  }
}

static int is_pcoll(MPI_Request v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)v);
  return s && (s->flags & MANA_SLOT_REQ_PCOLL);
}

/* A persistent receive started while a buffered message (drained before a checkpoint)
 * matches it takes that message, as MPI_Irecv does: MPI would match it to the next message
 * sent, which may not fit.  The request is complete at once; its stand-in keeps the inactive
 * real request for when it completes (mana_req_make_done).  1 if served so. */
static int start_buffered(MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  if (!s || !(s->flags & MANA_SLOT_PERSISTENT) ||
      (s->flags & (MANA_SLOT_REQ_PCOLL | MANA_SLOT_REQ_PART)))
    return 0;
  const struct preq_rec *r = s->meta;
  if (!r || r->mode != PREQ_RECV)
    return 0;
  struct mana_drained *m = mana_drained_take(r->comm, r->peer, r->tag);
  if (!m)
    return 0;
  MPI_Status st = {.MPI_ERROR = MPI_SUCCESS};
  mana_drained_deliver_real(m, r->buf, r->count, mana_dt_arg_real(&r->type), &st);
  /* Out of memory for the stand-in: the message is delivered and the status lost, the
   * request stays inactive (MPI_Wait on it returns at once with an empty status). */
  if (mana_req_make_done(mana_req_index((uint32_t)*request), &st) != MPI_SUCCESS)
    return 1;
  mark_started(request, 1, MPI_SUCCESS);
  return 1;
}

int MPI_Start(MPI_Request *request)
{
  if (is_pcoll(*request))
    return mana_pcoll_start(request);
  if (__builtin_expect(mana_drained_head != NULL, 0) && start_buffered(request)) {
    MANA_PARK_CHECK();
    return MPI_SUCCESS;
  }
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL_NOPARK(MPI_Start, &real);
  settle(request, real, 0, NULL);
  mark_started(request, 1, rc);
  MANA_PARK_CHECK();
  return rc;
}

/* Runs `body` on a real copy of the request array, then settles every entry with `settle`
 * (a call naming `real`).  A null array goes to MPI as it is: it is fine with no requests,
 * and MPI reports it otherwise. */
#define WITH_REAL_REQUESTS(n, virt, real, body, settle)                                       \
  do {                                                                                        \
    MPI_Request stack_[MANA_STACK_HANDLES];                                                   \
    MPI_Request *real =                                                                       \
        (virt) ? mana_real_array_request((virt), (size_t)((n) > 0 ? (n) : 0), stack_) : NULL; \
    body;                                                                                     \
    if (real)                                                                                 \
      settle;                                                                                 \
    if (real != stack_)                                                                       \
      free(real);                                                                             \
  } while (0)

int MPI_Startall(int count, MPI_Request array_of_requests[])
{
  int rc;
  /* A persistent collective's start is counted on the clock before it enters MPI, and a
   * receive may be served by a buffered message: the requests are then started one by one,
   * in order (MPI_Startall is MPI_Start on each). */
  for (int i = 0; i < count; i++)
    if (is_pcoll(array_of_requests[i]) || __builtin_expect(mana_drained_head != NULL, 0)) {
      rc = MPI_SUCCESS;
      for (int k = 0; k < count && rc == MPI_SUCCESS; k++)
        rc = MPI_Start(&array_of_requests[k]);
      return rc;
    }
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL_NOPARK(MPI_Startall, count, real),
                     settle_all(count, array_of_requests, real, 0, NULL));
  mark_started(array_of_requests, count, rc);
  MANA_PARK_CHECK();
  return rc;
}

/* The statuses array a completion call fills: the application's (which may be NULL when
 * there are no requests), or ours when it ignores them (receives are counted from them). */
#define WITH_STATUSES(n, app, st, body)                                                  \
  do {                                                                                   \
    MPI_Status stack_st_[MANA_STACK_HANDLES];                                            \
    size_t n_st_ = (size_t)((n) > 0 ? (n) : 0);                                          \
    MPI_Status *st = (app) != MPI_STATUSES_IGNORE  ? (app)                               \
                     : n_st_ <= MANA_STACK_HANDLES ? stack_st_                           \
                                                   : malloc(n_st_ * sizeof(MPI_Status)); \
    if (!st && (app) == MPI_STATUSES_IGNORE)                                             \
      return MPI_ERR_NO_MEM;                                                             \
    body;                                                                                \
    if (st != (app) && st != stack_st_)                                                  \
      free(st);                                                                          \
  } while (0)

/* After a park point: the real handles of the requests not completed yet, again. */
static void reread(int n, const MPI_Request virt[], MPI_Request real[], const unsigned char *done)
{
  for (int i = 0; i < n; i++)
    if (!done || !done[i])
      real[i] = real_of(virt[i]);
}

/* Waitall parks with some requests complete: those are settled first, so that no slot keeps
 * a real request MPI has freed while the thread is parked (the drain tests every slot).  Each
 * is settled once (settled[i]): settling it again after a restart wrote the old MPI's handle
 * of a persistent request (reread leaves the completed ones alone) over the one the rebuild
 * gave its slot, and the next MPI_Start failed (MPI 3.1's persistent-request examples, with a
 * synchronous send still unmatched at the checkpoint, tests/mpi_standard).  A request without
 * a slot (MPICH's built-in handle of a send it completed at once) is left to settle_the_rest,
 * which gives the application the null handle MPI wrote into real[i]. */
static void settle_done_so_far(int n, MPI_Request virt[], MPI_Request real[],
                               const unsigned char *done, unsigned char *settled, MPI_Status st[])
{
  for (int i = 0; i < n; i++)
    if (done[i] && !settled[i] && mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt[i])) {
      settled[i] = 1;
      settle_real(&virt[i], &real[i], completed_mark(done[i]), &st[i]);
    }
}

static void settle_the_rest(int n, MPI_Request virt[], MPI_Request real[],
                            const unsigned char *done, const unsigned char *settled,
                            MPI_Status st[])
{
  for (int i = 0; i < n; i++)
    if (!settled[i])
      settle_real(&virt[i], &real[i], completed_mark(done[i]), &st[i]);
}

/* MPICH's MPI_Waitall, when it returns MPI_SUCCESS, sets the error field of the status of every
 * request that was not MPI_REQUEST_NULL (inactive persistent ones too) to MPI_SUCCESS, and
 * programs read it (MPICH's part/multipart); the lower half's loop completes the requests one
 * MPI_Test at a time, which leaves the field alone.  `was_null` is taken at the entry. */
static void waitall_error_fields(int n, const unsigned char *was_null, MPI_Status st[])
{
  for (int i = 0; i < n; i++)
    if (!was_null[i])
      st[i].MPI_ERROR = MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
  int rc;
  /* done[count], then was_null[count], then settled[count] */
  unsigned char stack_done[3 * MANA_STACK_HANDLES] = {0};
  unsigned char *done = count <= MANA_STACK_HANDLES ? stack_done : calloc((size_t)count, 3);
  if (!done)
    return MPI_ERR_NO_MEM;
  unsigned char *was_null = done + (count > 0 ? count : 0);
  unsigned char *settled = was_null + (count > 0 ? count : 0);
  for (int i = 0; i < count; i++)
    was_null[i] = array_of_requests[i] == MPI_REQUEST_NULL;
  WITH_STATUSES(count, array_of_statuses, st, {
    WITH_REAL_REQUESTS(
        count, array_of_requests, real,
        {
          for (;;) {
            int flag = 0;
            rc = WAIT_NOPARK(array_of_requests, count, waitall_until, count, real, done, &flag, st);
            if (rc != MPI_SUCCESS || flag)
              break;
            if (MANA_BOUNDARY->park_requested) {
              settle_done_so_far(count, array_of_requests, real, done, settled, st);
              mana_park_point();
              reread(count, array_of_requests, real, done);
            }
          }
        },
        settle_the_rest(count, array_of_requests, real, done, settled, st));
  });
  if (rc == MPI_SUCCESS && array_of_statuses != MPI_STATUSES_IGNORE)
    waitall_error_fields(count, was_null, array_of_statuses);
  if (done != stack_done)
    free(done);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
  int rc, flag = 0;
  MPI_Status local, *st = STATUS_OR_LOCAL(status, local);
  WITH_REAL_REQUESTS(
      count, array_of_requests, real,
      {
        for (;;) {
          flag = 0;
          rc = WAIT_NOPARK(array_of_requests, count, testany_until, count, real, index, &flag, st);
          if (rc != MPI_SUCCESS || flag)
            break;
          mana_park_point();
          reread(count, array_of_requests, real, NULL);
        }
      },
      settle_named(count, array_of_requests, real, flag, index, st)); /* with an error too */
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_STATUSES(incount, array_of_statuses, st, {
    WITH_REAL_REQUESTS(
        incount, array_of_requests, real,
        {
          for (;;) {
            *outcount = 0;
            rc = WAIT_NOPARK(array_of_requests, incount, testsome_until, incount, real, outcount,
                             array_of_indices, st);
            if (rc != MPI_SUCCESS || *outcount != 0)
              break;
            mana_park_point();
            reread(incount, array_of_requests, real, NULL);
          }
        },
        settle_named(incount, array_of_requests, real, *outcount != MPI_UNDEFINED ? *outcount : 0,
                     array_of_indices, st));
  });
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
  int rc;
  WITH_STATUSES(count, array_of_statuses, st, {
    WITH_REAL_REQUESTS(count, array_of_requests, real,
                       rc = MANA_LH_CALL_NOPARK(MPI_Testall, count, real, cleared(flag), st),
                       settle_all(count, array_of_requests, real, flag && *flag, st));
  });
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
  int rc;
  MPI_Status local, *st = STATUS_OR_LOCAL(status, local);
  WITH_REAL_REQUESTS(
      count, array_of_requests, real,
      rc = MANA_LH_CALL_NOPARK(MPI_Testany, count, real, index, cleared(flag), st),
      settle_named(count, array_of_requests, real, flag && *flag && index, index, st));
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_STATUSES(incount, array_of_statuses, st, {
    WITH_REAL_REQUESTS(
        incount, array_of_requests, real,
        rc = MANA_LH_CALL_NOPARK(MPI_Testsome, incount, real, cleared(outcount), array_of_indices,
                                 st),
        settle_named(incount, array_of_requests, real,
                     outcount && *outcount != MPI_UNDEFINED && array_of_indices ? *outcount : 0,
                     array_of_indices, st));
  });
  MANA_PARK_CHECK();
  return rc;
}

/* ---- persistent point-to-point requests ---- */

static void record(enum preq_mode mode, int large, const void *buf, MPI_Count count,
                   MPI_Datatype datatype, int peer, int tag, MPI_Comm comm,
                   const MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  struct mana_req_extra *e = s ? mana_req_extra(mana_req_index((uint32_t)*request)) : NULL;
  struct preq_rec *r = e ? malloc(sizeof(*r)) : NULL;
  if (!r)
    return; /* a live request without a record is refused at checkpoint */
  *r = (struct preq_rec){mode, large, (void *)buf, count, {0, NULL}, peer, tag, comm};
  mana_dt_arg_get(datatype, &r->type);
  s->meta = r;
  s->flags |= MANA_SLOT_PERSISTENT | (mode == PREQ_RECV ? MANA_SLOT_REQ_RECV : MANA_SLOT_REQ_SEND);
  e->comm = comm; /* what MPI_Start counts, and what completions count on */
  e->peer = peer;
  e->tag = tag;
}

#define RECORD_INIT(name, mode, large, count_t, buf_t)                                        \
  void mana_after_##name(buf_t *buf, count_t count, MPI_Datatype datatype, int peer, int tag, \
                         MPI_Comm comm, MPI_Request *request)                                 \
  {                                                                                           \
    record(mode, large, buf, count, datatype, peer, tag, comm, request);                      \
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
  if (s->flags & MANA_SLOT_REQ_PCOLL) {
    mana_pcoll_release(s);
    return;
  }
  if (s->flags & MANA_SLOT_REQ_PART) {
    mana_part_release(s);
    return;
  }
  struct preq_rec *r = s->meta;
  mana_dt_arg_put(&r->type);
  free(r);
}

static int comm_live(MPI_Comm v)
{
  return v == MPI_COMM_WORLD || v == MPI_COMM_SELF ||
         mana_handle_slot(MANA_KIND_COMM, (uint32_t)v) != NULL;
}

/* Why request slot i cannot be checkpointed, or NULL.  Pending sends, receives and
 * non-blocking collectives are fine: the drain completes them or, for receives nobody sent
 * to yet, the restart posts them again. */
static const char *refusal(const struct mana_slot *s, uint32_t i)
{
  const struct preq_rec *r = s->meta;
  uint32_t f = s->flags;
  if (f & MANA_SLOT_GREQUEST)
    return NULL; /* started again at restart (grequest.c) */
  if (f & MANA_SLOT_REQ_PCOLL)
    return mana_pcoll_refusal(s);
  if (f & MANA_SLOT_REQ_PART)
    return mana_part_refusal(s);
  if (r)
    return !comm_live(r->comm)         ? "the communicator was freed under"
           : !mana_dt_arg_ok(&r->type) ? "no usable datatype record for"
                                       : NULL;
  if (f & MANA_SLOT_REQ_DONE)
    return NULL;
  if (((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_SEND)) || (f & MANA_SLOT_REQ_PAIR)) {
    const struct mana_req_extra *e = mana_req_extra(i);
    return !e || !comm_live(e->comm)   ? "the communicator was freed under the pending receive"
           : !mana_dt_arg_ok(&e->type) ? "no usable datatype record for"
                                       : NULL;
  }
  if (f & (MANA_SLOT_REQ_SEND | MANA_SLOT_REQ_COLL | MANA_SLOT_REQ_FILE | MANA_SLOT_REQ_RMA))
    return NULL;
  return "mana cannot drain an operation in progress (a collective file operation or a "
         "generalized operation):";
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const char *why = (s->flags & MANA_SLOT_USED) ? refusal(s, i) : NULL;
    if (why) {
      mana_reason(reason, len, why, "request", mana_handle_make(MANA_KIND_REQUEST, i));
      return 0;
    }
  }
  return 1;
}

/* A pending receive (posted, nothing matched: the drain made sure no message is on its way)
 * is cancelled before its request is freed. */
static void cancel_and_free(MPI_Request real, int persistent)
{
  MPI_Status st;
  MANA_LH_CALL_NOPARK(MPI_Cancel, &real);
  MANA_LH_CALL_NOPARK(MPI_Wait, &real, &st);
  if (persistent && real != MPI_REQUEST_NULL)
    MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Request real = (MPI_Request)s->real;
    uint32_t f = s->flags;
    struct mana_req_extra *e = mana_req_extra(i);
    if (!(f & MANA_SLOT_USED) || real == MPI_REQUEST_NULL || !e)
      continue;
    if (f & MANA_SLOT_GREQUEST) {
      mana_greq_discard(i, real);
    } else if ((f & MANA_SLOT_REQ_PAIR) && !(f & MANA_SLOT_REQ_DONE)) {
      mana_pair_discard(i, 1);
    } else if (f & MANA_SLOT_REQ_DONE) { /* the stand-in, and the persistent request behind it */
      MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
      if (s->meta)
        MANA_LH_CALL_NOPARK(MPI_Request_free, &e->saved_real);
    } else if ((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_SEND) &&
               (!s->meta || (f & MANA_SLOT_ACTIVE))) {
      cancel_and_free(real, s->meta != NULL);
    } else if (s->meta) {
      MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
    }
  }
  mana_drain_comm_discard();
  return MPI_SUCCESS;
}

/* The large-count forms take the same arguments with an MPI_Count count. */
#define INIT(fn)                                                                           \
  (r->large ? MANA_LH_CALL_NOPARK(fn##_c, r->buf, r->count, type, peer, r->tag, comm, out) \
            : MANA_LH_CALL_NOPARK(fn, r->buf, (int)r->count, type, peer, r->tag, comm, out))

static int make(const struct preq_rec *r, MPI_Request *out)
{
  MPI_Datatype type = mana_dt_arg_real(&r->type);
  int peer = r->peer;
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

/* ---- after a restart: stand-ins and pending receives ---- */

struct pending {
  uint64_t seq;
  uint32_t slot;
};

static int by_seq(const void *a, const void *b)
{
  const struct pending *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* MPI matches a message with the receive posted first: they are posted again in the order
 * the application posted them. */
static int repost(struct pending *p, size_t n)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  qsort(p, n, sizeof(*p), by_seq);
  for (size_t k = 0; k < n; k++) {
    struct mana_slot *s = mana_slot_at(t, p[k].slot);
    const struct mana_req_extra *e = mana_req_extra(p[k].slot);
    MPI_Request real = (MPI_Request)s->real;
    int rc;
    if (s->flags & MANA_SLOT_REQ_PAIR) {
      if ((rc = mana_pair_repost(p[k].slot)) != MPI_SUCCESS)
        return mana_rebuild_error("pending MPI_Isendrecv",
                                  mana_handle_make(MANA_KIND_REQUEST, p[k].slot), "MPI_Irecv", rc);
      continue;
    } else if (s->meta) {
      rc = MANA_LH_CALL_NOPARK(MPI_Start, &real);
    } else {
      MPI_Datatype type = mana_dt_arg_real(&e->type);
      int peer = e->peer;
      MPI_Comm comm = MANA_REAL(COMM, MPI_Comm, e->comm);
      rc = e->large
               ? MANA_LH_CALL_NOPARK(MPI_Irecv_c, e->buf, e->count, type, peer, e->tag, comm, &real)
               : MANA_LH_CALL_NOPARK(MPI_Irecv, e->buf, (int)e->count, type, peer, e->tag, comm,
                                     &real);
    }
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("pending receive", mana_handle_make(MANA_KIND_REQUEST, p[k].slot),
                                s->meta ? "MPI_Start" : "MPI_Irecv", rc);
    s->real = (uint32_t)real;
  }
  return MPI_SUCCESS;
}

/* Whether slot s holds a request only a drain can settle: in progress and not a receive the
 * rebuild re-posts (rebuild's own test, ahead of any discarding). */
static int needs_drain(const struct mana_slot *s, const struct mana_req_extra *e)
{
  uint32_t f = s->flags;
  if (!(f & MANA_SLOT_USED) || (f & (MANA_SLOT_REQ_DONE | MANA_SLOT_GREQUEST)) ||
      (s->meta && !(f & MANA_SLOT_ACTIVE)))
    return 0; /* a generalized request is the application's to complete, drained or not */
  if (f & MANA_SLOT_REQ_PAIR)
    return !e || e->pair_send != MPI_REQUEST_NULL;
  return !((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_SEND));
}

int mana_requests_rebuildable_undrained(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity; i++)
    if (needs_drain(mana_slot_at(t, i), mana_req_extra(i))) {
      mana_reason(reason, len, "only a checkpoint's drain can complete it", "request",
                  mana_handle_make(MANA_KIND_REQUEST, i));
      return 0;
    }
  return 1;
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  struct pending *pending = calloc(t->in_use ? t->in_use : 1, sizeof(*pending));
  size_t n = 0;
  int rc = pending ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  mana_drain_comm_forget(); /* gone with the old MPI, or freed by discard */
  mana_drain_comm_make();
  if (rc == MPI_SUCCESS)
    rc = mana_pcoll_rebuild();
  if (rc == MPI_SUCCESS)
    rc = mana_part_rebuild();
  for (uint32_t i = 0; i < t->capacity && rc == MPI_SUCCESS; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct mana_req_extra *e = mana_req_extra(i);
    uint32_t f = s->flags, v = mana_handle_make(MANA_KIND_REQUEST, i);
    MPI_Request real;
    if (!(f & MANA_SLOT_USED) || (f & MANA_SLOT_REQ_PART)) /* made above */
      continue;
    if (f & MANA_SLOT_GREQUEST) {
      rc = mana_greq_remake(i);
      continue;
    }
    if (s->meta && !(f & MANA_SLOT_REQ_PCOLL)) { /* persistent collectives: made above */
      if ((rc = make(s->meta, &real)) != MPI_SUCCESS)
        return mana_rebuild_error("persistent request", v, "MPI_*_init", rc);
      s->real = (uint32_t)real;
    }
    if (f & MANA_SLOT_REQ_DONE) {
      s->flags &= ~MANA_SLOT_REQ_DONE; /* made again: the stand-in saves the new request */
      if ((rc = mana_req_make_done(i, &e->status)) != MPI_SUCCESS)
        rc = mana_rebuild_error("completed request", v, "MPI_Grequest_start", rc);
    } else if (((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_SEND) &&
                (!s->meta || (f & MANA_SLOT_ACTIVE))) ||
               ((f & MANA_SLOT_REQ_PAIR) && e->pair_send == MPI_REQUEST_NULL)) {
      pending[n++] = (struct pending){e->seq, i};
    } else if (needs_drain(s, e)) {
      fprintf(stderr,
              "mana: rebuilding MPI objects: request %#x is in progress and was not "
              "drained\n",
              v);
      rc = MPI_ERR_REQUEST;
    }
  }
  if (rc == MPI_SUCCESS)
    rc = repost(pending, n);
  free(pending);
  return rc;
}

const struct mana_kind_ops mana_request_ops = {
    .name = "request",
    .kind = MANA_KIND_REQUEST,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
