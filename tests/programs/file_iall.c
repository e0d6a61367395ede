/*
 * file_iall.c - non-blocking collective file I/O in flight while the ranks compute: each step
 * every rank starts MPI_File_iwrite_at_all of its block (or, every third step,
 * MPI_File_iwrite_all through its file view), computes, then waits; every tenth step it reads
 * the previous step's blocks back with MPI_File_iread_at_all and checks them.  A checkpoint
 * may land while any of these is pending.
 *
 *   usage: file_iall [STEPS [PATH]]   defaults 200, ./file_iall.dat
 *
 * Output (rank 0, at the end) depends only on the arguments and the rank count.  The file is
 * deleted at the end.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"

#define BLOCK 4096

static double work(double x, int n)
{
  for (int i = 0; i < n; i++)
    x = x * 0.999999 + 1e-7 * (double)(i % 5);
  return x;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_iall");
  const long steps = mt_arg("file_iall", argc, argv, 1, 200);
  const char *path = argc > 2 ? argv[2] : "file_iall.dat";
  const int me = mt_.rank, np = mt_.size;
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path,
                    MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                    &fh) != MPI_SUCCESS)
    mt_die("cannot open the file");
  /* The view: rank r sees the r-th block of every stripe of np blocks. */
  MPI_Datatype stripe;
  MPI_Type_vector(1, BLOCK, BLOCK * np, MPI_INT, &stripe);
  MPI_Datatype strided;
  MPI_Type_create_resized(stripe, 0, (MPI_Aint)(sizeof(int) * BLOCK * np), &strided);
  MPI_Type_commit(&strided);
  int *out = mt_alloc(sizeof(int) * BLOCK), *in = mt_alloc(sizeof(int) * BLOCK * np);
  long bad = 0;
  uint64_t digest = 1469598103934665603ULL;
  double x = 1.0 + me;
  for (long s = 0; s < steps; s++) {
    for (int i = 0; i < BLOCK; i++)
      out[i] = (int)(s * 1000003 + me * 7919 + i);
    MPI_Request rq;
    if (s % 3 == 2) {
      MPI_File_set_view(
          fh, (MPI_Offset)sizeof(int) * BLOCK * np * s + (MPI_Offset)sizeof(int) * BLOCK * me,
          MPI_INT, strided, "native", MPI_INFO_NULL);
      MPI_File_iwrite_all(fh, out, BLOCK, MPI_INT, &rq);
    } else {
      MPI_File_iwrite_at_all(fh, (MPI_Offset)sizeof(int) * BLOCK * (np * s + me), out, BLOCK,
                             MPI_INT, &rq);
    }
    x = work(x, 200000);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (s % 3 == 2)
      MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (s % 10 == 9) {
      MPI_File_iread_at_all(fh, (MPI_Offset)sizeof(int) * BLOCK * np * s, in, BLOCK * np, MPI_INT,
                            &rq);
      x = work(x, 50000);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      for (int r = 0; r < np; r++)
        for (int i = 0; i < BLOCK; i++)
          if (in[r * BLOCK + i] != (int)(s * 1000003 + r * 7919 + i))
            bad++;
      digest = mt_mix(digest ^ (uint64_t)in[(s * 31) % (BLOCK * np)]);
    }
  }
  long total_bad = 0;
  MPI_Reduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  uint64_t digests[64];
  MPI_Gather(&digest, 1, MPI_UINT64_T, digests, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (me == 0) {
    mt_log("steps %ld, ranks %d", steps, np);
    for (int r = 0; r < np && r < 64; r++)
      mt_log("rank %d read-back digest %016llx", r, (unsigned long long)digests[r]);
    mt_check_int("blocks read back wrong", total_bad, 0);
  }
  MPI_File_close(&fh);
  MPI_Type_free(&strided);
  MPI_Type_free(&stripe);
  free(out);
  free(in);
  return mt_end();
}
