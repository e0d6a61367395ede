/*
 * grequest_pending.c - generalized requests alive across MPI calls: one the program completes
 * much later, one completed at once and waited for later, one freed with MPI_Request_free
 * while incomplete.  A checkpoint may fall while any of them exists: the restart starts them
 * again with the application's callbacks and extra_state, completed or not as they were.
 *
 * Each callback counts its calls in the request's extra_state; query_fn reports a tag and a
 * byte count that name the request.  Output: the statuses and counts on every rank.  Ranks: any.
 */
#include "mpitest.h"

struct greq_state {
  int id, queries, frees, cancels;
};

static int query_fn(void *extra, MPI_Status *status)
{
  struct greq_state *g = extra;
  g->queries++;
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = 100 + g->id;
  MPI_Status_set_cancelled(status, 0);
  MPI_Status_set_elements(status, MPI_BYTE, 10 * g->id);
  return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
  ((struct greq_state *)extra)->frees++;
  return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
  (void)complete;
  ((struct greq_state *)extra)->cancels++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("grequest_pending");
  struct greq_state late = {1, 0, 0, 0}, early = {2, 0, 0, 0}, dropped = {3, 0, 0, 0};
  MPI_Request r_late, r_early, r_dropped;
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &late, &r_late);
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &early, &r_early);
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &dropped, &r_dropped);
  MPI_Grequest_complete(r_early);
  MPI_Request dropped_handle = r_dropped; /* still names it for MPI_Grequest_complete */
  MPI_Request_free(&r_dropped);           /* freed once it completes, below */
  long sum = 0;
  for (int round = 0; round < 6; round++) {
    int flag = 1, x = mt_.rank + round, y = 0;
    MPI_Test(&r_late, &flag, MPI_STATUS_IGNORE);
    mt_check_int("late request incomplete", flag, 0);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    sum += y;
  }
  MPI_Grequest_complete(r_late);
  MPI_Grequest_complete(dropped_handle);
  MPI_Status st[2];
  MPI_Request both[2] = {r_late, r_early};
  MPI_Waitall(2, both, st);
  for (int k = 0; k < 2; k++) {
    int count = -1;
    MPI_Get_count(&st[k], MPI_BYTE, &count);
    mt_append("request %d: tag %d, %d bytes\n", k + 1, st[k].MPI_TAG, count);
  }
  mt_check_int("late: query_fn calls", late.queries, 1);
  mt_check_int("late: free_fn calls", late.frees, 1);
  mt_check_int("early: free_fn calls", early.frees, 1);
  mt_check_int("dropped: free_fn calls", dropped.frees, 1);
  mt_check_int("cancel_fn calls", late.cancels + early.cancels + dropped.cancels, 0);
  mt_append("sum %ld\n", sum);
  return mt_end();
}
