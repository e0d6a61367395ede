/*
 * file_wait_skew.c - one rank waits for a non-blocking collective file operation at once,
 * while the other still makes MPI calls before it waits.  ROMIO completes such an operation
 * only inside MPI's own wait, which a thread cannot leave to park: a checkpoint asked for
 * while rank 1 waits must let rank 0 (parked, its operation pending) complete it first
 * (the checkpoint thread waits for it before the rank reports suspended).
 *
 *   usage: file_wait_skew [PATH]   default ./file_wait_skew.dat
 *
 * Each round every rank starts MPI_File_iwrite_all of PIECES pieces through a view that
 * interleaves the ranks' pieces (so ROMIO's two-phase write needs both ranks inside the
 * wait); rank 1 waits for it immediately, rank 0 first queries a few datatypes; every rank
 * then reads the round's region back and checks it.  Output depends only on the rank count.
 * Ranks: 2.
 */
#include "mpitest.h"

#define PIECE 256
#define PIECES 8
#define BLOCK (PIECE * PIECES)
#define ROUNDS 6

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_wait_skew");
  mt_require_size(2);
  const char *path = argc > 1 ? argv[1] : "file_wait_skew.dat";
  const int me = mt_.rank;
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path,
                    MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                    &fh) != MPI_SUCCESS)
    mt_die("cannot open the file");
  /* rank r sees piece r of every pair of pieces */
  MPI_Datatype piece, every_other;
  MPI_Type_contiguous(PIECE, MPI_INT, &piece);
  MPI_Type_create_resized(piece, 0, (MPI_Aint)(2 * PIECE * sizeof(int)), &every_other);
  MPI_Type_commit(&every_other);
  int out[BLOCK], in[2 * BLOCK];
  long sizes = 0;
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < BLOCK; i++)
      out[i] = round * 100000 + me * 10000 + i;
    MPI_Offset region = (MPI_Offset)sizeof(int) * 2 * BLOCK * round;
    MPI_File_set_view(fh, region + (MPI_Offset)sizeof(int) * PIECE * me, MPI_INT, every_other,
                      "native", MPI_INFO_NULL);
    MPI_Request rq;
    MPI_File_iwrite_all(fh, out, BLOCK, MPI_INT, &rq);
    if (me == 0)
      for (int k = 1; k <= 4; k++) {
        MPI_Datatype t;
        int size = 0;
        MPI_Type_contiguous(k, MPI_INT, &t);
        MPI_Type_size(t, &size);
        MPI_Type_free(&t);
        sizes += size;
      }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_read_at_all(fh, region, in, 2 * BLOCK, MPI_INT, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2 * BLOCK; i++) {
      int p = i / PIECE, r = p % 2, j = (p / 2) * PIECE + i % PIECE;
      bad += in[i] != round * 100000 + r * 10000 + j;
    }
  }
  MPI_File_close(&fh);
  MPI_Type_free(&every_other);
  MPI_Type_free(&piece);
  mt_check_int("blocks read back wrong", bad, 0);
  if (me == 0) {
    mt_check_int("sizes", sizes, (long)ROUNDS * 40);
    mt_append("rounds %d sizes %ld\n", ROUNDS, sizes);
  }
  return mt_end();
}
