/* Non-blocking point-to-point calls and probes, written by hand for the drain (p2p.h): sends
 * are counted when they start, requests are marked with their kind, receives record what a
 * restart needs to post them again, and receives and probes look at the buffered messages
 * first (one load on the fast path: there are almost never any). */
#include "p2p.h"

#define DT(v) MANA_REAL(DATATYPE, MPI_Datatype, v)
#define COMM(v) MANA_REAL(COMM, MPI_Comm, v)

#define ISEND(name, count_t)                                                                    \
  int name(const void *buf, count_t count, MPI_Datatype datatype, int dest, int tag,            \
           MPI_Comm comm, MPI_Request *request)                                                 \
  {                                                                                             \
    MPI_Request real;                                                                           \
    int rc = MANA_LH_CALL_NOPARK(name, buf, count, DT(datatype), dest, tag, COMM(comm), &real); \
    if (rc == MPI_SUCCESS) {                                                                    \
      mana_count_send(comm, dest);                                                              \
      *request = MANA_NEW(REQUEST, MPI_Request, real);                                          \
      mana_request_mark((uint32_t)*request, MANA_SLOT_REQ_SEND);                                \
    }                                                                                           \
    MANA_PARK_CHECK();                                                                          \
    return rc;                                                                                  \
  }
ISEND(MPI_Isend, int)
ISEND(MPI_Ibsend, int)
ISEND(MPI_Issend, int)
ISEND(MPI_Irsend, int)
ISEND(MPI_Isend_c, MPI_Count)
ISEND(MPI_Ibsend_c, MPI_Count)
ISEND(MPI_Issend_c, MPI_Count)
ISEND(MPI_Irsend_c, MPI_Count)

/* A request that is complete from the start, reporting *st (a buffered message delivered). */
static int done_request(const MPI_Status *st, MPI_Request *request)
{
  uint32_t v = mana_handle_new(MANA_KIND_REQUEST, (uint32_t)MPI_REQUEST_NULL);
  int rc = mana_req_make_done(mana_req_index(v), st);
  if (rc != MPI_SUCCESS) {
    mana_handle_retire(MANA_KIND_REQUEST, v);
    return rc;
  }
  *request = (MPI_Request)v;
  return MPI_SUCCESS;
}

/* The receive matches a buffered message: delivered now, the request is complete already
 * (an error such as MPI_ERR_TRUNCATE shows when it is completed, as MPI's would). */
static int irecv_buffered(struct mana_drained *m, void *buf, MPI_Count count, MPI_Datatype datatype,
                          MPI_Comm comm, MPI_Request *request)
{
  MPI_Status st = {.MPI_ERROR = MPI_SUCCESS};
  mana_drained_deliver(m, buf, count, datatype, comm, &st);
  int rc = done_request(&st, request);
  MANA_PARK_CHECK();
  return rc;
}

#define IRECV(name, count_t, large)                                                               \
  int name(void *buf, count_t count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,   \
           MPI_Request *request)                                                                  \
  {                                                                                               \
    if (__builtin_expect(mana_drained_head != NULL, 0)) {                                         \
      struct mana_drained *m = mana_drained_take(comm, source, tag);                              \
      if (m)                                                                                      \
        return irecv_buffered(m, buf, count, datatype, comm, request);                            \
    }                                                                                             \
    MPI_Request real;                                                                             \
    int rc = MANA_LH_CALL_NOPARK(name, buf, count, DT(datatype), source, tag, COMM(comm), &real); \
    if (rc == MPI_SUCCESS) {                                                                      \
      *request = MANA_NEW(REQUEST, MPI_Request, real);                                            \
      mana_req_note_recv_fast(*request, buf, count, datatype, source, tag, comm, large);          \
    }                                                                                             \
    MANA_PARK_CHECK();                                                                            \
    return rc;                                                                                    \
  }
IRECV(MPI_Irecv, int, 0)
IRECV(MPI_Irecv_c, MPI_Count, 1)

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  if (__builtin_expect(mana_drained_head != NULL, 0) &&
      mana_drained_probe(comm, source, tag, status)) {
    *flag = 1;
    MANA_PARK_CHECK();
    return MPI_SUCCESS;
  }
  return MANA_LH_CALL(MPI_Iprobe, source, tag, COMM(comm), flag, status);
}

/* ---- matched probes (message handles: message.c) ---- */

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
  if (__builtin_expect(mana_drained_head != NULL, 0)) {
    struct mana_drained *m = mana_drained_take(comm, source, tag);
    if (m) {
      *message = mana_message_buffered(m, comm, status);
      *flag = 1;
      MANA_PARK_CHECK();
      return MPI_SUCCESS;
    }
  }
  MPI_Message real;
  MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = MANA_LH_CALL_NOPARK(MPI_Improbe, source, tag, COMM(comm), flag, &real, st);
  if (rc == MPI_SUCCESS && *flag)
    *message = mana_message_new(real, comm, st);
  MANA_PARK_CHECK();
  return rc;
}

#define IMRECV(name, count_t, large)                                                          \
  int name(void *buf, count_t count, MPI_Datatype datatype, MPI_Message *message,             \
           MPI_Request *request)                                                              \
  {                                                                                           \
    MPI_Comm comm;                                                                            \
    MPI_Message real;                                                                         \
    struct mana_drained *m = mana_message_take(message, &comm, &real);                        \
    if (m)                                                                                    \
      return irecv_buffered(m, buf, count, datatype, comm, request);                          \
    MPI_Request rreq;                                                                         \
    int rc = MANA_LH_CALL_NOPARK(name, buf, count, DT(datatype), &real, &rreq);               \
    if (rc == MPI_SUCCESS) {                                                                  \
      MANA_RETIRE(MESSAGE, MPI_Message, *message);                                            \
      *message = real;                                                                        \
      *request = MANA_NEW(REQUEST, MPI_Request, rreq);                                        \
      if (comm != MPI_COMM_NULL) /* MPI_MESSAGE_NO_PROC has none: nothing to count */         \
        mana_req_note_recv(*request, buf, count, datatype, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, \
                           large);                                                            \
    }                                                                                         \
    MANA_PARK_CHECK();                                                                        \
    return rc;                                                                                \
  }
IMRECV(MPI_Imrecv, int, 0)
IMRECV(MPI_Imrecv_c, MPI_Count, 1)

/* ---- MPI_Isendrecv: an Isend and an Irecv behind one request (sendrecv_pair.c).  If a
 * buffered message matches its receive, the receive is served from it at once and the
 * request is the send's, with the receive's status kept to report at completion
 * (MANA_SLOT_REQ_STATUS). ---- */

#define ISENDRECV(name, isend, count_t, large)                                                     \
  int name(const void *sendbuf, count_t sendcount, MPI_Datatype sendtype, int dest, int sendtag,   \
           void *recvbuf, count_t recvcount, MPI_Datatype recvtype, int source, int recvtag,       \
           MPI_Comm comm, MPI_Request *request)                                                    \
  {                                                                                                \
    MPI_Request real;                                                                              \
    int rc;                                                                                        \
    struct mana_drained *m = NULL;                                                                 \
    if (__builtin_expect(mana_drained_head != NULL, 0))                                            \
      m = mana_drained_take(comm, source, recvtag);                                                \
    if (m) {                                                                                       \
      MPI_Status st = {.MPI_ERROR = MPI_SUCCESS};                                                  \
      mana_drained_deliver(m, recvbuf, recvcount, recvtype, comm, &st);                            \
      rc = MANA_LH_CALL_NOPARK(isend, sendbuf, sendcount, DT(sendtype), dest, sendtag, COMM(comm), \
                               &real);                                                             \
      if (rc == MPI_SUCCESS) {                                                                     \
        mana_count_send(comm, dest);                                                               \
        *request = MANA_NEW(REQUEST, MPI_Request, real);                                           \
        mana_req_note_status(*request, dest, comm, &st);                                           \
      }                                                                                            \
    } else {                                                                                       \
      rc = mana_pair_post(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,         \
                          recvtype, source, recvtag, comm, large, 0, request);                     \
    }                                                                                              \
    MANA_PARK_CHECK();                                                                             \
    return rc;                                                                                     \
  }
ISENDRECV(MPI_Isendrecv, MPI_Isend, int, 0)
ISENDRECV(MPI_Isendrecv_c, MPI_Isend_c, MPI_Count, 1)

/* With a buffered message to receive, the data to send is packed aside first (the message
 * lands in the same buffer); the packed copy lives until the request completes. */
#define ISENDRECV_REPLACE(name, pack_size, pack, isend, count_t, large)                          \
  int name(void *buf, count_t count, MPI_Datatype datatype, int dest, int sendtag, int source,   \
           int recvtag, MPI_Comm comm, MPI_Request *request)                                     \
  {                                                                                              \
    MPI_Request real;                                                                            \
    int rc;                                                                                      \
    struct mana_drained *m = NULL;                                                               \
    if (__builtin_expect(mana_drained_head != NULL, 0))                                          \
      m = mana_drained_take(comm, source, recvtag);                                              \
    if (m) {                                                                                     \
      MPI_Status st = {.MPI_ERROR = MPI_SUCCESS};                                                \
      count_t size = 0, position = 0;                                                            \
      rc = MANA_LH_CALL_NOPARK(pack_size, count, DT(datatype), COMM(comm), &size);               \
      void *packed = rc == MPI_SUCCESS ? malloc(size > 0 ? (size_t)size : 1) : NULL;             \
      if (!packed)                                                                               \
        return rc == MPI_SUCCESS ? MPI_ERR_NO_MEM : rc;                                          \
      rc = MANA_LH_CALL_NOPARK(pack, buf, count, DT(datatype), packed, size, &position,          \
                               COMM(comm));                                                      \
      if (rc == MPI_SUCCESS)                                                                     \
        rc = MANA_LH_CALL_NOPARK(isend, packed, position, MPI_PACKED, dest, sendtag, COMM(comm), \
                                 &real);                                                         \
      if (rc != MPI_SUCCESS) {                                                                   \
        free(packed);                                                                            \
        return rc;                                                                               \
      }                                                                                          \
      mana_drained_deliver(m, buf, count, datatype, comm, &st);                                  \
      mana_count_send(comm, dest);                                                               \
      *request = MANA_NEW(REQUEST, MPI_Request, real);                                           \
      mana_req_note_status(*request, dest, comm, &st);                                           \
      mana_req_extra(mana_req_index((uint32_t)*request))->buf = packed;                          \
    } else {                                                                                     \
      rc = mana_pair_post(buf, count, datatype, dest, sendtag, buf, count, datatype, source,     \
                          recvtag, comm, large, 1, request);                                     \
    }                                                                                            \
    MANA_PARK_CHECK();                                                                           \
    return rc;                                                                                   \
  }
ISENDRECV_REPLACE(MPI_Isendrecv_replace, MPI_Pack_size, MPI_Pack, MPI_Isend, int, 0)
ISENDRECV_REPLACE(MPI_Isendrecv_replace_c, MPI_Pack_size_c, MPI_Pack_c, MPI_Isend_c, MPI_Count, 1)
