/*
 * hybrid_omp.c - an MPI + OpenMP program at MPI_THREAD_MULTIPLE whose threads call collectives
 * at the same time, a long-running workload for checkpoint chains.
 *
 *   usage: hybrid_omp [STEPS [N]]   defaults 2000 200000
 *
 * Two OpenMP threads per rank share a vector of N doubles.  Every step both threads update
 * their half; the master then exchanges a boundary value with the neighbouring ranks
 * (Sendrecv on MPI_COMM_WORLD).  Every tenth step each thread calls MPI_Allreduce on its own
 * duplicate of MPI_COMM_WORLD at the same time as the other, and every hundredth step both
 * threads run an MPI_Iallreduce + MPI_Wait pair concurrently.  Rank 0 prints digests of what
 * every thread reduced at the end; they depend only on the arguments and the rank count.
 * Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <omp.h>

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("hybrid_omp");
  if (provided != MPI_THREAD_MULTIPLE) {
    if (mt_.rank == 0)
      printf("hybrid_omp: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Finalize();
    return 2;
  }
  const long steps = mt_arg("hybrid_omp", argc, argv, 1, 2000);
  const long n = mt_arg("hybrid_omp", argc, argv, 2, 200000);
  const int me = mt_.rank, np = mt_.size;
  MPI_Comm tcomm[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[1]);
  double *a = mt_alloc(sizeof(double) * (size_t)n);
  for (long i = 0; i < n; i++)
    a[i] = (double)((i * 37 + me * 11) % 101) / 101.0;
  uint64_t digest[2] = {1469598103934665603ULL, 1099511628211ULL};
  long long bad = 0;
  double edge = 0;

  omp_set_num_threads(2);
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    const long lo = t * (n / 2), hi = t ? n : n / 2;
    for (long s = 1; s <= steps; s++) {
      double local = 0;
      for (long i = lo; i < hi; i++) {
        a[i] = a[i] * 0.99 + 0.01 * (double)((i + s) % 17) / 17.0;
        local += a[i];
      }
#pragma omp barrier
#pragma omp master
      {
        double out = a[n - 1], in = 0;
        int right = (me + 1) % np, left = (me + np - 1) % np;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 7, &in, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        edge += in;
        a[0] = 0.5 * (a[0] + in);
      }
#pragma omp barrier
      if (s % 10 == 0) {
        double sum = 0;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, tcomm[t]);
        long long cnt = 1, total = 0;
        MPI_Allreduce(&cnt, &total, 1, MPI_LONG_LONG, MPI_SUM, tcomm[t]);
        if (total != np) {
#pragma omp atomic
          bad++;
        }
        digest[t] = mt_mix(digest[t] ^ (uint64_t)(sum * 1e9));
      }
      if (s % 100 == 0) {
        long long v = s * (t + 1) + me, mx = 0;
        MPI_Request rq;
        MPI_Iallreduce(&v, &mx, 1, MPI_LONG_LONG, MPI_MAX, tcomm[t], &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (mx != s * (t + 1) + np - 1) {
#pragma omp atomic
          bad++;
        }
      }
#pragma omp barrier
    }
  }

  uint64_t all[4 * 64];
  uint64_t mine[2] = {digest[0], digest[1]};
  long long total_bad = 0;
  MPI_Gather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Reduce(&bad, &total_bad, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  double edges = 0;
  MPI_Reduce(&edge, &edges, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    mt_log("parameters: ranks %d, steps %ld, n %ld", np, steps, n);
    for (int r = 0; r < np && r < 64; r++)
      mt_log("rank %d thread digests %016llx %016llx", r, (unsigned long long)all[2 * r],
             (unsigned long long)all[2 * r + 1]);
    mt_log("edge sum %.12e", edges);
    mt_check_int("collectives with a wrong result", total_bad, 0);
  }
  free(a);
  MPI_Comm_free(&tcomm[0]);
  MPI_Comm_free(&tcomm[1]);
  return mt_end();
}
