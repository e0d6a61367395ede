/*
 * errhandler_default_fatal.c - MPI_COMM_WORLD's default handler is fatal: a program that never
 * sets one and calls MPI_Comm_call_errhandler on it is aborted there.  Collectives before the
 * call give a checkpoint a place to fall (run_at_calls.sh): a restart left MPI_COMM_WORLD
 * returning errors, which its rebuild had set, and the program went on past the call
 * (MPICH's errhan/errfatal).
 * Expected: nothing on stdout (the line after the call is printed only if the program goes
 * on), and the status mpiexec gives a fatal error, 15 (registered with it).
 * Ranks: 1.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int i = 0; i < 6; i++) {
    int v = i, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, i % 2 ? dup : MPI_COMM_WORLD);
  }
  MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
  printf("after the handler: not aborted\n");
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
