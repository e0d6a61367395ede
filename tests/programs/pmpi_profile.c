/*
 * pmpi_profile.c - a profiling layer in the application, as tools build them on the PMPI
 * interface: the program defines MPI_Init_thread, MPI_Initialized, MPI_Query_thread,
 * MPI_Comm_rank, MPI_Comm_size, MPI_Wtime, MPI_Allreduce, MPI_Isend, MPI_Irecv, MPI_Wait and
 * MPI_Finalize itself, counts each call and forwards it to PMPI_.  The counts must be the
 * native ones: the layer sees the application's calls, and none of MPI's own (mana's stub
 * makes calls between its functions, as MPI_Query_thread asking MPI_Initialized, and those
 * must not reach the application's MPI_ functions either).
 *
 * Each round every rank asks its rank, size, the time and the thread level, passes a value
 * around the ring with MPI_Isend, MPI_Irecv and MPI_Wait, and reduces.  Ranks: 2 or more.
 * Arguments: [ROUNDS].
 */
#include <stdio.h>

#include "mpitest.h"

enum {
  INIT_THREAD,
  INITIALIZED,
  QUERY_THREAD,
  COMM_RANK,
  COMM_SIZE,
  WTIME,
  ALLREDUCE,
  ISEND,
  IRECV,
  WAIT,
  FINALIZE,
  NCOUNTED
};
static const char *const counted_names[NCOUNTED] = {
    "MPI_Init_thread", "MPI_Initialized", "MPI_Query_thread", "MPI_Comm_rank",
    "MPI_Comm_size",   "MPI_Wtime",       "MPI_Allreduce",    "MPI_Isend",
    "MPI_Irecv",       "MPI_Wait",        "MPI_Finalize"};
static long counts[NCOUNTED];

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  counts[INIT_THREAD]++;
  return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Initialized(int *flag)
{
  counts[INITIALIZED]++;
  return PMPI_Initialized(flag);
}

int MPI_Query_thread(int *provided)
{
  counts[QUERY_THREAD]++;
  return PMPI_Query_thread(provided);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
  counts[COMM_RANK]++;
  return PMPI_Comm_rank(comm, rank);
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
  counts[COMM_SIZE]++;
  return PMPI_Comm_size(comm, size);
}

double MPI_Wtime(void)
{
  counts[WTIME]++;
  return PMPI_Wtime();
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
  counts[ALLREDUCE]++;
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
  counts[ISEND]++;
  return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
  counts[IRECV]++;
  return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
  counts[WAIT]++;
  return PMPI_Wait(request, status);
}

int MPI_Finalize(void)
{
  counts[FINALIZE]++;
  return PMPI_Finalize();
}

int main(int argc, char **argv)
{
  int provided = -1, flag = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  mt_begin("pmpi_profile");
  int rounds = (int)mt_arg("pmpi_profile", argc, argv, 1, 40);
  int me = mt_.rank, n = mt_.size;
  if (n < 2)
    mt_die("needs at least 2 ranks");
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    int rank = -1, size = -1, level = -1, got = -1, sum = 0, in = me + round;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&level);
    MPI_Initialized(&flag);
    double t = MPI_Wtime();
    MPI_Request reqs[2];
    MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, round, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&in, 1, MPI_INT, (rank + 1) % size, round, MPI_COMM_WORLD, &reqs[1]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum + (level == provided) + flag + (t > 0);
  }
  mt_append("rank %d: total %ld\n", me, total);
  /* The layer's counts so far (MPI_Finalize and mt_end's own calls are not in them). */
  for (int k = 0; k < NCOUNTED; k++)
    mt_append("rank %d: %s called %ld times\n", me, counted_names[k], counts[k]);
  mt_check_int("ring values received", total > 0, 1);
  return mt_end();
}
