/*
 * std_io_views.c - MPI-IO with file views: a subarray filetype, a distributed-array
 * filetype, double buffering with split collective writes, and the consistency examples
 * (atomic mode, sync-barrier-sync, nonblocking accesses in a defined order).
 *
 * Source: MPI-3.1:
 *   section 13.9.2 "Subarray Filetype Constructor": a 2D array of doubles distributed by
 *     blocks of columns, each process's filetype from MPI_Type_create_subarray (C order);
 *   section 13.9.1 "Double Buffering with Split Collective I/O": double_buffer(), computing
 *     into one buffer while the other is written by MPI_File_write_all_begin/_end, with the
 *     TOGGLE_PTR macro, prolog, steady state and epilog;
 *   section 4.1.4 "Distributed Array Datatype Constructor", its example (an HPF-like
 *     filetype from MPI_Type_create_darray used as a view);
 *   section 13.6.11 "Examples" (Consistency and Semantics): process 0 writes ten ints
 *     (MPI_File_write_at) and process 1 reads them (MPI_File_read_at), ordered by a barrier,
 *     once in atomic mode (MPI_File_set_atomicity true) and once in nonatomic mode with
 *     sync-barrier-sync; and from "Asynchronous I/O" the fragment MPI_File_iwrite_at, MPI_Wait,
 *     MPI_File_iread_at, MPI_Wait, whose read must return the value written.
 * Adaptations: the subarray array is 20 x (10*size) (the standard's 100x100 on 4 processes,
 * 25 columns each); double_buffer's "compute_buffer" fills NBUF buffers of 64 floats, and
 * the view interleaves the processes' buffers (a 1D subarray filetype); the darray example
 * (a 3D array on 6 processes, BLOCK/CYCLIC/NONE) becomes a 12x16 array on a
 * Dims_create(size, 2) grid with (BLOCK, CYCLIC(2)); the consistency examples' "workfile"
 * and "myfile" are files of this run.  ROUNDS rounds with different data.  After every
 * collective write each process reads the whole file back through a plain view and checks
 * every element.
 * Files: in the directory argv[1], else /tmp, named std_io_views.<pid of rank 0>.*, removed
 * at the end.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"
#include <unistd.h>

#define ROUNDS 3
#define NBUF 5
#define BCOUNT 64

static char path[4][512];
static int rank, size;

static void fill_buf(float *buf, int bufcount, int iter, int round)
{
  for (int k = 0; k < bufcount; k++)
    buf[k] = (float)(rank * 100000 + round * 10000 + iter * 100 + k);
}

/* the standard's compute_buffer: fills the next buffer, done after NBUF of them */
static int iter_no;
static void compute_buffer(float *buf, int bufcount, int *done, int round)
{
  fill_buf(buf, bufcount, iter_no, round);
  iter_no++;
  *done = iter_no >= NBUF;
}

#define TOGGLE_PTR(x) (((x) == (buffer1)) ? (x = buffer2) : (x = buffer1))

static void double_buffer(MPI_File fh, MPI_Datatype buftype, int bufcount, int round)
{
  MPI_Status status;
  float *buffer1, *buffer2, *compute_buf_ptr, *write_buf_ptr;
  int done;
  buffer1 = (float *)malloc(bufcount * sizeof(float));
  buffer2 = (float *)malloc(bufcount * sizeof(float));
  compute_buf_ptr = buffer1;
  write_buf_ptr = buffer1;
  iter_no = 0;
  /* DOUBLE-BUFFER prolog */
  compute_buffer(compute_buf_ptr, bufcount, &done, round);
  MPI_File_write_all_begin(fh, write_buf_ptr, bufcount, buftype);
  /* DOUBLE-BUFFER steady state */
  while (!done) {
    TOGGLE_PTR(compute_buf_ptr);
    compute_buffer(compute_buf_ptr, bufcount, &done, round);
    MPI_File_write_all_end(fh, write_buf_ptr, &status);
    TOGGLE_PTR(write_buf_ptr);
    MPI_File_write_all_begin(fh, write_buf_ptr, bufcount, buftype);
  }
  /* DOUBLE-BUFFER epilog */
  MPI_File_write_all_end(fh, write_buf_ptr, &status);
  free(buffer1);
  free(buffer2);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_io_views");
  rank = mt_.rank;
  size = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  long pid = (long)getpid();
  MPI_Bcast(&pid, 1, MPI_LONG, 0, comm);
  const char *names[4] = {"subarray", "dbuf", "darray", "workfile"};
  for (int i = 0; i < 4; i++)
    snprintf(path[i], sizeof path[i], "%s/std_io_views.%ld.%s.dat", dir, pid, names[i]);

  int bad[6] = {0};
  for (int round = 0; round < ROUNDS; round++) {
    MPI_File fh;
    MPI_Status status;

    /* --- 13.9.2: subarray filetype --- */
    {
      enum { NR = 20, CP = 10 };
      int NC = CP * size;
      double subarray[NR][CP];
      MPI_Datatype filetype;
      int sizes[2], subsizes[2], starts[2];
      sizes[0] = NR;
      sizes[1] = NC;
      subsizes[0] = NR;
      subsizes[1] = CP;
      starts[0] = 0;
      starts[1] = rank * subsizes[1];
      MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &filetype);
      MPI_Type_commit(&filetype);
      for (int r = 0; r < NR; r++)
        for (int c = 0; c < CP; c++)
          subarray[r][c] = round * 100000.0 + r * NC + rank * CP + c;
      MPI_File_open(comm, path[0], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
      MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);
      MPI_Offset vd;
      MPI_Datatype ve, vf;
      char rep[MPI_MAX_DATAREP_STRING];
      MPI_File_get_view(fh, &vd, &ve, &vf, rep);
      /* the filetype returned has the same typemap (MPICH returns another combiner) */
      int vsize;
      MPI_Aint vlb, vext;
      MPI_Type_size(vf, &vsize);
      MPI_Type_get_extent(vf, &vlb, &vext);
      bad[0] += vd != 0 || ve != MPI_DOUBLE || vsize != NR * CP * (int)sizeof(double) || vlb != 0 ||
                vext != NR * NC * (MPI_Aint)sizeof(double) || strcmp(rep, "native") != 0;
      MPI_Type_free(&vf);
      MPI_File_write_all(fh, subarray, NR * CP, MPI_DOUBLE, &status);
      MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL);
      double *all = mt_alloc(sizeof(double) * NR * (size_t)NC);
      MPI_File_read_all(fh, all, NR * NC, MPI_DOUBLE, &status);
      for (int i = 0; i < NR * NC; i++)
        bad[0] += all[i] != round * 100000.0 + i;
      free(all);
      MPI_File_close(&fh);
      MPI_Type_free(&filetype);
    }

    /* --- 13.9.1: double buffering with split collective writes --- */
    {
      MPI_Datatype filetype;
      int gs = BCOUNT * size, ss = BCOUNT, st = rank * BCOUNT;
      MPI_Type_create_subarray(1, &gs, &ss, &st, MPI_ORDER_C, MPI_FLOAT, &filetype);
      MPI_Type_commit(&filetype);
      MPI_File_open(comm, path[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
      MPI_File_set_view(fh, 0, MPI_FLOAT, filetype, "native", MPI_INFO_NULL);
      double_buffer(fh, MPI_FLOAT, BCOUNT, round);
      MPI_File_set_view(fh, 0, MPI_FLOAT, MPI_FLOAT, "native", MPI_INFO_NULL);
      int n = NBUF * BCOUNT * size;
      float *all = mt_alloc(sizeof(float) * (size_t)n);
      MPI_File_read_at_all(fh, 0, all, n, MPI_FLOAT, &status);
      for (int it = 0; it < NBUF; it++)
        for (int p = 0; p < size; p++)
          for (int k = 0; k < BCOUNT; k++)
            bad[1] += all[(it * size + p) * BCOUNT + k] !=
                      (float)(p * 100000 + round * 10000 + it * 100 + k);
      free(all);
      MPI_File_close(&fh);
      MPI_Type_free(&filetype);
    }

    /* --- 4.1.4: a darray filetype --- */
    {
      enum { GR = 12, GC = 16 };
      int gsizes[2] = {GR, GC}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
      int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, psizes[2] = {0, 0};
      MPI_Dims_create(size, 2, psizes);
      MPI_Datatype filetype;
      MPI_Type_create_darray(size, rank, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT,
                             &filetype);
      MPI_Type_commit(&filetype);
      int pr = rank / psizes[1], pc = rank % psizes[1]; /* row-major process grid */
      int rb = (GR + psizes[0] - 1) / psizes[0];
      int local[GR * GC], nloc = 0;
      for (int i = 0; i < GR; i++)
        for (int j = 0; j < GC; j++)
          if (i / rb == pr && (j / 2) % psizes[1] == pc)
            local[nloc++] = round * 1000 + i * GC + j;
      int tsz;
      MPI_Type_size(filetype, &tsz);
      bad[2] += tsz != nloc * (int)sizeof(int);
      MPI_File_open(comm, path[2], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
      MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL);
      MPI_File_write_all(fh, local, nloc, MPI_INT, &status);
      MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
      int all[GR * GC];
      MPI_File_read_all(fh, all, GR * GC, MPI_INT, &status);
      for (int i = 0; i < GR * GC; i++)
        bad[2] += all[i] != round * 1000 + i;
      MPI_File_close(&fh);
      MPI_Type_free(&filetype);
    }

    /* --- 13.6.11: consistency --- */
    {
      int i, a[10], b[10];
      MPI_File_open(comm, path[3], MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
      MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
      /* atomic mode, ordered by a barrier */
      MPI_File_set_atomicity(fh, 1);
      int flag;
      MPI_File_get_atomicity(fh, &flag);
      bad[3] += !flag;
      if (rank == 0) {
        for (i = 0; i < 10; i++)
          a[i] = 5 + round;
        MPI_File_write_at(fh, 0, a, 10, MPI_INT, &status);
      }
      MPI_Barrier(comm);
      if (rank == 1) {
        for (i = 0; i < 10; i++)
          b[i] = -1;
        MPI_File_read_at(fh, 0, b, 10, MPI_INT, &status);
        int count;
        MPI_Get_count(&status, MPI_INT, &count);
        bad[3] += count != 10;
        for (i = 0; i < 10; i++)
          bad[3] += b[i] != 5 + round;
      }
      MPI_Barrier(comm);
      /* nonatomic mode with sync-barrier-sync */
      MPI_File_set_atomicity(fh, 0);
      if (rank == 0) {
        for (i = 0; i < 10; i++)
          a[i] = 50 + round;
        MPI_File_write_at(fh, 0, a, 10, MPI_INT, &status);
      }
      MPI_File_sync(fh);
      MPI_Barrier(comm);
      MPI_File_sync(fh);
      if (rank == 1) {
        MPI_File_read_at(fh, 0, b, 10, MPI_INT, &status);
        for (i = 0; i < 10; i++)
          bad[4] += b[i] != 50 + round;
      }
      MPI_Barrier(comm);
      /* asynchronous I/O in a defined order, on word 10 + rank */
      {
        int x = 4 + round, y = -1;
        MPI_Request reqs[2];
        MPI_File_iwrite_at(fh, 10 + rank, &x, 1, MPI_INT, &reqs[0]);
        MPI_Wait(&reqs[0], &status);
        MPI_File_iread_at(fh, 10 + rank, &y, 1, MPI_INT, &reqs[1]);
        MPI_Wait(&reqs[1], &status);
        bad[5] += y != 4 + round;
      }
      MPI_File_close(&fh);
    }
  }
  mt_check_int("subarray filetype: wrong elements", bad[0], 0);
  mt_check_int("double buffering with split collective writes: wrong elements", bad[1], 0);
  mt_check_int("darray filetype: wrong elements", bad[2], 0);
  mt_check_int("atomic mode write/barrier/read: wrong", bad[3], 0);
  mt_check_int("nonatomic mode sync-barrier-sync: wrong", bad[4], 0);
  mt_check_int("iwrite_at, wait, iread_at, wait: wrong", bad[5], 0);

  MPI_Barrier(comm);
  if (rank == 0) {
    int del = 0;
    for (int i = 0; i < 4; i++)
      del += MPI_File_delete(path[i], MPI_INFO_NULL) == MPI_SUCCESS;
    mt_check_int("files deleted", del, 4);
  }
  mt_allreduce_steps(4);
  return mt_end();
}
