/*
 * std_greq.c - generalized requests: a user-defined nonblocking reduction completed by
 * MPI_Grequest_complete, with query, free and cancel callbacks.
 *
 * Source: MPI-3.1, section 12.2.1 "Examples" (Generalized Requests), its example: myreduce()
 * starts a generalized request (MPI_Grequest_start(query_fn, free_fn, cancel_fn, ...)) for a
 * sum of ints over a binary tree, each non-root node receiving its children's values
 * (MPI_Irecv x2, MPI_Waitall), adding its own and sending the sum to its parent, the root
 * storing the result, then MPI_Grequest_complete; query_fn sets the status
 * (MPI_Status_set_elements of one MPI_INT, MPI_Status_set_cancelled false, source and tag
 * MPI_UNDEFINED), free_fn does nothing, cancel_fn refuses to cancel.
 * Adaptation (thread-less): the standard hands the tree work to a new thread
 * (pthread_create); here the process itself does it after starting the request, in
 * myreduce_progress(), called between other work, and then completes the request, so that
 * the request is pending (started, not completed) across other MPI calls.  The tree's
 * "code not shown" is filled in (children 2r+1 and 2r+2, parent (r-1)/2, MPI_PROC_NULL where
 * none).  Each of ROUNDS rounds runs two reductions with different tags at once, completed
 * in turn, waited for with MPI_Wait, MPI_Waitall or MPI_Test loops; the statuses, the sums
 * and the number of callback invocations are checked (free_fn once per request, query_fn
 * once per completion call that returns a status, cancel_fn never).
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 8

typedef struct {
  MPI_Comm comm;
  int tag;
  int root;
  int valin;
  int *valout;
  MPI_Request request;
  MPI_Request req[2];
  int lval, rval;
  int parent;
} ARGS;

static int n_query, n_free, n_cancel;

static int query_fn(void *extra_state, MPI_Status *status)
{
  (void)extra_state;
  n_query++;
  /* always send just one int */
  MPI_Status_set_elements(status, MPI_INT, 1);
  /* can never cancel so always true */
  MPI_Status_set_cancelled(status, 0);
  /* choose not to return a value for this */
  status->MPI_SOURCE = MPI_UNDEFINED;
  /* tag has no meaning for this generalized request */
  status->MPI_TAG = MPI_UNDEFINED;
  /* this generalized request never fails */
  return MPI_SUCCESS;
}

static int free_fn(void *extra_state)
{
  (void)extra_state;
  n_free++;
  return MPI_SUCCESS;
}

static int cancel_fn(void *extra_state, int complete)
{
  (void)extra_state;
  n_cancel++;
  if (!complete) {
    fprintf(stderr, "Cannot cancel generalized request - aborting program\n");
    MPI_Abort(MPI_COMM_WORLD, 99);
  }
  return MPI_SUCCESS;
}

/* start: the request, and the receives from the children (the thread's first part) */
static ARGS *myreduce(MPI_Comm comm, int tag, int root, int valin, int *valout,
                      MPI_Request *request)
{
  ARGS *args;
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, request);
  args = (ARGS *)malloc(sizeof(ARGS));
  args->comm = comm;
  args->tag = tag;
  args->root = root;
  args->valin = valin;
  args->valout = valout;
  args->request = *request;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* the tree, relative to the root */
  int rel = (rank - root + size) % size;
  int lc = 2 * rel + 1, rc = 2 * rel + 2;
  int lchild = lc < size ? (lc + root) % size : MPI_PROC_NULL;
  int rchild = rc < size ? (rc + root) % size : MPI_PROC_NULL;
  args->parent = rel == 0 ? MPI_PROC_NULL : ((rel - 1) / 2 + root) % size;
  args->lval = args->rval = 0;
  MPI_Irecv(&args->lval, 1, MPI_INT, lchild, args->tag, args->comm, &args->req[0]);
  MPI_Irecv(&args->rval, 1, MPI_INT, rchild, args->tag, args->comm, &args->req[1]);
  return args;
}

/* the rest of the thread's work: wait for the children, send up, complete */
static void myreduce_progress(ARGS *args)
{
  MPI_Status sts[2];
  MPI_Waitall(2, args->req, sts);
  int val = args->lval + args->valin + args->rval;
  MPI_Send(&val, 1, MPI_INT, args->parent, args->tag, args->comm);
  if (args->parent == MPI_PROC_NULL)
    *(args->valout) = val;
  MPI_Grequest_complete(args->request);
  free(args);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_greq");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int bad = 0, waits = 0;

  for (int round = 0; round < ROUNDS; round++) {
    int root0 = round % size, root1 = (round + 1) % size;
    int out0 = -1, out1 = -1;
    MPI_Request r[2];
    ARGS *a0 = myreduce(comm, 100 + round, root0, rank + round, &out0, &r[0]);
    ARGS *a1 = myreduce(comm, 200 + round, root1, 10 * rank + 1, &out1, &r[1]);

    /* other work while both requests are pending */
    int flag = -1, v = rank, s = 0;
    MPI_Status st;
    MPI_Test(&r[0], &flag, &st);
    bad += flag != 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad += s != size * (size - 1) / 2;

    /* complete them in an order depending on the round */
    if (round % 2 == 0) {
      myreduce_progress(a0);
      myreduce_progress(a1);
    } else {
      myreduce_progress(a1);
      myreduce_progress(a0);
    }
    MPI_Status sts[2];
    switch (round % 3) {
    case 0:
      MPI_Wait(&r[0], &sts[0]);
      MPI_Wait(&r[1], &sts[1]);
      waits += 2;
      break;
    case 1:
      MPI_Waitall(2, r, sts);
      waits += 2;
      break;
    default:
      for (int k = 0; k < 2; k++) {
        do
          MPI_Test(&r[k], &flag, &sts[k]);
        while (!flag);
        waits++;
      }
    }
    for (int k = 0; k < 2; k++) {
      int count, cancelled;
      MPI_Get_count(&sts[k], MPI_INT, &count);
      MPI_Test_cancelled(&sts[k], &cancelled);
      bad += count != 1 || cancelled || sts[k].MPI_SOURCE != MPI_UNDEFINED ||
             sts[k].MPI_TAG != MPI_UNDEFINED || r[k] != MPI_REQUEST_NULL;
    }
    int want0 = 0, want1 = 0;
    for (int q = 0; q < size; q++) {
      want0 += q + round;
      want1 += 10 * q + 1;
    }
    if (rank == root0)
      bad += out0 != want0;
    else
      bad += out0 != -1;
    if (rank == root1)
      bad += out1 != want1;
    else
      bad += out1 != -1;
  }
  mt_check_int("generalized request reductions: wrong results or statuses", bad, 0);
  mt_check_int("free_fn calls", n_free, 2 * ROUNDS);
  mt_check_int("query_fn calls", n_query, waits);
  mt_check_int("cancel_fn calls", n_cancel, 0);
  MPI_Comm_free(&comm);
  mt_allreduce_steps(4);
  return mt_end();
}
