/* The shared pointer of a file opened with MPI_MODE_SEQUENTIAL, moved back at restart.
 *
 * ROMIO refuses MPI_File_seek_shared on a sequential file, and MPI requires
 * MPI_DISPLACEMENT_CURRENT in every view of one, so neither the view's displacement nor the
 * pointer can be set directly.  Both are reached by going forward the way the application
 * went: rank 0 of the file's communicator reads the bytes up to the position through the shared
 * pointer (a readable file), or, for a write-only file, reads them through a second read-only
 * handle with the same view and writes the same bytes back through the shared pointer.  The
 * file's content is unchanged either way; it costs one pass over the bytes before the
 * position.  mpiio.c calls this once with the default view (to the view's displacement, before
 * MPI_File_set_view) and once with the view (to the pointer). */
#include <stdlib.h>

#include "file_sequential.h"
#include "stub.h"

#define CHUNK (1 << 20)

/* The second handle of a write-only file, with the view the bytes are counted in. */
static int open_reader(const char *path, const struct mana_seq_view *view, MPI_File *g)
{
  int rc =
      MANA_LH_CALL_NOPARK(MPI_File_open, MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, g);
  if (rc == MPI_SUCCESS && view)
    rc = MANA_LH_CALL_NOPARK(MPI_File_set_view, *g, view->disp, view->etype, view->filetype,
                             view->datarep, MPI_INFO_NULL);
  return rc;
}

/* Rank 0's part: `bytes` bytes forward, `unit` (the etype's size) at a time at least. */
static int advance_here(MPI_File f, const char *path, int amode, MPI_Offset bytes, int unit,
                        const struct mana_seq_view *view)
{
  MPI_Offset step = CHUNK - CHUNK % unit;
  if (step < unit)
    step = unit;
  char *buf = malloc((size_t)step);
  if (!buf)
    return MPI_ERR_NO_MEM;
  int rc = MPI_SUCCESS, writeonly = (amode & MPI_MODE_WRONLY) != 0;
  MPI_File g = MPI_FILE_NULL;
  if (writeonly)
    rc = open_reader(path, view, &g);
  for (MPI_Offset done = 0; rc == MPI_SUCCESS && done < bytes; done += step) {
    if (step > bytes - done)
      step = bytes - done;
    if (writeonly) {
      rc = MANA_LH_CALL_NOPARK(MPI_File_read_at, g, done / unit, buf, (int)step, MPI_BYTE,
                               MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS)
        rc = MANA_LH_CALL_NOPARK(MPI_File_write_shared, f, buf, (int)step, MPI_BYTE,
                                 MPI_STATUS_IGNORE);
    } else {
      rc =
          MANA_LH_CALL_NOPARK(MPI_File_read_shared, f, buf, (int)step, MPI_BYTE, MPI_STATUS_IGNORE);
    }
  }
  if (g != MPI_FILE_NULL)
    MANA_LH_CALL_NOPARK(MPI_File_close, &g);
  free(buf);
  return rc;
}

int mana_file_seq_advance(MPI_File f, MPI_Comm c, const char *path, int amode, MPI_Offset etypes,
                          const struct mana_seq_view *view)
{
  int me = 0, unit = 1, rc = MANA_LH_CALL_NOPARK(MPI_Comm_rank, c, &me);
  if (rc == MPI_SUCCESS && view)
    rc = MANA_LH_CALL_NOPARK(MPI_Type_size, view->etype, &unit);
  if (rc == MPI_SUCCESS && unit <= 0)
    rc = MPI_ERR_TYPE;
  if (rc == MPI_SUCCESS && me == 0 && etypes > 0)
    rc = advance_here(f, path, amode, etypes * unit, unit, view);
  /* nobody goes on before the pointer is there; a failure on rank 0 is everyone's */
  int ok = rc == MPI_SUCCESS, all = 0;
  int brc = MANA_LH_CALL_NOPARK(MPI_Allreduce, &ok, &all, 1, MPI_INT, MPI_MIN, c);
  if (rc == MPI_SUCCESS && brc != MPI_SUCCESS)
    rc = brc;
  if (rc == MPI_SUCCESS && !all)
    rc = MPI_ERR_FILE;
  return rc;
}
