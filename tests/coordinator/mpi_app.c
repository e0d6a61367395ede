/* A program linked against MPICH, so that mana_launch accepts it. It never initializes
 * MPI: the coordinator tests wrap a fake launcher around it and at most run it once as a
 * single process. MPI_Initialized is one of the few calls allowed before MPI_Init, and it
 * keeps the link to libmpich.so.12. */
#include <mpi.h>
#include <stdio.h>

int main(void)
{
  int initialized = 0;

  MPI_Initialized(&initialized);
  printf("mpi_app: MPI initialized: %d\n", initialized);
  return 0;
}
