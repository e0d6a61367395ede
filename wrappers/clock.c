/* MPI_Wtime and MPI_Wtick, answered in the upper half (`local` in mpi_api.txt): a crossing
 * into the lower half costs tens of nanoseconds, and codes time their loops with MPI_Wtime.
 * The answers are MPICH's own clock, read the way it reads it. */
#include <time.h>

#include "stub.h"
#include "stub_hooks.h"

/* MPICH's MPI_Wtime is CLOCK_REALTIME less a whole number of seconds it fixes once (MPL's
 * clock_gettime timer).  That number is read from the first answer MPI gives, and kept for
 * the life of the process: across a restart too, where the new lower half's MPICH fixes
 * another one, so the application's clock neither jumps nor runs backwards. */
static int64_t epoch_s;
static int epoch_known; /* 0, then 1 once epoch_s is set (a race between threads sets it alike) */

static void read_epoch(void)
{
  struct timespec before, after;
  clock_gettime(CLOCK_REALTIME, &before);
  double mpi = MANA_LH_CALL_NOPARK(MPI_Wtime);
  clock_gettime(CLOCK_REALTIME, &after);
  double mid = 0.5 * ((double)before.tv_sec + (double)after.tv_sec) +
               0.5e-9 * ((double)before.tv_nsec + (double)after.tv_nsec);
  int64_t seconds = (int64_t)(mid - mpi + 0.5);
  epoch_s = seconds;
  __atomic_store_n(&epoch_known, 1, __ATOMIC_RELEASE);
}

int mana_local_Wtime(double *result)
{
  if (!__atomic_load_n(&epoch_known, __ATOMIC_ACQUIRE))
    read_epoch();
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  *result = (double)((int64_t)now.tv_sec - epoch_s) + 1.0e-9 * (double)now.tv_nsec;
  return 1;
}

int mana_local_Wtick(double *result)
{
  struct timespec res;
  if (clock_getres(CLOCK_REALTIME, &res) != 0)
    return 0;
  *result = (double)res.tv_sec + 1.0e-9 * (double)res.tv_nsec;
  return 1;
}
