/* Split collective file operations (MPI_File_*_begin ... _end) across a checkpoint. */
#ifndef MANA_FILE_SPLIT_H
#define MANA_FILE_SPLIT_H

#include <mpi.h>

enum mana_split_kind {
  MANA_SPLIT_READ_ALL = 1,
  MANA_SPLIT_WRITE_ALL,
  MANA_SPLIT_READ_AT_ALL,
  MANA_SPLIT_WRITE_AT_ALL,
  MANA_SPLIT_READ_ORDERED,
  MANA_SPLIT_WRITE_ORDERED,
};

/* Part of a file's record (mpiio.c). */
struct mana_file_split {
  int begun;  /* begun by the application and not ended by it */
  int saved;  /* status holds what MPI reported for it; MPI holds an empty stand-in */
  int failed; /* a checkpoint could not put the stand-in in place: refused */
  enum mana_split_kind kind;
  void *buf; /* the application's, for the stand-in (MPI checks it, reads nothing) */
  MPI_Status status;
};

/* After MPI's _begin succeeded for the application. */
void mana_file_split_begun(struct mana_file_split *s, enum mana_split_kind kind, const void *buf);
/* After MPI's _end succeeded for the application: STATUS becomes the saved one, if any. */
void mana_file_split_ended(struct mana_file_split *s, MPI_Status *status);

/* At a checkpoint, nothing in flight, on the checkpoint thread, collectively over the file's
 * members (every member has begun the same split: the begin is counted on the file's clock),
 * files in the order all members agree on: the split on the real file F is ended in MPI, its
 * status saved, and an empty one begun in its place. */
void mana_file_split_stand_in(MPI_File f, struct mana_file_split *s);
/* At restart, collectively as above: the empty stand-in begun on the reopened file F.  An MPI
 * error code. */
int mana_file_split_restore(MPI_File f, const struct mana_file_split *s);

#endif
