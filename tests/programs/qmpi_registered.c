/* A program that registers a QMPI tool from a constructor, before main, as MPICH's
 * mpi_t/qmpi_test does, and then communicates; rank 0 prints what registration answered.
 * Debian's MPICH is built without QMPI (MPI_ERR_UNSUPPORTED_OPERATION), and the stub must
 * answer the same; under mana the program did not even load before the stub offered the
 * QMPI calls.
 * Ranks: 2. */
#include <mpi.h>
#include <stdio.h>

static int registered = -1, loaded;

static void tool_init(int tool_id)
{
  (void)tool_id;
  loaded = 1;
}

__attribute__((constructor)) static void register_tool(void)
{
  registered = QMPI_Register_tool_name("mana_test_tool", tool_init);
}

int main(int argc, char **argv)
{
  int rank, value = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    value = 42;
    MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
  } else if (rank == 1) {
    MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  int mine[3] = {registered, loaded, value}, all[6];
  MPI_Gather(mine, 3, MPI_INT, all, 3, MPI_INT, 0, MPI_COMM_WORLD);
  for (int r = 0; rank == 0 && r < 2; r++)
    printf("rank %d: registration answered %d, tool %s, value %d\n", r, all[3 * r],
           all[3 * r + 1] ? "loaded" : "not loaded", all[3 * r + 2]);
  MPI_Finalize();
  return 0;
}
