/*
 * file_seq_view.c - a view whose displacement is MPI_DISPLACEMENT_CURRENT on a file opened
 * with MPI_MODE_SEQUENTIAL (as MPICH's io/setviewcur): the displacement is where the shared
 * pointer stood at MPI_File_set_view, which a restart must give the view again, not the
 * position of the reopened file's pointer.
 *
 *   usage: file_seq_view [PATH]   default ./file_seq_view.dat
 *
 * The file is written sequential and write-only: rank 0 writes a header of HEADER ints, then
 * every rank writes ROUNDS blocks of one int per rank in rank order (MPI_File_write_ordered).  The file is opened again read-only and
 * sequential; rank 0 reads the header through the shared pointer, every rank sets the view
 * at the current displacement and reads the blocks back in rank order, one round at a time,
 * with a barrier between the rounds.  Output depends only on the rank count.  Ranks: 2 or more.
 */
#include "mpitest.h"

#define HEADER 3
#define ROUNDS 8

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_seq_view");
  const char *path = argc > 1 ? argv[1] : "file_seq_view.dat";
  const int me = mt_.rank;
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                    MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    mt_die("cannot create the file");
  int header[HEADER] = {mt_.size, ROUNDS, 4242};
  MPI_File_write_ordered(fh, header, me == 0 ? HEADER : 0, MPI_INT, MPI_STATUS_IGNORE);
  for (int round = 0; round < ROUNDS; round++) {
    int v = 100 * round + me;
    MPI_File_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
  }
  MPI_File_close(&fh);

  if (MPI_File_open(MPI_COMM_WORLD, path,
                    MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                    &fh) != MPI_SUCCESS)
    mt_die("cannot open the file again");
  if (me == 0) {
    int got[HEADER] = {0};
    MPI_File_read_shared(fh, got, HEADER, MPI_INT, MPI_STATUS_IGNORE);
    mt_check_ints("header", got, header, HEADER);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int v = -1;
    MPI_File_read_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
    if (v != 100 * round + me)
      bad++;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mt_check_int("blocks read back in rank order, wrong", bad, 0);
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING];
  MPI_File_get_view(fh, &disp, &et, &ft, rep);
  mt_check_int("view displacement (bytes)", disp, (long long)sizeof(int) * HEADER);
  MPI_File_close(&fh);
  return mt_end();
}
