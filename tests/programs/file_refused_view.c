/*
 * file_refused_view.c - a file view MPI refuses, then the file used on (as MPICH's
 * io/tst_fileview): ROMIO leaves a refused view half-installed, its types held and the
 * individual pointer negative, until the next view or the close.  A --kill checkpoint after it
 * must not leave those types behind at MPI_Finalize, and the restart must not seek to the
 * negative pointer.
 *
 *   usage: file_refused_view [PATH]   default ./file_refused_view.dat
 *
 * Each rank, on its own file (MPI_COMM_SELF): errors returned; ROUNDS times a view whose
 * filetype has a negative displacement (must fail), freeing the type, then a valid view
 * (contiguous ints from the round's offset), ints written and read back through it.
 * Output depends only on the rank count.  Ranks: any.
 */
#include "mpitest.h"

#define ROUNDS 6
#define N 16

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_refused_view");
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d", argc > 1 ? argv[1] : "file_refused_view.dat", mt_.rank);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                    MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    mt_die("cannot open the file");
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  int refused = 0, bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    MPI_Datatype neg;
    int disp[2] = {-2, 2}, blen[2] = {1, 1};
    MPI_Type_indexed(2, blen, disp, MPI_INT, &neg);
    MPI_Type_commit(&neg);
    int rc = MPI_File_set_view(fh, 0, MPI_INT, neg, "native", MPI_INFO_NULL);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    refused += cls == MPI_ERR_IO;
    MPI_Type_free(&neg);
    /* calls while the refused view is in place; the first round has no view of its own before */
    for (int k = 0; k < (round == 0 ? 20 : 6); k++)
      MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_set_view(fh, (MPI_Offset)sizeof(int) * N * round, MPI_INT, MPI_INT, "native",
                      MPI_INFO_NULL);
    int out[N], in[N];
    for (int i = 0; i < N; i++)
      out[i] = 1000 * round + 10 * mt_.rank + i, in[i] = -1;
    MPI_File_write(fh, out, N / 2, MPI_INT, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_write(fh, out + N / 2, N / 2, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, 0, in, N, MPI_INT, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
      bad += in[i] != out[i];
  }
  mt_check_int("views refused with MPI_ERR_IO", refused, ROUNDS);
  mt_check_int("ints read back wrong", bad, 0);
  MPI_File_close(&fh);
  return mt_end();
}
