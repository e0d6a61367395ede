/* Datatype decoding: MPI_Type_get_contents returns datatype handles the application must see
 * as virtual ones (and may free, when they are derived). */
#include "stub.h"

static void virtualize(MPI_Datatype types[], MPI_Count n, MPI_Count max)
{
  for (MPI_Count i = 0; i < n && i < max; i++)
    types[i] = MANA_NEW(DATATYPE, MPI_Datatype, types[i]);
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[],
                          MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
  MPI_Datatype real = MANA_REAL(DATATYPE, MPI_Datatype, datatype);
  int rc = MANA_LH_CALL(MPI_Type_get_contents, real, max_integers, max_addresses, max_datatypes,
                        array_of_integers, array_of_addresses, array_of_datatypes);
  int ni, na, nd, combiner;
  if (rc == MPI_SUCCESS &&
      MANA_LH_CALL(MPI_Type_get_envelope, real, &ni, &na, &nd, &combiner) == MPI_SUCCESS)
    virtualize(array_of_datatypes, nd, max_datatypes);
  return rc;
}

int MPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers,
                            MPI_Count max_addresses, MPI_Count max_large_counts,
                            MPI_Count max_datatypes, int array_of_integers[],
                            MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                            MPI_Datatype array_of_datatypes[])
{
  MPI_Datatype real = MANA_REAL(DATATYPE, MPI_Datatype, datatype);
  int rc = MANA_LH_CALL(MPI_Type_get_contents_c, real, max_integers, max_addresses,
                        max_large_counts, max_datatypes, array_of_integers, array_of_addresses,
                        array_of_large_counts, array_of_datatypes);
  MPI_Count ni, na, nl, nd;
  int combiner;
  if (rc == MPI_SUCCESS &&
      MANA_LH_CALL(MPI_Type_get_envelope_c, real, &ni, &na, &nl, &nd, &combiner) == MPI_SUCCESS)
    virtualize(array_of_datatypes, nd, max_datatypes);
  return rc;
}
