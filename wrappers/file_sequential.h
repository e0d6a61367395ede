/* The shared pointer of a sequential file, moved back at restart (file_sequential.c). */
#ifndef MANA_WRAPPERS_FILE_SEQUENTIAL_H
#define MANA_WRAPPERS_FILE_SEQUENTIAL_H

#include <mpi.h>

/* A view as the real MPI knows it (real datatype handles). */
struct mana_seq_view {
  MPI_Offset disp;
  MPI_Datatype etype, filetype;
  const char *datarep;
};

/* Moves the shared pointer of the sequential file f (real handle, opened on the real
 * communicator c at path with amode) forward by `etypes` elements of `view`'s etype (bytes when
 * view is NULL: the default view).  Collective over c; MPI_SUCCESS everywhere or an error
 * everywhere. */
int mana_file_seq_advance(MPI_File f, MPI_Comm c, const char *path, int amode, MPI_Offset etypes,
                          const struct mana_seq_view *view);

#endif
