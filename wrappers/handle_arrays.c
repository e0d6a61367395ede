/* Translation of handle arrays (alltoallw types, struct types, spawn infos) and the lengths
 * the generated wrappers need for them. */
#include "stub.h"

#define REAL_ARRAY(kind_lc, KIND, T)                                               \
  T *mana_real_array_##kind_lc(const T *virt, size_t n, T *stack_buf)              \
  {                                                                                \
    T *out = n <= MANA_STACK_HANDLES ? stack_buf : malloc(n * sizeof(T));          \
    if (!out)                                                                      \
      abort();                                                                     \
    for (size_t i = 0; i < n; i++)                                                 \
      out[i] = (T)(uint32_t)mana_handle_real(MANA_KIND_##KIND, (uint32_t)virt[i]); \
    return out;                                                                    \
  }
REAL_ARRAY(datatype, DATATYPE, MPI_Datatype)
REAL_ARRAY(request, REQUEST, MPI_Request)
REAL_ARRAY(info, INFO, MPI_Info)
REAL_ARRAY(comm, COMM, MPI_Comm)

/* Lengths of argument arrays.  They are asked for inside collective wrappers, after the clock
 * counted the collective and, for persistent ones, before the request's record exists: no
 * park point in them. */

/* alltoallw on an intercommunicator takes remote-size arrays. */
size_t mana_comm_size(MPI_Comm comm)
{
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, comm);
  int inter = 0, size = 0;
  MANA_LH_CALL_NOPARK(MPI_Comm_test_inter, real, &inter);
  if (inter)
    MANA_LH_CALL_NOPARK(MPI_Comm_remote_size, real, &size);
  else
    MANA_LH_CALL_NOPARK(MPI_Comm_size, real, &size);
  return size > 0 ? (size_t)size : 0;
}

/* reduce_scatter's counts on an intercommunicator are per member of the local group. */
size_t mana_local_size(MPI_Comm comm)
{
  int size = 0;
  MANA_LH_CALL_NOPARK(MPI_Comm_size, MANA_REAL(COMM, MPI_Comm, comm), &size);
  return size > 0 ? (size_t)size : 0;
}

static void neighbor_counts(MPI_Comm comm, int *in, int *out)
{
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, comm);
  int topo = MPI_UNDEFINED, weighted = 0;
  *in = *out = 0;
  MANA_LH_CALL_NOPARK(MPI_Topo_test, real, &topo);
  if (topo == MPI_CART) {
    int ndims = 0;
    MANA_LH_CALL_NOPARK(MPI_Cartdim_get, real, &ndims);
    *in = *out = 2 * ndims;
  } else if (topo == MPI_GRAPH) {
    int rank = 0, n = 0;
    MANA_LH_CALL_NOPARK(MPI_Comm_rank, real, &rank);
    MANA_LH_CALL_NOPARK(MPI_Graph_neighbors_count, real, rank, &n);
    *in = *out = n;
  } else if (topo == MPI_DIST_GRAPH) {
    MANA_LH_CALL_NOPARK(MPI_Dist_graph_neighbors_count, real, in, out, &weighted);
  }
}

size_t mana_neighbor_in(MPI_Comm comm)
{
  int in, out;
  neighbor_counts(comm, &in, &out);
  return (size_t)in;
}

size_t mana_neighbor_out(MPI_Comm comm)
{
  int in, out;
  neighbor_counts(comm, &in, &out);
  return (size_t)out;
}
