/* Request completion: MPI_Wait/Test and their any/all/some forms, Start, Request_free.
 *
 * Waits never block inside the lower half: the lower half polls (svc.*_until) and hands
 * control back when the checkpoint machinery asks, and the wrapper parks here.
 * After a call, a request whose real handle became MPI_REQUEST_NULL is finished and its virtual
 * handle is retired; one whose real handle stayed (persistent, generalized, still active)
 * keeps its virtual handle. */
#include "stub.h"

static MPI_Request real_of(MPI_Request v)
{
  return (MPI_Request)(uint32_t)mana_handle_real(MANA_KIND_REQUEST, (uint32_t)v);
}

static void settle(MPI_Request *virt, MPI_Request real)
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
  }
}

static void settle_all(int n, MPI_Request virt[], const MPI_Request real[])
{
  for (int i = 0; i < n; i++)
    settle(&virt[i], real[i]);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
  MPI_Request real = real_of(*request);
  int rc;
  if (real == MPI_REQUEST_NULL)
    rc = MANA_LH_CALL(MPI_Wait, &real, status); /* empty status, as MPI defines it */
  else
    rc = mana_wait_real(&real, status);
  settle(request, real);
  return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL(MPI_Test, &real, flag, status);
  settle(request, real);
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
  return MANA_LH_CALL(MPI_Request_get_status, real_of(request), flag, status);
}

int MPI_Request_free(MPI_Request *request)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL(MPI_Request_free, &real);
  if (rc == MPI_SUCCESS) {
    mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)*request);
    *request = MPI_REQUEST_NULL;
  }
  return rc;
}

int MPI_Start(MPI_Request *request)
{
  MPI_Request real = real_of(*request);
  int rc = MANA_LH_CALL(MPI_Start, &real);
  settle(request, real);
  return rc;
}

/* Runs `body` on a real copy of the request array, then settles every entry. */
#define WITH_REAL_REQUESTS(n, virt, real, body)                                         \
  do {                                                                                  \
    MPI_Request stack_[MANA_STACK_HANDLES];                                             \
    MPI_Request *real = mana_real_array_request((virt), (size_t)((n) > 0 ? (n) : 0), stack_); \
    body;                                                                               \
    settle_all((n), (virt), real);                                                      \
    if (real != stack_)                                                                 \
      free(real);                                                                       \
  } while (0)

int MPI_Startall(int count, MPI_Request array_of_requests[])
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL(MPI_Startall, count, real));
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
      rc = MANA_LH_SVC(waitall_until, count, real, done, &flag, array_of_statuses);
      if (rc != MPI_SUCCESS || flag)
        break;
      mana_park_point();
    }
  });
  if (done != stack_done)
    free(done);
  return rc;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real, {
    for (;;) {
      int flag = 0;
      rc = MANA_LH_SVC(testany_until, count, real, index, &flag, status);
      if (rc != MPI_SUCCESS || flag)
        break;
      mana_park_point();
    }
  });
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(incount, array_of_requests, real, {
    for (;;) {
      *outcount = 0;
      rc = MANA_LH_SVC(testsome_until, incount, real, outcount, array_of_indices,
                       array_of_statuses);
      if (rc != MPI_SUCCESS || *outcount != 0)
        break;
      mana_park_point();
    }
  });
  return rc;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL(MPI_Testall, count, real, flag, array_of_statuses));
  return rc;
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
  int rc;
  WITH_REAL_REQUESTS(count, array_of_requests, real,
                     rc = MANA_LH_CALL(MPI_Testany, count, real, index, flag, status));
  return rc;
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
  int rc;
  WITH_REAL_REQUESTS(incount, array_of_requests, real,
                     rc = MANA_LH_CALL(MPI_Testsome, incount, real, outcount, array_of_indices,
                                       array_of_statuses));
  return rc;
}
