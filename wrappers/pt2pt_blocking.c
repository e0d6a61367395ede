/* Blocking point-to-point calls, made of their non-blocking forms plus a wait that never
 * blocks inside the lower half, so a rank waiting for a message can always be parked; and the
 * buffer of buffered sends, attached again at restart. */
#include "records.h"
#include "stub_hooks.h"

#define DT(v) MANA_REAL(DATATYPE, MPI_Datatype, v)
#define COMM(v) MANA_REAL(COMM, MPI_Comm, v)

/* MPI_Send and its modes: started and polled in one crossing into the lower half; only if the
 * rank must park does the wait continue here. */
static int send(int mode, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
  MPI_Request req;
  int flag = 0;
  int reroute = mana_comm_errors_need_rerouting(comm);
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  int rc = MANA_LH_SVC(send_until, mode, buf, count, DT(datatype), dest, tag, COMM(comm), &req,
                       &flag);
  if (rc == MPI_SUCCESS && !flag)
    rc = mana_wait_real(&req, MPI_STATUS_IGNORE);
  if (reroute)
    mana_reroute_errors(comm, 0, flag == -1 ? MPI_SUCCESS : rc);
  return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(0, buf, count, datatype, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(1, buf, count, datatype, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(2, buf, count, datatype, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
  return send(3, buf, count, datatype, dest, tag, comm);
}

/* The large-count forms are rare enough to take two crossings. */
#define BLOCKING_SEND_C(name, start)                                                    \
  int name(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,  \
           MPI_Comm comm)                                                               \
  {                                                                                     \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL(start, buf, count, DT(datatype), dest, tag, COMM(comm), &req); \
    return rc == MPI_SUCCESS ? mana_wait_real_on(comm, &req, MPI_STATUS_IGNORE) : rc;   \
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
  int flag = 0;
  int reroute = mana_comm_errors_need_rerouting(comm);
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  int rc = MANA_LH_SVC(recv_until, buf, count, DT(datatype), source, tag, COMM(comm), &req,
                       &flag, status);
  if (rc == MPI_SUCCESS && !flag)
    rc = mana_wait_real(&req, status);
  if (reroute)
    mana_reroute_errors(comm, 0, flag == -1 ? MPI_SUCCESS : rc);
  if (rc == MPI_SUCCESS && source == MPI_PROC_NULL)
    set_proc_null_status(status);
  return rc;
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status *status)
{
  MPI_Request req;
  int rc = MANA_LH_CALL(MPI_Irecv_c, buf, count, DT(datatype), source, tag, COMM(comm), &req);
  if (rc == MPI_SUCCESS)
    rc = mana_wait_real_on(comm, &req, status);
  if (rc == MPI_SUCCESS && source == MPI_PROC_NULL)
    set_proc_null_status(status);
  return rc;
}

/* The code of the first failed request of a pair (done[i] == 2 marks a failure). */
static int first_error(const MPI_Status statuses[2], const unsigned char done[2])
{
  for (int i = 0; i < 2; i++)
    if (done[i] == 2)
      return statuses[i].MPI_ERROR;
  return MPI_ERR_IN_STATUS;
}

/* Waits for a receive and a send started together; the status is the receive's. */
static int wait_pair(MPI_Comm comm, MPI_Request reqs[2], int source, MPI_Status *status)
{
  MPI_Status statuses[2];
  unsigned char done[2] = {0, 0};
  int reroute = mana_comm_errors_need_rerouting(comm);
  int rc;
  if (reroute)
    mana_reroute_errors(comm, 1, MPI_SUCCESS);
  for (;;) {
    int flag = 0;
    rc = MANA_LH_SVC(waitall_until, 2, reqs, done, &flag, statuses);
    if (rc != MPI_SUCCESS || flag)
      break;
    mana_park_point();
  }
  if (rc == MPI_ERR_IN_STATUS)
    rc = first_error(statuses, done);
  if (reroute)
    rc = mana_reroute_errors(comm, 0, rc);
  if (status != MPI_STATUS_IGNORE)
    *status = statuses[0];
  if (rc == MPI_SUCCESS && source == MPI_PROC_NULL)
    set_proc_null_status(status);
  return rc;
}

#define BLOCKING_SENDRECV(name, irecv, isend, count_t)                                  \
  int name(const void *sendbuf, count_t sendcount, MPI_Datatype sendtype, int dest,     \
           int sendtag, void *recvbuf, count_t recvcount, MPI_Datatype recvtype,        \
           int source, int recvtag, MPI_Comm comm, MPI_Status *status)                  \
  {                                                                                     \
    MPI_Request reqs[2];                                                                \
    MPI_Comm real = COMM(comm);                                                         \
    int rc = MANA_LH_CALL(irecv, recvbuf, recvcount, DT(recvtype), source, recvtag,     \
                          real, &reqs[0]);                                              \
    if (rc != MPI_SUCCESS)                                                              \
      return rc;                                                                        \
    rc = MANA_LH_CALL(isend, sendbuf, sendcount, DT(sendtype), dest, sendtag, real,     \
                      &reqs[1]);                                                        \
    if (rc != MPI_SUCCESS)                                                              \
      return rc;                                                                        \
    return wait_pair(comm, reqs, source, status);                                             \
  }
BLOCKING_SENDRECV(MPI_Sendrecv, MPI_Irecv, MPI_Isend, int)
BLOCKING_SENDRECV(MPI_Sendrecv_c, MPI_Irecv_c, MPI_Isend_c, MPI_Count)

/* The outgoing data is packed aside first, so the receive may land in the same buffer. */
#define BLOCKING_SENDRECV_REPLACE(name, pack_size, pack, irecv, isend, count_t)         \
  int name(void *buf, count_t count, MPI_Datatype datatype, int dest, int sendtag,      \
           int source, int recvtag, MPI_Comm comm, MPI_Status *status)                  \
  {                                                                                     \
    MPI_Comm real = COMM(comm);                                                         \
    MPI_Datatype type = DT(datatype);                                                   \
    count_t size = 0, position = 0;                                                     \
    int rc = MANA_LH_CALL(pack_size, count, type, real, &size);                         \
    if (rc != MPI_SUCCESS)                                                              \
      return rc;                                                                        \
    void *packed = malloc(size > 0 ? (size_t)size : 1);                                 \
    if (!packed)                                                                        \
      return MPI_ERR_NO_MEM;                                                            \
    rc = MANA_LH_CALL(pack, buf, count, type, packed, size, &position, real);           \
    MPI_Request reqs[2];                                                                \
    if (rc == MPI_SUCCESS)                                                              \
      rc = MANA_LH_CALL(irecv, buf, count, type, source, recvtag, real, &reqs[0]);      \
    if (rc == MPI_SUCCESS)                                                              \
      rc = MANA_LH_CALL(isend, packed, position, MPI_PACKED, dest, sendtag, real,       \
                        &reqs[1]);                                                      \
    if (rc == MPI_SUCCESS)                                                              \
      rc = wait_pair(comm, reqs, source, status);                                             \
    free(packed);                                                                       \
    return rc;                                                                          \
  }
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace, MPI_Pack_size, MPI_Pack, MPI_Irecv, MPI_Isend,
                          int)
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace_c, MPI_Pack_size_c, MPI_Pack_c, MPI_Irecv_c,
                          MPI_Isend_c, MPI_Count)

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
  MPI_Comm real = COMM(comm);
  for (;;) {
    int flag = 0;
    int rc = MANA_LH_SVC(iprobe_until, source, tag, real, &flag, status);
    if (rc != MPI_SUCCESS || flag)
      return rc;
    mana_park_point();
  }
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
  MPI_Comm real = COMM(comm);
  for (;;) {
    int flag = 0;
    MPI_Message msg = MPI_MESSAGE_NULL;
    int rc = MANA_LH_SVC_NOPARK(improbe_until, source, tag, real, &flag, &msg, status);
    if (rc != MPI_SUCCESS)
      return rc;
    if (flag) { /* a matched message parks only once its handle exists (stub.h) */
      *message = MANA_NEW(MESSAGE, MPI_Message, msg);
      MANA_PARK_CHECK();
      return rc;
    }
    mana_park_point();
  }
}

#define BLOCKING_MRECV(name, start, count_t)                                            \
  int name(void *buf, count_t count, MPI_Datatype datatype, MPI_Message *message,       \
           MPI_Status *status)                                                          \
  {                                                                                     \
    MPI_Message msg = MANA_REAL(MESSAGE, MPI_Message, *message);                        \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL_NOPARK(start, buf, count, DT(datatype), &msg, &req);          \
    if (rc != MPI_SUCCESS)                                                              \
      return rc;                                                                        \
    MANA_RETIRE(MESSAGE, MPI_Message, *message);                                        \
    *message = msg;                                                                     \
    return mana_wait_real(&req, status);                                                \
  }
BLOCKING_MRECV(MPI_Mrecv, MPI_Imrecv, int)
BLOCKING_MRECV(MPI_Mrecv_c, MPI_Imrecv_c, MPI_Count)

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

void mana_after_Buffer_detach(void *buffer_addr, int *size)
{
  (void)buffer_addr;
  (void)size;
  bsend_buffer = NULL;
}

void mana_after_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
  (void)buffer_addr;
  (void)size;
  bsend_buffer = NULL;
}

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
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("buffered-send buffer", 0,
                                                     "MPI_Buffer_attach", rc);
}

const struct mana_kind_ops mana_bsend_ops = {
    .name = "buffered-send buffer",
    .discard = bsend_discard,
    .rebuild = bsend_rebuild,
};
