/*
 * mpiio.c - MPI-IO: File_open (CREATE|RDWR), independent write_at/read_at, File_sync,
 * get_size, set_size, get_amode, get_group, set_view with a derived (strided, interleaved)
 * filetype and a displacement, collective write_all/read_all, write_at_all/read_at_all,
 * seek (SET/CUR/END) and get_position, get_byte_offset, iwrite_at/iread_at + Wait, close,
 * File_delete; iwrite_at_all/iread_at_all through one aggregator, completed by Waitall and by
 * Wait. Files live in a fresh directory under argv[1], else $TMPDIR, else /tmp; rank 0
 * creates it and removes it at the end. Nothing about the path is printed.
 * Ranks: 2.
 */
#include "mpitest.h"
#include <errno.h>
#include <unistd.h>

#define N 16 /* ints per rank per phase */

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("mpiio");
  mt_require_size(2);
  const int me = mt_.rank, np = mt_.size;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_File fh;
  MPI_Status st;
  MPI_Offset size, pos;
  int cnt;

  /* per-run directory, made by rank 0 and broadcast */
  char dir[512] = "", path[600];
  if (me == 0) {
    const char *base = argc > 1 ? argv[1] : getenv("TMPDIR");
    if (!base || !*base)
      base = "/tmp";
    snprintf(dir, sizeof dir, "%s/mana-mpiio-XXXXXX", base);
    if (!mkdtemp(dir)) {
      fprintf(stderr, "mpiio: mkdtemp in %s failed: %s\n", base, strerror(errno));
      dir[0] = '\0';
    }
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, w);
  if (!dir[0]) {
    mt_check(0, "could not create a temporary directory");
    return mt_end();
  }
  snprintf(path, sizeof path, "%s/data.bin", dir);

  /* 1. independent I/O at explicit offsets */
  MPI_File_open(w, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  {
    int amode;
    MPI_File_get_amode(fh, &amode);
    mt_check(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "get_amode = CREATE|RDWR");
    MPI_Group g, wg;
    int res;
    MPI_File_get_group(fh, &g);
    MPI_Comm_group(w, &wg);
    MPI_Group_compare(g, wg, &res);
    mt_check(res == MPI_IDENT, "file group is the world group");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);

    int out[N], in[N], exp[N];
    for (int i = 0; i < N; i++) {
      out[i] = me * 1000 + i;
      exp[i] = (1 - me) * 1000 + i;
    }
    MPI_File_write_at(fh, (MPI_Offset)me * N * 4, out, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("write_at count", cnt, N);
    MPI_File_sync(fh);
    MPI_Barrier(w);
    MPI_File_sync(fh);
    MPI_File_read_at(fh, (MPI_Offset)(1 - me) * N * 4, in, N, MPI_INT, &st);
    mt_check_ints("read_at the other rank's block", in, exp, N);
    MPI_File_get_size(fh, &size);
    mt_check_int("file size after both blocks", (long long)size, 2LL * N * 4);
    /* reading past the end returns fewer elements */
    MPI_File_read_at(fh, 2LL * N * 4 - 8, in, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("read_at across end of file: count", cnt, 2);
  }
  MPI_Barrier(w);

  /* 2. a file view interleaving the ranks in blocks of 4 ints; collective write_all */
  {
    MPI_Datatype blk, ftype;
    MPI_Type_contiguous(4, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)(np * 4 * sizeof(int)), &ftype);
    MPI_Type_commit(&ftype);
    MPI_Offset disp = 2LL * N * 4 + (MPI_Offset)me * 4 * 4; /* after phase 1's data */
    MPI_File_set_view(fh, disp, MPI_INT, ftype, "native", MPI_INFO_NULL);
    int out[N];
    for (int i = 0; i < N; i++)
      out[i] = 10000 + me * 100 + i;
    MPI_File_write_all(fh, out, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("write_all count", cnt, N);
    MPI_File_get_position(fh, &pos);
    mt_check_int("position after write_all (in etypes)", (long long)pos, N);
    MPI_Offset byteoff;
    MPI_File_get_byte_offset(fh, 4, &byteoff);
    mt_check_int("byte offset of view element 4", (long long)byteoff, (long long)disp + np * 4 * 4);
    MPI_File_sync(fh);
    MPI_Barrier(w);
    MPI_File_sync(fh);

    /* read it back through the view with read_all after seeking to the start */
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    int in[N];
    MPI_File_read_all(fh, in, N, MPI_INT, &st);
    mt_check_ints("read_all through the view", in, out, N);

    /* rank 0 checks the raw interleaving with a plain byte view */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (me == 0) {
      int raw[2 * N], exp[2 * N];
      MPI_File_read_at(fh, 2LL * N * 4, raw, 2 * N, MPI_INT, &st);
      for (int k = 0; k < 2 * N; k++) {
        int blkno = k / 4, owner = blkno % 2, idx = (blkno / 2) * 4 + k % 4;
        exp[k] = 10000 + owner * 100 + idx;
      }
      mt_check_ints("raw file contents interleaved in blocks of 4", raw, exp, 2 * N);
    }
    MPI_Type_free(&blk);
    MPI_Type_free(&ftype);
  }

  /* 3. collective explicit-offset I/O */
  {
    MPI_Offset base = 4LL * N * 4;
    double out[4], in[4], exp[4];
    for (int i = 0; i < 4; i++) {
      out[i] = me + i * 0.25;
      exp[i] = (1 - me) + i * 0.25;
    }
    MPI_File_write_at_all(fh, base + (MPI_Offset)me * sizeof out, out, 4, MPI_DOUBLE, &st);
    MPI_File_sync(fh);
    MPI_Barrier(w);
    MPI_File_sync(fh);
    MPI_File_read_at_all(fh, base + (MPI_Offset)(1 - me) * sizeof out, in, 4, MPI_DOUBLE, &st);
    mt_check_dbls("write_at_all / read_at_all", in, exp, 4);
  }

  /* 4. seek and positions (individual file pointer, byte view) */
  {
    MPI_File_seek(fh, 8, MPI_SEEK_SET);
    MPI_File_seek(fh, 4, MPI_SEEK_CUR);
    MPI_File_get_position(fh, &pos);
    mt_check_int("seek SET 8 then CUR +4", (long long)pos, 12);
    int v;
    MPI_File_read(fh, &v, 1, MPI_INT, &st);
    mt_check_int("read at position 12 (phase-1 int 3 of rank 0)", v, 3);
    MPI_File_get_position(fh, &pos);
    mt_check_int("position after reading one int", (long long)pos, 16);
    MPI_File_get_size(fh, &size);
    MPI_File_seek(fh, -8, MPI_SEEK_END);
    MPI_File_get_position(fh, &pos);
    mt_check_int("seek END -8 (relative to size)", (long long)(size - pos), 8);
  }
  MPI_Barrier(w);

  /* 5. non-blocking independent I/O */
  {
    MPI_Offset base = 5LL * N * 4;
    int out[8], in[8];
    MPI_Request rq;
    for (int i = 0; i < 8; i++)
      out[i] = -(me * 10 + i);
    MPI_File_iwrite_at(fh, base + (MPI_Offset)me * sizeof out, out, 8, MPI_INT, &rq);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    mt_check_int("iwrite_at count", cnt, 8);
    MPI_File_sync(fh);
    MPI_Barrier(w);
    MPI_File_sync(fh);
    MPI_File_iread_at(fh, base + (MPI_Offset)(1 - me) * sizeof out, in, 8, MPI_INT, &rq);
    MPI_Wait(&rq, &st);
    int exp[8];
    for (int i = 0; i < 8; i++)
      exp[i] = -((1 - me) * 10 + i);
    mt_check_ints("iread_at the other rank's data", in, exp, 8);
  }

  /* 6. the access mode is still the one the file was opened with; set_size truncates;
   * close; delete */
  {
    int amode;
    MPI_File_get_amode(fh, &amode);
    mt_check(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "get_amode at the end = CREATE|RDWR");
  }
  MPI_File_set_size(fh, 100);
  MPI_File_get_size(fh, &size);
  mt_check_int("size after set_size(100)", (long long)size, 100);
  MPI_File_close(&fh);
  mt_check(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");

  /* reopen read-only, check size, close */
  MPI_File_open(w, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  MPI_File_get_size(fh, &size);
  mt_check_int("size after reopening read-only", (long long)size, 100);
  MPI_File_close(&fh);

  /* non-blocking collective I/O through a single aggregator (cb_nodes 1): four 1 MiB blocks
   * per rank written with iwrite_at_all and read back with iread_at_all, each batch completed
   * by one Waitall, then by Wait one by one */
  {
    enum { NB = 4, BLOCK = 1 << 20 };
    char nbpath[640];
    snprintf(nbpath, sizeof nbpath, "%s/nonblocking", dir);
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "romio_cb_write", "enable");
    MPI_Info_set(hints, "romio_cb_read", "enable");
    MPI_Info_set(hints, "cb_nodes", "1");
    MPI_Info_set(hints, "cb_buffer_size", "4194304");
    MPI_Request rq[NB];
    char *blk[NB];
    for (int b = 0; b < NB; b++)
      blk[b] = mt_alloc(BLOCK);
    int wrong[2] = {0, 0};
    for (int round = 0; round < 2; round++) {
      MPI_File_open(w, nbpath, MPI_MODE_CREATE | MPI_MODE_WRONLY, hints, &fh);
      for (int b = 0; b < NB; b++) {
        memset(blk[b], 'A' + (me * NB + b + round) % 26, BLOCK);
        MPI_File_iwrite_at_all(fh, (MPI_Offset)(me * NB + b) * BLOCK, blk[b], BLOCK, MPI_CHAR,
                               &rq[b]);
      }
      if (round == 0)
        MPI_Waitall(NB, rq, MPI_STATUSES_IGNORE);
      for (int b = 0; round == 1 && b < NB; b++)
        MPI_Wait(&rq[b], MPI_STATUS_IGNORE);
      MPI_File_close(&fh);
      MPI_File_open(w, nbpath, MPI_MODE_RDONLY, hints, &fh);
      for (int b = 0; b < NB; b++) {
        memset(blk[b], 0, BLOCK);
        MPI_File_iread_at_all(fh, (MPI_Offset)(me * NB + b) * BLOCK, blk[b], BLOCK, MPI_CHAR,
                              &rq[b]);
      }
      if (round == 0)
        MPI_Waitall(NB, rq, MPI_STATUSES_IGNORE);
      for (int b = 0; round == 1 && b < NB; b++)
        MPI_Wait(&rq[b], MPI_STATUS_IGNORE);
      MPI_File_close(&fh);
      for (int b = 0; b < NB; b++)
        for (int k = 0; k < BLOCK; k++)
          wrong[round] += blk[b][k] != 'A' + (me * NB + b + round) % 26;
    }
    mt_check_ints("bytes read back wrong (Waitall, Wait)", wrong, (int[]){0, 0}, 2);
    for (int b = 0; b < NB; b++)
      free(blk[b]);
    MPI_Info_free(&hints);
    MPI_Barrier(w);
    if (me == 0)
      MPI_File_delete(nbpath, MPI_INFO_NULL);
  }

  MPI_Barrier(w);
  if (me == 0) {
    int rc = MPI_File_delete(path, MPI_INFO_NULL);
    mt_check(rc == MPI_SUCCESS && access(path, F_OK) != 0, "file_delete removed the file");
    /* opening a deleted file without CREATE fails (files default to MPI_ERRORS_RETURN) */
    rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    int cls = -1;
    if (rc != MPI_SUCCESS)
      MPI_Error_class(rc, &cls);
    mt_check(rc != MPI_SUCCESS && cls == MPI_ERR_NO_SUCH_FILE,
             "open of the deleted file fails with MPI_ERR_NO_SUCH_FILE");
    if (rmdir(dir) != 0)
      mt_check(0, "rmdir of the temporary directory failed");
  }
  return mt_end();
}
