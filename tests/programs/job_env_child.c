/*
 * job_env_child.c - a program linked with MPICH that job_env starts from inside an MPI job:
 * it asks MPI for its version without initializing it, as MPI allows, and prints the answer.
 * Not a test of its own (it does not call MPI_Init).
 */
#include <mpi.h>
#include <stdio.h>

int main(void)
{
  int version = 0, subversion = 0, initialized = -1;
  MPI_Get_version(&version, &subversion);
  MPI_Initialized(&initialized);
  printf("job_env_child: MPI %d.%d, initialized %d\n", version, subversion, initialized);
  return 0;
}
