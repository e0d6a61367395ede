/* A job that keeps an MPI file open across checkpoints: every iteration each rank appends one
 * record through its own file pointer in a strided view (MPI_File_write_all, collective), and
 * the ranks agree on a running checksum.  At the end the file is read back and its digest
 * printed by rank 0.  A checkpoint/kill/restart anywhere must give the same file and output,
 * which needs the file reopened at restart with its view and each rank's file pointer.
 *   usage: file_records ITERATIONS STEP_US PATH */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (rank == 0)
      fprintf(stderr, "usage: file_records ITERATIONS STEP_US PATH\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long iters = atol(argv[1]);
  long step_us = atol(argv[2]);
  const char *path = argv[3];
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_size(fh, 0);
  MPI_Datatype slot;
  MPI_Type_create_resized(MPI_INT64_T, 0, (MPI_Aint)(size * sizeof(int64_t)), &slot);
  MPI_Type_commit(&slot);
  MPI_File_set_view(fh, (MPI_Offset)(rank * sizeof(int64_t)), MPI_INT64_T, slot, "native",
                    MPI_INFO_NULL);
  int64_t sum = 0;
  for (long i = 0; i < iters; i++) {
    int64_t v = (int64_t)(i * 1000003 + rank * 7919) ^ sum, total = 0;
    MPI_File_write_all(fh, &v, 1, MPI_INT64_T, MPI_STATUS_IGNORE);
    MPI_Allreduce(&v, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    sum = (sum * 31 + total) & 0x7fffffffffff;
    struct timespec ts = {0, step_us * 1000};
    nanosleep(&ts, NULL);
  }
  MPI_Offset pos = 0;
  MPI_File_get_position(fh, &pos);
  MPI_File_close(&fh);
  MPI_Type_free(&slot);
  if (rank == 0) {
    MPI_File in;
    MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &in);
    MPI_Offset bytes = 0;
    MPI_File_get_size(in, &bytes);
    uint64_t h = 1469598103934665603ull;
    int64_t rec;
    for (MPI_Offset off = 0; off + (MPI_Offset)sizeof(rec) <= bytes; off += sizeof(rec)) {
      MPI_File_read_at(in, off, &rec, 1, MPI_INT64_T, MPI_STATUS_IGNORE);
      h = (h ^ (uint64_t)rec) * 1099511628211ull;
    }
    MPI_File_close(&in);
    printf("records %lld, rank 0 position %lld, file digest %016llx, sum %lld\n",
           (long long)(bytes / (MPI_Offset)sizeof(rec)), (long long)pos, (unsigned long long)h,
           (long long)sum);
  }
  MPI_Finalize();
  return 0;
}
