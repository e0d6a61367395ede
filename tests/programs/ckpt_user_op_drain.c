/*
 * ckpt_user_op_drain.c - checkpoints while non-blocking reductions with a user-defined op are
 * in flight.  The drain completes them on the checkpoint thread, so MPICH calls the user's op
 * there, and this op calls MPI itself (MPI_Type_get_extent, MPI_Type_size), as MPICH's
 * coll/nonblocking2 does for a non-contiguous type.  That nested call used to park the
 * checkpoint thread inside its own drain: the other ranks waited for its data until the drain
 * gave up after 30 s, and the job hung.
 *
 * Each round reduces a strided vector (a resized type: every other int) with Iallreduce,
 * Ireduce to a rotating root and Iscan, all with the user's sum, and checks every element.
 * Ranks: 2 or more.  Arguments: [ROUNDS] [COUNT].
 */
#include "mpitest.h"

static long op_calls;

static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
  MPI_Aint lb, extent;
  int size;
  MPI_Type_get_extent(*type, &lb, &extent);
  MPI_Type_size(*type, &size);
  const int *a = in;
  int *b = inout;
  int step = (int)(extent / (MPI_Aint)sizeof(int)), each = size / (int)sizeof(int);
  for (int i = 0; i < *len; i++)
    for (int j = 0; j < each; j++)
      b[i * step + j] += a[i * step + j];
  op_calls++;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_user_op_drain");
  int rounds = (int)mt_arg("ckpt_user_op_drain", argc, argv, 1, 12);
  int count = (int)mt_arg("ckpt_user_op_drain", argc, argv, 2, 64);
  MPI_Datatype vec, strided;
  MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 2 * (MPI_Aint)sizeof(int), &strided);
  MPI_Type_free(&vec);
  MPI_Type_commit(&strided);
  MPI_Op sum;
  MPI_Op_create(strided_sum, 1, &sum);
  int *send = mt_alloc(2 * (size_t)count * sizeof(int));
  int *all = mt_alloc(2 * (size_t)count * sizeof(int));
  int *root = mt_alloc(2 * (size_t)count * sizeof(int));
  int *scan = mt_alloc(2 * (size_t)count * sizeof(int));
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    for (int i = 0; i < 2 * count; i++) {
      send[i] = i % 2 ? -1 : mt_.rank * 1000 + round * 10 + i;
      all[i] = root[i] = scan[i] = -7;
    }
    int r = round % mt_.size;
    MPI_Request req[3];
    MPI_Iallreduce(send, all, count, strided, sum, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Ireduce(send, root, count, strided, sum, r, MPI_COMM_WORLD, &req[1]);
    MPI_Iscan(send, scan, count, strided, sum, MPI_COMM_WORLD, &req[2]);
    MPI_Waitall(2, &req[1], MPI_STATUSES_IGNORE);
    int bad = 0;
    long n = mt_.size, me = mt_.rank;
    for (int i = 0; i < count; i++) {
      long base = round * 10 + 2 * i;
      bad += all[2 * i] != 1000 * n * (n - 1) / 2 + n * base || all[2 * i + 1] != -7;
      bad += mt_.rank == r && root[2 * i] != all[2 * i];
      bad += scan[2 * i] != 1000 * me * (me + 1) / 2 + (me + 1) * base || scan[2 * i + 1] != -7;
      total += all[2 * i] + scan[2 * i];
    }
    mt_check_int("elements wrong in this round's three reductions", bad, 0);
  }
  mt_check_int("the user's op ran", op_calls > 0, 1);
  mt_append("rank %d: total %ld\n", mt_.rank, total);
  MPI_Op_free(&sum);
  MPI_Type_free(&strided);
  free(send);
  free(all);
  free(root);
  free(scan);
  return mt_end();
}
