/* Blocking point-to-point calls, made of their non-blocking forms plus a wait that never
 * blocks inside the lower half, so a rank waiting for a message can always be parked. */
#include "stub.h"

#define DT(v) MANA_REAL(DATATYPE, MPI_Datatype, v)
#define COMM(v) MANA_REAL(COMM, MPI_Comm, v)

/* MPI_Send, MPI_Bsend, MPI_Ssend, MPI_Rsend and their large-count forms. */
#define BLOCKING_SEND(name, start, count_t)                                             \
  int name(const void *buf, count_t count, MPI_Datatype datatype, int dest, int tag,    \
           MPI_Comm comm)                                                               \
  {                                                                                     \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL(start, buf, count, DT(datatype), dest, tag, COMM(comm), &req); \
    return rc == MPI_SUCCESS ? mana_wait_real(&req, MPI_STATUS_IGNORE) : rc;            \
  }
BLOCKING_SEND(MPI_Send, MPI_Isend, int)
BLOCKING_SEND(MPI_Bsend, MPI_Ibsend, int)
BLOCKING_SEND(MPI_Ssend, MPI_Issend, int)
BLOCKING_SEND(MPI_Rsend, MPI_Irsend, int)
BLOCKING_SEND(MPI_Send_c, MPI_Isend_c, MPI_Count)
BLOCKING_SEND(MPI_Bsend_c, MPI_Ibsend_c, MPI_Count)
BLOCKING_SEND(MPI_Ssend_c, MPI_Issend_c, MPI_Count)
BLOCKING_SEND(MPI_Rsend_c, MPI_Irsend_c, MPI_Count)

#define BLOCKING_RECV(name, start, count_t)                                             \
  int name(void *buf, count_t count, MPI_Datatype datatype, int source, int tag,        \
           MPI_Comm comm, MPI_Status *status)                                           \
  {                                                                                     \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL(start, buf, count, DT(datatype), source, tag, COMM(comm), &req); \
    return rc == MPI_SUCCESS ? mana_wait_real(&req, status) : rc;                       \
  }
BLOCKING_RECV(MPI_Recv, MPI_Irecv, int)
BLOCKING_RECV(MPI_Recv_c, MPI_Irecv_c, MPI_Count)

#define BLOCKING_SENDRECV(name, start, count_t)                                         \
  int name(const void *sendbuf, count_t sendcount, MPI_Datatype sendtype, int dest,     \
           int sendtag, void *recvbuf, count_t recvcount, MPI_Datatype recvtype,        \
           int source, int recvtag, MPI_Comm comm, MPI_Status *status)                  \
  {                                                                                     \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL(start, sendbuf, sendcount, DT(sendtype), dest, sendtag,       \
                          recvbuf, recvcount, DT(recvtype), source, recvtag,            \
                          COMM(comm), &req);                                            \
    return rc == MPI_SUCCESS ? mana_wait_real(&req, status) : rc;                       \
  }
BLOCKING_SENDRECV(MPI_Sendrecv, MPI_Isendrecv, int)
BLOCKING_SENDRECV(MPI_Sendrecv_c, MPI_Isendrecv_c, MPI_Count)

#define BLOCKING_SENDRECV_REPLACE(name, start, count_t)                                 \
  int name(void *buf, count_t count, MPI_Datatype datatype, int dest, int sendtag,      \
           int source, int recvtag, MPI_Comm comm, MPI_Status *status)                  \
  {                                                                                     \
    MPI_Request req;                                                                    \
    int rc = MANA_LH_CALL(start, buf, count, DT(datatype), dest, sendtag, source,       \
                          recvtag, COMM(comm), &req);                                   \
    return rc == MPI_SUCCESS ? mana_wait_real(&req, status) : rc;                       \
  }
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace, MPI_Isendrecv_replace, int)
BLOCKING_SENDRECV_REPLACE(MPI_Sendrecv_replace_c, MPI_Isendrecv_replace_c, MPI_Count)

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
    int rc = MANA_LH_SVC(improbe_until, source, tag, real, &flag, &msg, status);
    if (rc != MPI_SUCCESS)
      return rc;
    if (flag) {
      *message = MANA_NEW(MESSAGE, MPI_Message, msg);
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
    int rc = MANA_LH_CALL(start, buf, count, DT(datatype), &msg, &req);                 \
    if (rc != MPI_SUCCESS)                                                              \
      return rc;                                                                        \
    MANA_RETIRE(MESSAGE, MPI_Message, *message);                                        \
    *message = msg;                                                                     \
    return mana_wait_real(&req, status);                                                \
  }
BLOCKING_MRECV(MPI_Mrecv, MPI_Imrecv, int)
BLOCKING_MRECV(MPI_Mrecv_c, MPI_Imrecv_c, MPI_Count)
