/*
 * compute_after_call.c - an MPI call, then a long computation without any MPI call, as a
 * time step of many codes is: a checkpoint asked for during the computation must still park
 * the thread (in the park signal's handler), also when the signal found the thread on its way
 * out of the MPI call, past the call's last park check.
 *
 * Each rank sums a series before and after the call (MPI_Pcontrol) and the sums are reduced
 * at the end.  Before the call each rank prints on stderr
 *   compute_after_call: rank R pid P in MPI_Pcontrol
 * With COMPUTE_AFTER_CALL_STOP=FILE the computation after the call goes on until FILE exists
 * (at most 60 s, then the program fails); without it, it ends after a fixed number of terms.
 * Under MANA_FAULT=wrapper-linger the stub keeps the thread in its code after MPI_Pcontrol's
 * park check until a checkpoint asks it to park (tests/integration/park_on_way_out.sh).
 * Ranks: 1 or 2 (the reduced sums are compared exactly).  Arguments: none.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define TERMS 2000000
#define MAX_WAIT_S 60

/* A deterministic series, so that every run and every restart prints the same sums. */
static double series(long from, long to)
{
  double s = 0.0;
  for (long k = from; k < to; k++)
    s += 1.0 / ((double)k * (double)k + 1.0);
  return s;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("compute_after_call");
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  double before = series(1 + rank, TERMS);
  fprintf(stderr, "compute_after_call: rank %d pid %d in MPI_Pcontrol\n", rank, (int)getpid());
  fflush(stderr);
  MPI_Pcontrol(1);

  /* The computation after the call: no MPI call until the stop file exists. */
  const char *stop = getenv("COMPUTE_AFTER_CALL_STOP");
  double after = series(TERMS, 2 * TERMS);
  volatile double spin = 0.0;
  time_t start = time(NULL);
  int stopped = 1;
  while (stop && access(stop, F_OK) != 0) {
    if (time(NULL) - start > MAX_WAIT_S) {
      stopped = 0;
      break;
    }
    for (int i = 0; i < 100000; i++)
      spin += 1e-9;
  }
  mt_check_int("the computation after the call ended by its stop file", stopped, 1);

  double sums[2] = {before, after}, total[2];
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double want[2] = {0.0, 0.0};
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int r = 0; r < size; r++) {
    want[0] += series(1 + r, TERMS);
    want[1] += series(TERMS, 2 * TERMS);
  }
  mt_check_dbls("the sums before and after the call, reduced", total, want, 2);
  return mt_end();
}
