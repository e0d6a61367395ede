/* MPICH's QMPI tool interface: QMPI_Register_tool_name, which programs call from a
 * constructor, before main, and the five calls a loaded tool makes.
 *
 * Debian's MPICH 4.0.2 is built without QMPI: all six answer MPI_ERR_UNSUPPORTED_OPERATION
 * and no tool is ever loaded, whatever MPIR_CVAR_QMPI_TOOL_LIST says.  The stub answers the
 * same, without crossing into the lower half (a constructor runs before anything is set up).
 * Before, the stub did not offer them and a program that calls them did not load under mana
 * (MPICH's own mpi_t/qmpi_test: undefined symbol QMPI_Register_tool_name).  With an MPICH
 * that loads tools, a tool would intercept calls inside the lower half, on its thread pointer
 * and with real handles, which the stub would have to interpose first. */
#include "stub.h"

int QMPI_Register_tool_name(const char *tool_name, void (*init_function_ptr)(int tool_id))
{
  (void)tool_name;
  (void)init_function_ptr;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

int QMPI_Register_tool_storage(int tool_id, void *tool_storage)
{
  (void)tool_id;
  (void)tool_storage;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

int QMPI_Register_function(int calling_tool_id, enum QMPI_Functions_enum function_enum,
                           void (*function_ptr)(void))
{
  (void)calling_tool_id;
  (void)function_enum;
  (void)function_ptr;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

int QMPI_Get_function(int calling_tool_id, enum QMPI_Functions_enum function_enum,
                      void (**function_ptr)(void), int *next_tool_id)
{
  (void)calling_tool_id;
  (void)function_enum;
  (void)function_ptr;
  (void)next_tool_id;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

int QMPI_Get_tool_storage(QMPI_Context context, int tool_id, void **storage)
{
  (void)context;
  (void)tool_id;
  (void)storage;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

int QMPI_Get_calling_address(QMPI_Context context, void **address)
{
  (void)context;
  (void)address;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}
