/* MPI_Isendrecv and MPI_Isendrecv_replace as a pair of requests the stub posts itself: an
 * Isend and an Irecv, behind a generalized request (MPIX_Grequest_start with a poll function)
 * that completes once both have.
 *
 * Why not MPI's own: MPICH completes an MPI_Isendrecv as one request, so a drain could not
 * finish it when the peer parked before sending what its receive waits for (the drain timed
 * out: "1 send(s) ... still pending").  As a pair, the drain completes the send like any
 * other and the receive is posted again at restart like any other pending receive.
 *
 * The slot (MANA_SLOT_REQ_PAIR) keeps the receive's arguments in its extras as an MPI_Irecv
 * would (p2p.h), the two real requests, and the receive's status.  MPICH calls the poll
 * function inside the Wait/Test family and in the drain, on the lower half's thread pointer:
 * it makes MPI calls and raw system calls only.  The receive is counted there, when it
 * completes (it names its real source; MPICH's own MPI_Isendrecv reported source 0).  The
 * packed copy a _replace sends from is upper-half memory, freed on an application thread
 * when the stub sees the request complete (p2p_requests.c), never in the poll function. */
#include <stdlib.h>

#include "p2p.h"

static int pair_poll(void *extra, MPI_Status *status)
{
  (void)status;
  struct mana_req_extra *e = extra;
  int flag = 0;
  if (e->pair_send != MPI_REQUEST_NULL) {
    if (MANA_LH_ANY(MPI_Test, &e->pair_send, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      e->pair_send = MPI_REQUEST_NULL; /* failed: MPI freed it; the receive tells the rest */
  }
  if (e->pair_recv != MPI_REQUEST_NULL) {
    MPI_Status st = {0};
    int rc = MANA_LH_ANY(MPI_Test, &e->pair_recv, &flag, &st);
    if (rc != MPI_SUCCESS) {
      st.MPI_ERROR = rc;
      e->pair_recv = MPI_REQUEST_NULL;
      flag = 1;
    }
    if (flag) {
      e->status = st;
      mana_count_recv(e->comm, &st);
    }
  }
  if (e->pair_send == MPI_REQUEST_NULL && e->pair_recv == MPI_REQUEST_NULL && !e->pair_done) {
    e->pair_done = 1;
    MANA_LH_ANY(MPI_Grequest_complete, e->pair_greq);
  }
  return MPI_SUCCESS;
}

/* MPICH requires one; the stub's own waits poll with MPI_Test (parkable), so this serves only
 * MPI's blocking waits: polls until every request given is complete or the timeout. */
static int pair_wait(int count, void **states, double timeout, MPI_Status *status)
{
  double until = MANA_LH_ANY(MPI_Wtime) + timeout;
  for (;;) {
    int all = 1;
    for (int i = 0; i < count; i++) {
      pair_poll(states[i], status);
      all &= ((struct mana_req_extra *)states[i])->pair_done;
    }
    if (all || (timeout > 0 && MANA_LH_ANY(MPI_Wtime) > until))
      return MPI_SUCCESS;
  }
}

static int pair_query(void *extra, MPI_Status *status)
{
  const struct mana_req_extra *e = extra;
  *status = e->status;
  return e->status.MPI_ERROR;
}

/* Freed by the application before it completed: the halves complete on their own (the
 * receive is then never counted, as for any receive freed while pending). */
static int pair_free(void *extra)
{
  struct mana_req_extra *e = extra;
  if (e->pair_send != MPI_REQUEST_NULL) {
    MANA_LH_ANY(MPI_Request_free, &e->pair_send);
    e->pair_packed = NULL; /* still being sent from: left to the process */
  }
  if (e->pair_recv != MPI_REQUEST_NULL)
    MANA_LH_ANY(MPI_Request_free, &e->pair_recv);
  return MPI_SUCCESS;
}

static int pair_cancel(void *extra, int complete)
{
  struct mana_req_extra *e = extra;
  if (!complete && e->pair_recv != MPI_REQUEST_NULL)
    MANA_LH_ANY(MPI_Cancel, &e->pair_recv);
  return MPI_SUCCESS;
}

/* The generalized request in front of the halves, made the slot's real request. */
static int start_front(struct mana_slot *s, struct mana_req_extra *e)
{
  MPI_Request greq;
  e->pair_done = 0;
  int rc = MANA_LH_ANY(MPIX_Grequest_start, pair_query, pair_free, pair_cancel, pair_poll,
                       pair_wait, e, &greq);
  if (rc == MPI_SUCCESS) {
    e->pair_greq = greq;
    s->real = (uint32_t)greq;
  }
  return rc;
}

static int post_recv(const struct mana_req_extra *e, MPI_Request *out)
{
  MPI_Datatype type = mana_dt_arg_real(&e->type);
  MPI_Comm comm = MANA_REAL(COMM, MPI_Comm, e->comm);
  return e->large
             ? MANA_LH_CALL_NOPARK(MPI_Irecv_c, e->buf, e->count, type, e->peer, e->tag, comm, out)
             : MANA_LH_CALL_NOPARK(MPI_Irecv, e->buf, (int)e->count, type, e->peer, e->tag, comm,
                                   out);
}

int mana_pair_post(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, int large, int replace,
                   MPI_Request *request)
{
  MPI_Comm rcomm = MANA_REAL(COMM, MPI_Comm, comm);
  MPI_Datatype rsend = MANA_REAL(DATATYPE, MPI_Datatype, sendtype);
  void *packed = NULL;
  int rc = MPI_SUCCESS;
  if (replace) { /* the receive lands where the data to send is: send a packed copy */
    MPI_Count size = 0, position = 0;
    rc = MANA_LH_CALL_NOPARK(MPI_Pack_size_c, sendcount, rsend, rcomm, &size);
    packed = rc == MPI_SUCCESS ? malloc((size_t)(size > 0 ? size : 1)) : NULL;
    if (rc == MPI_SUCCESS && !packed)
      rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
      rc = MANA_LH_CALL_NOPARK(MPI_Pack_c, sendbuf, sendcount, rsend, packed, size, &position,
                               rcomm);
    sendbuf = packed;
    sendcount = position;
    rsend = MPI_PACKED;
  }
  uint32_t v =
      rc == MPI_SUCCESS ? mana_handle_new(MANA_KIND_REQUEST, (uint32_t)MPI_REQUEST_NULL) : 0;
  struct mana_slot *s = v ? mana_handle_slot(MANA_KIND_REQUEST, v) : NULL;
  struct mana_req_extra *e = s ? mana_req_extra(mana_req_index(v)) : NULL;
  if (rc == MPI_SUCCESS && !e)
    rc = MPI_ERR_NO_MEM;
  if (rc != MPI_SUCCESS) {
    if (v)
      mana_handle_retire(MANA_KIND_REQUEST, v);
    free(packed);
    return rc;
  }
  mana_req_fill_recv(s, e, recvbuf, recvcount, source, recvtag, comm, large);
  s->flags = (s->flags & ~MANA_SLOT_REQ_RECV) | MANA_SLOT_REQ_PAIR;
  mana_dt_arg_get(recvtype, &e->type);
  e->pair_send = e->pair_recv = MPI_REQUEST_NULL;
  e->pair_packed = packed;
  e->status = (MPI_Status){0};
  rc = large ? MANA_LH_CALL_NOPARK(MPI_Isend_c, sendbuf, sendcount, rsend, dest, sendtag, rcomm,
                                   &e->pair_send)
             : MANA_LH_CALL_NOPARK(MPI_Isend, sendbuf, (int)sendcount, rsend, dest, sendtag, rcomm,
                                   &e->pair_send);
  if (rc == MPI_SUCCESS) {
    mana_count_send(comm, dest);
    rc = post_recv(e, &e->pair_recv);
  }
  if (rc == MPI_SUCCESS)
    rc = start_front(s, e);
  if (rc != MPI_SUCCESS) { /* as MPI would leave it: nothing the application can wait for */
    if (e->pair_recv != MPI_REQUEST_NULL)
      MANA_LH_CALL_NOPARK(MPI_Request_free, &e->pair_recv);
    if (e->pair_send != MPI_REQUEST_NULL)
      MANA_LH_CALL_NOPARK(MPI_Request_free, &e->pair_send);
    else
      free(packed); /* the send never started: nothing reads it */
    e->pair_packed = NULL;
    if (e->type.rec)
      mana_dt_arg_put(&e->type);
    mana_handle_retire(MANA_KIND_REQUEST, v);
    return rc;
  }
  *request = (MPI_Request)v;
  return MPI_SUCCESS;
}

/* ---- restart, rebuild in place, end of the job ---- */

int mana_pair_repost(uint32_t index)
{
  struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_REQUEST], index);
  struct mana_req_extra *e = mana_req_extra(index);
  e->pair_send = MPI_REQUEST_NULL; /* the drain completed it */
  int rc = post_recv(e, &e->pair_recv);
  if (rc == MPI_SUCCESS)
    rc = start_front(s, e);
  return rc;
}

/* The receive half still posted is cancelled, the front request completed and freed: the
 * rebuild in place (test mode) before it posts the receive again, and a --kill checkpoint
 * before MPI_Finalize. */
void mana_pair_discard(uint32_t index, int free_front)
{
  struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_REQUEST], index);
  struct mana_req_extra *e = mana_req_extra(index);
  if (!e)
    return;
  if (e->pair_recv != MPI_REQUEST_NULL && MANA_LH_ANY(MPI_Cancel, &e->pair_recv) == MPI_SUCCESS)
    MANA_LH_ANY(MPI_Wait, &e->pair_recv, MPI_STATUS_IGNORE);
  e->pair_recv = MPI_REQUEST_NULL;
  if (!free_front)
    return;
  MPI_Request front = (MPI_Request)(uint32_t)s->real;
  if (!e->pair_done) {
    e->pair_done = 1;
    MANA_LH_ANY(MPI_Grequest_complete, front);
  }
  MANA_LH_ANY(MPI_Request_free, &front);
}
