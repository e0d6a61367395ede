/* Split collective file operations (MPI_File_*_begin ... _end) across a checkpoint.
 *
 * MPI lets an implementation make the whole operation in _begin (MPI-4.0, 14.4.5), and ROMIO
 * does: _begin runs the collective I/O and keeps its status, _end hands the status over and
 * needs no other process.  Between the two calls MPI holds a flag ("a split is active on this
 * file") and a status, and neither is in the image: a fresh MPI at restart has no split, so
 * the application's _end would fail there, and a second _begin would be accepted where MPI
 * refuses it.  So a checkpoint taken between them ends MPI's split itself, keeps its status in
 * the file's record, and begins an empty split of the same kind in its place (a count of 0:
 * no data, no pointer moved); a restart begins the same empty split on the reopened file.  The
 * application's calls then always go to MPI, which keeps its own rules (one split per file,
 * an _end needs a _begin), and the _end it makes gets the saved status instead of the empty
 * one's.  A thread held at the entry of its _end during the checkpoint thus finds the stand-in
 * when it goes on, as it would have found the real split.
 *
 * The stand-in is collective over the file's members; every member has begun the split, since
 * a _begin is counted on the file's collective clock, and each member puts stand-ins in the
 * same order of files. */
#include "file_split.h"

#include <stdint.h>

#include "p2p.h"

void mana_file_split_begun(struct mana_file_split *s, enum mana_split_kind kind, const void *buf)
{
  s->begun = 1;
  s->saved = 0;
  s->failed = 0;
  s->kind = kind;
  s->buf = (void *)(uintptr_t)buf;
}

void mana_file_split_ended(struct mana_file_split *s, MPI_Status *status)
{
  if (s->saved && status != MPI_STATUS_IGNORE)
    *status = s->status;
  s->begun = 0;
  s->saved = 0;
}

/* MPI's _end of the split on F into STATUS. */
static int end_in_mpi(MPI_File f, const struct mana_file_split *s, MPI_Status *status)
{
  switch (s->kind) {
  case MANA_SPLIT_READ_ALL:
    return MANA_LH_ANY(MPI_File_read_all_end, f, s->buf, status);
  case MANA_SPLIT_WRITE_ALL:
    return MANA_LH_ANY(MPI_File_write_all_end, f, s->buf, status);
  case MANA_SPLIT_READ_AT_ALL:
    return MANA_LH_ANY(MPI_File_read_at_all_end, f, s->buf, status);
  case MANA_SPLIT_WRITE_AT_ALL:
    return MANA_LH_ANY(MPI_File_write_at_all_end, f, s->buf, status);
  case MANA_SPLIT_READ_ORDERED:
    return MANA_LH_ANY(MPI_File_read_ordered_end, f, s->buf, status);
  case MANA_SPLIT_WRITE_ORDERED:
    return MANA_LH_ANY(MPI_File_write_ordered_end, f, s->buf, status);
  }
  return MPI_ERR_INTERN;
}

/* An empty split of the same kind begun on F: nothing read or written, no pointer moved. */
static int begin_empty(MPI_File f, const struct mana_file_split *s)
{
  switch (s->kind) {
  case MANA_SPLIT_READ_ALL:
    return MANA_LH_ANY(MPI_File_read_all_begin, f, s->buf, 0, MPI_BYTE);
  case MANA_SPLIT_WRITE_ALL:
    return MANA_LH_ANY(MPI_File_write_all_begin, f, s->buf, 0, MPI_BYTE);
  case MANA_SPLIT_READ_AT_ALL:
    return MANA_LH_ANY(MPI_File_read_at_all_begin, f, 0, s->buf, 0, MPI_BYTE);
  case MANA_SPLIT_WRITE_AT_ALL:
    return MANA_LH_ANY(MPI_File_write_at_all_begin, f, 0, s->buf, 0, MPI_BYTE);
  case MANA_SPLIT_READ_ORDERED:
    return MANA_LH_ANY(MPI_File_read_ordered_begin, f, s->buf, 0, MPI_BYTE);
  case MANA_SPLIT_WRITE_ORDERED:
    return MANA_LH_ANY(MPI_File_write_ordered_begin, f, s->buf, 0, MPI_BYTE);
  }
  return MPI_ERR_INTERN;
}

void mana_file_split_stand_in(MPI_File f, struct mana_file_split *s)
{
  /* At a later checkpoint inside the same split MPI holds the stand-in already. */
  if (!s->begun || s->saved)
    return;
  if (end_in_mpi(f, s, &s->status) != MPI_SUCCESS) {
    s->failed = 1;
    return;
  }
  s->saved = 1;
  if (begin_empty(f, s) != MPI_SUCCESS)
    s->failed = 1;
}

int mana_file_split_restore(MPI_File f, const struct mana_file_split *s)
{
  return s->begun ? begin_empty(f, s) : MPI_SUCCESS;
}
