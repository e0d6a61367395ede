/* MPI_Alloc_mem / MPI_Free_mem.  MPICH would allocate in the lower half, outside the window,
 * where a checkpoint does not look; the application's memory must live in the upper half.  The
 * standard allows plain memory here (there is no RDMA registration to gain on our transports;
 * on InfiniBand UCX registers lazily anyway). */
#include <errno.h>

#include "stub.h"

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
  (void)info;
  void *p = NULL;
  if (size < 0)
    return MPI_ERR_SIZE;
  if (posix_memalign(&p, 64, size ? (size_t)size : 1) != 0)
    return MPI_ERR_NO_MEM;
  *(void **)baseptr = p;
  return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
  free(base);
  return MPI_SUCCESS;
}
