/*
 * file_split_coll.c - split collective file I/O (MPI_File_*_begin ... _end) with MPI calls
 * between the two halves, so that a checkpoint may land inside a split: each step every rank
 * writes its block with MPI_File_write_at_all_begin, or through its view with
 * MPI_File_write_all_begin, or in rank order with MPI_File_write_ordered_begin, makes an
 * allreduce on a duplicate of MPI_COMM_WORLD, then ends the write and checks the count its
 * status reports; every fifth step it reads the step back with MPI_File_read_at_all_begin and
 * _end (an allreduce between) and checks the data and the count.  Once, a second _begin is
 * made while a split is open (an allreduce between the two): MPI refuses it with an error of
 * class MPI_ERR_IO (the file's handler returns errors), and the first split ends normally.
 * Modelled on the write*be* tests of MPICH's Fortran and C++ suites, which a checkpoint
 * between _begin and _end refused before.
 *
 *   usage: file_split_coll [STEPS [PATH]]   defaults 60, ./file_split_coll.dat
 *
 * Output (rank 0, at the end) depends only on the arguments and the rank count.  The file is
 * deleted at the end.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"

#define BLOCK 1024

static int count_of(const MPI_Status *st)
{
  int n = -1;
  MPI_Get_count(st, MPI_INT, &n);
  return n;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_split_coll");
  const long steps = mt_arg("file_split_coll", argc, argv, 1, 60);
  const char *path = argc > 2 ? argv[2] : "file_split_coll.dat";
  const int me = mt_.rank, np = mt_.size;
  MPI_Comm side;
  MPI_Comm_dup(MPI_COMM_WORLD, &side);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path,
                    MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                    &fh) != MPI_SUCCESS)
    mt_die("cannot open the file");
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  int *out = mt_alloc(sizeof(int) * BLOCK), *in = mt_alloc(sizeof(int) * BLOCK * np);
  long bad_counts = 0, bad_data = 0, sum = 0;
  const MPI_Offset step_bytes = (MPI_Offset)sizeof(int) * BLOCK * np;
  for (long s = 0; s < steps; s++) {
    for (int i = 0; i < BLOCK; i++)
      out[i] = (int)(s * 1000003 + me * 7919 + i);
    MPI_Status st;
    int kind = (int)(s % 3), part = me + (int)s, total = 0;
    if (kind == 0) {
      MPI_File_write_at_all_begin(fh, step_bytes * s + (MPI_Offset)sizeof(int) * BLOCK * me, out,
                                  BLOCK, MPI_INT);
      MPI_Allreduce(&part, &total, 1, MPI_INT, MPI_SUM, side);
      MPI_File_write_at_all_end(fh, out, &st);
    } else if (kind == 1) {
      MPI_File_set_view(fh, step_bytes * s + (MPI_Offset)sizeof(int) * BLOCK * me, MPI_INT, MPI_INT,
                        "native", MPI_INFO_NULL);
      MPI_File_write_all_begin(fh, out, BLOCK, MPI_INT);
      MPI_Allreduce(&part, &total, 1, MPI_INT, MPI_SUM, side);
      MPI_File_write_all_end(fh, out, &st);
      MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    } else {
      /* the shared pointer: every rank's block in rank order, at the step's place */
      MPI_File_seek_shared(fh, step_bytes * s, MPI_SEEK_SET);
      MPI_File_write_ordered_begin(fh, out, BLOCK, MPI_INT);
      MPI_Allreduce(&part, &total, 1, MPI_INT, MPI_SUM, side);
      MPI_File_write_ordered_end(fh, out, &st);
    }
    sum += total;
    if (count_of(&st) != BLOCK)
      bad_counts++;
    if (s % 5 == 4) {
      MPI_File_read_at_all_begin(fh, step_bytes * s, in, BLOCK * np, MPI_INT);
      MPI_Allreduce(&part, &total, 1, MPI_INT, MPI_SUM, side);
      MPI_File_read_at_all_end(fh, in, &st);
      if (count_of(&st) != BLOCK * np)
        bad_counts++;
      for (int r = 0; r < np; r++)
        for (int i = 0; i < BLOCK; i++)
          if (in[r * BLOCK + i] != (int)(s * 1000003 + r * 7919 + i))
            bad_data++;
    }
    if (s == steps / 2) {
      /* A second split while one is open: refused, and the first one still ends well. */
      MPI_File_read_at_all_begin(fh, 0, in, BLOCK, MPI_INT);
      MPI_Allreduce(&part, &total, 1, MPI_INT, MPI_SUM, side);
      int rc = MPI_File_write_at_all_begin(fh, 0, out, BLOCK, MPI_INT), cls = MPI_SUCCESS;
      if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
      mt_check_int("error class of a second split begun", cls, MPI_ERR_IO);
      MPI_File_read_at_all_end(fh, in, &st);
      mt_check_int("count of the first split after the refused second", count_of(&st), BLOCK);
      mt_check_int("first value read by the first split", in[0], 0);
    }
  }
  long totals[3] = {bad_counts, bad_data, sum}, all[3] = {0, 0, 0};
  MPI_Reduce(totals, all, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    mt_log("steps %ld, ranks %d, allreduce sum %ld", steps, np, all[2]);
    mt_check_int("statuses with a wrong count", all[0], 0);
    mt_check_int("ints read back wrong", all[1], 0);
  }
  MPI_File_close(&fh);
  MPI_Comm_free(&side);
  free(out);
  free(in);
  return mt_end();
}
