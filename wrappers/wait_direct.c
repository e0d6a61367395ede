/* Waits of blocking calls made with MPI's own blocking functions instead of the lower half's
 * polling loops (svc.*_until), with the same results: *flag says the operation completed, or
 * -1 that starting it failed.  Two cases need them:
 *  - before MPI_Init, in a program that uses MPI through sessions only (session.c): no
 *    checkpoint can be taken then (the lower half joins the coordinator in MPI_Init), and
 *    MPICH 4.0.2's MPI_Test crashes before a communicator over the world's processes exists
 *    (its network worker is made then), where the blocking calls a native program makes do not;
 *  - requests MPI must complete with its own wait (MANA_SLOT_REQ_MPIWAIT, request.c): ROMIO's
 *    non-blocking collective file operations corrupt data or crash when polled with MPI_Test;
 *    a thread enters such a wait only while no park is requested (request.c). */
#include "stub.h"

int mana_direct_test_until(MPI_Request *req, int *flag, MPI_Status *status)
{
  *flag = 1;
  return MANA_LH_CALL_NOPARK(MPI_Wait, req, status);
}

int mana_direct_send_until(enum mana_send_mode mode, const void *buf, int count, MPI_Datatype type,
                           int dest, int tag, MPI_Comm comm, MPI_Request *req, int *flag)
{
  int rc;
  switch (mode) {
  case MANA_SEND_BUFFERED:
    rc = MANA_LH_CALL_NOPARK(MPI_Bsend, buf, count, type, dest, tag, comm);
    break;
  case MANA_SEND_SYNCHRONOUS:
    rc = MANA_LH_CALL_NOPARK(MPI_Ssend, buf, count, type, dest, tag, comm);
    break;
  case MANA_SEND_READY:
    rc = MANA_LH_CALL_NOPARK(MPI_Rsend, buf, count, type, dest, tag, comm);
    break;
  case MANA_SEND_STANDARD:
  default:
    rc = MANA_LH_CALL_NOPARK(MPI_Send, buf, count, type, dest, tag, comm);
    break;
  }
  *req = MPI_REQUEST_NULL;
  *flag = rc == MPI_SUCCESS ? 1 : -1; /* an error went to the communicator's handler */
  return rc;
}

int mana_direct_recv_until(void *buf, int count, MPI_Datatype type, int source, int tag,
                           MPI_Comm comm, MPI_Request *req, int *flag, MPI_Status *status)
{
  int rc = MANA_LH_CALL_NOPARK(MPI_Recv, buf, count, type, source, tag, comm, status);
  *req = MPI_REQUEST_NULL;
  *flag = rc == MPI_SUCCESS ? 1 : -1;
  return rc;
}

/* As svc.waitall_until reports (lh_services.h): done[i] 1 completed, 2 completed with an
 * error (MPI_Wait returns once the request is complete). */
int mana_direct_waitall_until(int n, MPI_Request reqs[], unsigned char done[], int *flag,
                              MPI_Status statuses[])
{
  int errors = 0;
  for (int i = 0; i < n; i++) {
    if (done[i])
      continue;
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
    int rc = MANA_LH_CALL_NOPARK(MPI_Wait, &reqs[i], st);
    done[i] = rc == MPI_SUCCESS ? 1 : 2;
    if (rc != MPI_SUCCESS && st != MPI_STATUS_IGNORE)
      st->MPI_ERROR = rc;
    errors += rc != MPI_SUCCESS;
  }
  *flag = 1;
  if (!errors)
    return MPI_SUCCESS;
  if (statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < n; i++)
      if (done[i] == 1)
        statuses[i].MPI_ERROR = MPI_SUCCESS;
  return MPI_ERR_IN_STATUS;
}

int mana_direct_testany_until(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
  *flag = 1;
  return MANA_LH_CALL_NOPARK(MPI_Waitany, n, reqs, index, status);
}

int mana_direct_testsome_until(int n, MPI_Request reqs[], int *outcount, int indices[],
                               MPI_Status statuses[])
{
  return MANA_LH_CALL_NOPARK(MPI_Waitsome, n, reqs, outcount, indices, statuses);
}

int mana_direct_iprobe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  *flag = 1;
  return MANA_LH_CALL_NOPARK(MPI_Probe, source, tag, comm, status);
}

int mana_direct_improbe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                              MPI_Status *status)
{
  *flag = 1;
  return MANA_LH_CALL_NOPARK(MPI_Mprobe, source, tag, comm, message, status);
}
