/* hello.c - smallest possible smoke test: init, rank/size, one allgather, finalize. */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("hello");
  int *ranks = malloc(sizeof(int) * (size_t)mt_.size);
  int *expect = malloc(sizeof(int) * (size_t)mt_.size);
  MPI_Allgather(&mt_.rank, 1, MPI_INT, ranks, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < mt_.size; i++)
    expect[i] = i;
  mt_log("hello from rank %d of %d", mt_.rank, mt_.size);
  mt_check_ints("allgather of ranks", ranks, expect, mt_.size);
  free(ranks);
  free(expect);
  return mt_end();
}
