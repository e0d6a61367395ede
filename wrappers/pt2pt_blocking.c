/* Blocking point-to-point calls, made of their non-blocking forms plus a wait that never
 * blocks inside the lower half, so a rank waiting for a message can always be parked; and the
 * buffer of buffered sends, attached again at restart.
 *
 * For the drain (p2p.h): sends are counted when they start, receives when they complete, and
 * receives and probes look at the buffered messages first.  A call that must wait past its
 * first crossing gives its real request a virtual slot before it can park, so the drain sees
 * the operation and a restart can post the receive again. */
#include "p2p.h"
#include "records.h"
#include "stub_hooks.h"

#define DT(v) MANA_REAL(DATATYPE, MPI_Datatype, v)
#define COMM(v) MANA_REAL(COMM, MPI_Comm, v)
#define STATUS_OR_LOCAL(status, local) ((status) == MPI_STATUS_IGNORE ? &(local) : (status))

/* MPI_Send and its modes: started and polled in one crossing into the lower half; only if the
 * rank must park does the wait continue here. */
static int send(enum mana_send_mode mode, const void *buf, int count, MPI_Datatype datatype,
                int dest, int tag, MPI_Comm comm)
{
  MPI_Request req;
  int flag = 0;
  int reroute = mana_comm_errors_need_rerouting(comm);
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  mana_count_send(comm, dest);
  int rc = MANA_UNTIL_NOPARK(send_until, mode, buf, count, DT(datatype), dest, tag, COMM(comm),
                             &req, &flag);
  if (rc != MPI_SUCCESS && flag == -1)
    mana_uncount_send(comm, dest); /* never started */
  if (rc == MPI_SUCCESS && !flag)
    rc = mana_wait_blocking_send(req, dest, comm);
  if (reroute)
    mana_reroute_errors(comm, 0, flag == -1 ? MPI_SUCCESS : rc);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(MANA_SEND_STANDARD, buf, count, datatype, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(MANA_SEND_BUFFERED, buf, count, datatype, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(MANA_SEND_SYNCHRONOUS, buf, count, datatype, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(MANA_SEND_READY, buf, count, datatype, dest, tag, comm);
}

/* Around a wait on a communicator whose errors must reach its own handler (comm_errhandler.c). */
#define REROUTED(comm, call)                              \
  ({                                                      \
    int reroute_ = mana_comm_errors_need_rerouting(comm); \
    if (reroute_)                                         \
      mana_reroute_errors(comm, 1, MPI_SUCCESS);          \
    int rc_ = (call);                                     \
    if (reroute_)                                         \
      rc_ = mana_reroute_errors(comm, 0, rc_);            \
    rc_;                                                  \
  })

/* The large-count forms are rare enough to take two crossings. */
#define BLOCKING_SEND_C(name, start)                                                            \
  int name(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,          \
           MPI_Comm comm)                                                                       \
  {                                                                                             \
    MPI_Request req;                                                                            \
    int rc = MANA_LH_CALL_NOPARK(start, buf, count, DT(datatype), dest, tag, COMM(comm), &req); \
    if (rc == MPI_SUCCESS) {                                                                    \
      mana_count_send(comm, dest);                                                              \
      rc = REROUTED(comm, mana_wait_blocking_send(req, dest, comm));                            \
    }                                                                                           \
    MANA_PARK_CHECK();                                                                          \
    return rc;                                                                                  \
  }
BLOCKING_SEND_C(MPI_Send_c, MPI_Isend_c)
BLOCKING_SEND_C(MPI_Bsend_c, MPI_Ibsend_c)
BLOCKING_SEND_C(MPI_Ssend_c, MPI_Issend_c)
BLOCKING_SEND_C(MPI_Rsend_c, MPI_Irsend_c)

/* MPICH 4.0.2 leaves the status of a non-blocking receive from MPI_PROC_NULL (and of
 * MPI_Isendrecv / MPI_Isendrecv_replace) unset, where the blocking calls fill it in as the
 * standard says; mana's blocking calls must answer like the native blocking ones. */
static void set_proc_null_status(MPI_Status *status)
{
  if (status == MPI_STATUS_IGNORE)
    return;
  MANA_LH_CALL(MPI_Status_set_elements, status, MPI_BYTE, 0);
  MANA_LH_CALL(MPI_Status_set_cancelled, status, 0);
  status->MPI_SOURCE = MPI_PROC_NULL;
  status->MPI_TAG = MPI_ANY_TAG;
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
  MPI_Request req;
  MPI_Status local, *st = STATUS_OR_LOCAL(status, local);
  int flag = 0, rc;
  if (__builtin_expect(mana_drained_head != NULL, 0) &&
      mana_drained_recv(buf, count, datatype, source, tag, comm, status, &rc))
    return rc;
  int reroute = mana_comm_errors_need_rerouting(comm);
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  rc = MANA_UNTIL_NOPARK(recv_until, buf, count, DT(datatype), source, tag, COMM(comm), &req, &flag,
                         st);
  if (flag == 1) /* completed, maybe truncated: the message left MPI either way */
    mana_count_recv(comm, st);
  else if (rc == MPI_SUCCESS && !flag)
    rc = mana_wait_blocking_recv(req, buf, count, datatype, source, tag, comm, 0, st);
  if (reroute)
    mana_reroute_errors(comm, 0, flag == -1 ? MPI_SUCCESS : rc);
  if (rc == MPI_SUCCESS && source == MPI_PROC_NULL)
    set_proc_null_status(status);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status *status)
{
  MPI_Request req;
  MPI_Status local, *st = STATUS_OR_LOCAL(status, local);
  int rc;
  if (__builtin_expect(mana_drained_head != NULL, 0) &&
      mana_drained_recv(buf, count, datatype, source, tag, comm, status, &rc))
    return rc;
  rc = MANA_LH_CALL_NOPARK(MPI_Irecv_c, buf, count, DT(datatype), source, tag, COMM(comm), &req);
  if (rc == MPI_SUCCESS)
    rc = REROUTED(comm,
                  mana_wait_blocking_recv(req, buf, count, datatype, source, tag, comm, 1, st));
  if (rc == MPI_SUCCESS && source == MPI_PROC_NULL)
    set_proc_null_status(status);
  MANA_PARK_CHECK();
  return rc;
}

/* The code of the first failed request of a pair (done[i] 2 or 3 marks a failure,
 * lh_services.h). */
static int first_error(const MPI_Status statuses[2], const unsigned char done[2])
{
  for (int i = 0; i < 2; i++)
    if (done[i] >= 2)
      return statuses[i].MPI_ERROR;
  return MPI_ERR_IN_STATUS;
}

/* What a pair's receive was posted with, should it have to be posted again. */
struct recv_args {
  void *buf;
  MPI_Count count;
  MPI_Datatype type;
  int source, tag, large;
};

/* Waits for a receive and a send started together; the status is the receive's.  If the
 * first crossing does not finish them, the rest of the wait is MPI_Waitall's on virtual
 * requests (which counts the receive when it completes). */
static int wait_pair(MPI_Comm comm, MPI_Request reqs[2], const struct recv_args *a, int dest,
                     MPI_Status *status)
{
  MPI_Status statuses[2];
  unsigned char done[2] = {0, 0};
  int reroute = mana_comm_errors_need_rerouting(comm);
  int flag = 0, rc;
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  rc = MANA_UNTIL_NOPARK(waitall_until, 2, reqs, done, &flag, statuses);
  if (done[0] == 1 || done[0] == 2) /* a truncated receive took its message too */
    mana_count_recv(comm, &statuses[0]);
  if (rc == MPI_SUCCESS && !flag) {
    MPI_Request v[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status later[2];
    if (!done[0]) {
      v[0] = (MPI_Request)mana_handle_new(MANA_KIND_REQUEST, (uint32_t)reqs[0]);
      mana_req_note_recv(v[0], a->buf, a->count, a->type, a->source, a->tag, comm, a->large);
    }
    if (!done[1]) {
      v[1] = (MPI_Request)mana_handle_new(MANA_KIND_REQUEST, (uint32_t)reqs[1]);
      mana_req_note_send(v[1], dest, comm);
    }
    rc = MPI_Waitall(2, v, later);
    for (int i = 0; i < 2; i++)
      if (!done[i]) {
        statuses[i] = later[i];
        done[i] = rc == MPI_ERR_IN_STATUS && later[i].MPI_ERROR != MPI_SUCCESS ? 2 : 1;
      }
  }
  if (rc == MPI_ERR_IN_STATUS)
    rc = first_error(statuses, done);
  if (reroute)
    rc = mana_reroute_errors(comm, 0, rc);
  if (status != MPI_STATUS_IGNORE)
    *status = statuses[0];
  if (rc == MPI_SUCCESS && a->source == MPI_PROC_NULL)
    set_proc_null_status(status);
  MANA_PARK_CHECK();
  return rc;
}

/* The receive is served by a buffered message: then the send alone, blocking as the call is. */
#define SENDRECV_BUFFERED(send_c)                                                            \
  if (__builtin_expect(mana_drained_head != NULL, 0) &&                                      \
      mana_drained_recv(recvbuf, recvcount, recvtype, source, recvtag, comm, status, &rc)) { \
    int rc2 = send_c;                                                                        \
    return rc != MPI_SUCCESS ? rc : rc2;                                                     \
  }

#define BLOCKING_SENDRECV(name, irecv, isend, count_t, send_c, large)                            \
  int name(const void *sendbuf, count_t sendcount, MPI_Datatype sendtype, int dest, int sendtag, \
           void *recvbuf, count_t recvcount, MPI_Datatype recvtype, int source, int recvtag,     \
           MPI_Comm comm, MPI_Status *status)                                                    \
  {                                                                                              \
    MPI_Request reqs[2];                                                                         \
    MPI_Comm real = COMM(comm);                                                                  \
    int rc;                                                                                      \
    SENDRECV_BUFFERED(send_c(sendbuf, sendcount, sendtype, dest, sendtag, comm))                 \
    rc = MANA_LH_CALL_NOPARK(irecv, recvbuf, recvcount, DT(recvtype), source, recvtag, real,     \
                             &reqs[0]);                                                          \
    if (rc != MPI_SUCCESS)                                                                       \
      return rc;                                                                                 \
    rc = MANA_LH_CALL_NOPARK(isend, sendbuf, sendcount, DT(sendtype), dest, sendtag, real,       \
                             &reqs[1]);                                                          \
    if (rc != MPI_SUCCESS) {                                                                     \
      MANA_LH_CALL_NOPARK(MPI_Cancel, &reqs[0]);                                                 \
      MANA_LH_CALL_NOPARK(MPI_Request_free, &reqs[0]);                                           \
      return rc;                                                                                 \
    }                                                                                            \
    mana_count_send(comm, dest);                                                                 \
    struct recv_args a = {recvbuf, recvcount, recvtype, source, recvtag, large};                 \
    return wait_pair(comm, reqs, &a, dest, status);                                              \
  }
BLOCKING_SENDRECV(MPI_Sendrecv, MPI_Irecv, MPI_Isend, int, MPI_Send, 0)
BLOCKING_SENDRECV(MPI_Sendrecv_c, MPI_Irecv_c, MPI_Isend_c, MPI_Count, MPI_Send_c, 1)

static int send_packed(const void *packed, MPI_Count size, int dest, int tag, MPI_Comm comm)
{
  MPI_Request req;
  int rc = MANA_LH_CALL_NOPARK(MPI_Isend_c, packed, size, MPI_PACKED, dest, tag, COMM(comm), &req);
  if (rc != MPI_SUCCESS)
    return rc;
  mana_count_send(comm, dest);
  return REROUTED(comm, mana_wait_blocking_send(req, dest, comm));
}

/* The outgoing data is packed aside first, so the receive may land in the same buffer. */
#define BLOCKING_SENDRECV_REPLACE(name, pack_size, pack, irecv, isend, count_t, large)             \
  int name(void *buf, count_t count, MPI_Datatype datatype, int dest, int sendtag, int source,     \
           int recvtag, MPI_Comm comm, MPI_Status *status)                                         \
  {                                                                                                \
    MPI_Comm real = COMM(comm);                                                                    \
    MPI_Datatype type = DT(datatype);                                                              \
    count_t size = 0, position = 0;                                                                \
    int rc = MANA_LH_CALL(pack_size, count, type, real, &size);                                    \
    if (rc != MPI_SUCCESS)                                                                         \
      return rc;                                                                                   \
    void *packed = malloc(size > 0 ? (size_t)size : 1);                                            \
    if (!packed)                                                                                   \
      return MPI_ERR_NO_MEM;                                                                       \
    rc = MANA_LH_CALL(pack, buf, count, type, packed, size, &position, real);                      \
    if (rc == MPI_SUCCESS && __builtin_expect(mana_drained_head != NULL, 0) &&                     \
        mana_drained_recv(buf, count, datatype, source, recvtag, comm, status, &rc)) {             \
      int rc2 = send_packed(packed, position, dest, sendtag, comm);                                \
      free(packed);                                                                                \
      return rc != MPI_SUCCESS ? rc : rc2;                                                         \
    }                                                                                              \
    MPI_Request reqs[2];                                                                           \
    if (rc == MPI_SUCCESS)                                                                         \
      rc = MANA_LH_CALL_NOPARK(irecv, buf, count, type, source, recvtag, real, &reqs[0]);          \
    if (rc == MPI_SUCCESS) {                                                                       \
      rc =                                                                                         \
          MANA_LH_CALL_NOPARK(isend, packed, position, MPI_PACKED, dest, sendtag, real, &reqs[1]); \
      if (rc == MPI_SUCCESS) {                                                                     \
        mana_count_send(comm, dest);                                                               \
        struct recv_args a = {buf, count, datatype, source, recvtag, large};                       \
        rc = wait_pair(comm, reqs, &a, dest, status);                                              \
      } else {                                                                                     \
        MANA_LH_CALL_NOPARK(MPI_Cancel, &reqs[0]);                                                 \
        MANA_LH_CALL_NOPARK(MPI_Request_free, &reqs[0]);                                           \
      }                                                                                            \
    }                                                                                              \
    free(packed);                                                                                  \
    return rc;                                                                                     \
  }
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace, MPI_Pack_size, MPI_Pack, MPI_Irecv, MPI_Isend, int,
                          0)
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace_c, MPI_Pack_size_c, MPI_Pack_c, MPI_Irecv_c,
                          MPI_Isend_c, MPI_Count, 1)

/* Probes poll in the lower half; after a park point the buffered messages may hold the
 * message (the drain took it), and after a restart the communicator's real handle is new. */
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
  for (;;) {
    int flag = 0;
    if (__builtin_expect(mana_drained_head != NULL, 0) &&
        mana_drained_probe(comm, source, tag, status))
      return MPI_SUCCESS;
    int rc = MANA_UNTIL(iprobe_until, source, tag, COMM(comm), &flag, status);
    if (rc != MPI_SUCCESS || flag)
      return rc;
    mana_park_point();
  }
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
  for (;;) {
    int flag = 0;
    MPI_Message msg = MPI_MESSAGE_NULL;
    if (__builtin_expect(mana_drained_head != NULL, 0)) {
      struct mana_drained *m = mana_drained_take(comm, source, tag);
      if (m) {
        *message = mana_message_buffered(m, comm, status);
        MANA_PARK_CHECK();
        return MPI_SUCCESS;
      }
    }
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = MANA_UNTIL_NOPARK(improbe_until, source, tag, COMM(comm), &flag, &msg, st);
    if (rc != MPI_SUCCESS)
      return rc;
    if (flag) { /* a matched message parks only once its handle exists (stub.h) */
      *message = mana_message_new(msg, comm, st);
      MANA_PARK_CHECK();
      return rc;
    }
    mana_park_point();
  }
}

#define BLOCKING_MRECV(name, start, count_t, large)                                            \
  int name(void *buf, count_t count, MPI_Datatype datatype, MPI_Message *message,              \
           MPI_Status *status)                                                                 \
  {                                                                                            \
    MPI_Comm comm;                                                                             \
    MPI_Message msg;                                                                           \
    MPI_Status local, *st = STATUS_OR_LOCAL(status, local);                                    \
    struct mana_drained *m = mana_message_take(message, &comm, &msg);                          \
    if (m) { /* MPICH raises MPI_Mrecv's errors on MPI_COMM_WORLD, and so does this */         \
      int rc = mana_drained_deliver(m, buf, count, datatype, comm, st);                        \
      if (rc != MPI_SUCCESS)                                                                   \
        MANA_LH_CALL_NOPARK(MPI_Comm_call_errhandler, MPI_COMM_WORLD, rc);                     \
      MANA_PARK_CHECK();                                                                       \
      return rc;                                                                               \
    }                                                                                          \
    MPI_Request req;                                                                           \
    int rc = MANA_LH_CALL_NOPARK(start, buf, count, DT(datatype), &msg, &req);                 \
    if (rc != MPI_SUCCESS)                                                                     \
      return rc;                                                                               \
    MANA_RETIRE(MESSAGE, MPI_Message, *message);                                               \
    *message = msg;                                                                            \
    if (comm == MPI_COMM_NULL) /* MPI_MESSAGE_NO_PROC: nothing to count or drain */            \
      return mana_wait_real(&req, status);                                                     \
    rc = mana_wait_blocking_recv(req, buf, count, datatype, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, \
                                 large, st);                                                   \
    MANA_PARK_CHECK();                                                                         \
    return rc;                                                                                 \
  }
BLOCKING_MRECV(MPI_Mrecv, MPI_Imrecv, int, 0)
BLOCKING_MRECV(MPI_Mrecv_c, MPI_Imrecv_c, MPI_Count, 1)

/* ---- the buffer of buffered sends, for restart ---- */

/* A new MPI has no buffer attached: the application's (in upper-half memory) is attached
 * again.  Buffered sends still in it were drained before the checkpoint. */
static void *bsend_buffer;
static MPI_Count bsend_size;
static int bsend_large;

void mana_after_Buffer_attach(void *buffer, int size)
{
  bsend_buffer = buffer;
  bsend_size = size;
  bsend_large = 0;
}

void mana_after_Buffer_attach_c(void *buffer, MPI_Count size)
{
  bsend_buffer = buffer;
  bsend_size = size;
  bsend_large = 1;
}

/* MPICH's MPI_Buffer_detach waits until every buffered send has left the buffer, which a
 * parked receiver never lets a large one do: it is entered through the clock's gate, so a
 * checkpoint waits for it or catches the rank before it (MPICH's pt2pt/bsendfrag and
 * bsendpending failed to park). */
#define BUFFER_DETACH(name, size_t_)                       \
  int name(void *buffer_addr, size_t_ *size)               \
  {                                                        \
    mana_cc_peer_gate_enter();                             \
    int rc = MANA_LH_CALL_NOPARK(name, buffer_addr, size); \
    mana_cc_peer_gate_leave();                             \
    if (rc == MPI_SUCCESS)                                 \
      bsend_buffer = NULL;                                 \
    MANA_PARK_CHECK();                                     \
    return rc;                                             \
  }
BUFFER_DETACH(MPI_Buffer_detach, int)
BUFFER_DETACH(MPI_Buffer_detach_c, MPI_Count)

static int bsend_discard(void)
{
  void *addr;
  int size;
  MPI_Count size_c;
  if (bsend_buffer)
    return bsend_large ? MANA_LH_CALL(MPI_Buffer_detach_c, &addr, &size_c)
                       : MANA_LH_CALL(MPI_Buffer_detach, &addr, &size);
  return MPI_SUCCESS;
}

static int bsend_rebuild(void)
{
  if (!bsend_buffer)
    return MPI_SUCCESS;
  int rc = bsend_large ? MANA_LH_CALL(MPI_Buffer_attach_c, bsend_buffer, bsend_size)
                       : MANA_LH_CALL(MPI_Buffer_attach, bsend_buffer, (int)bsend_size);
  return rc == MPI_SUCCESS ? rc
                           : mana_rebuild_error("buffered-send buffer", 0, "MPI_Buffer_attach", rc);
}

const struct mana_kind_ops mana_bsend_ops = {
    .name = "buffered-send buffer",
    .discard = bsend_discard,
    .rebuild = bsend_rebuild,
};
