/* Open MPI files, for restart.
 *
 * A file is recorded when it is opened: its communicator's members as world ranks in rank
 * order (the communicator may be freed while the file stays open), the name, the access mode,
 * the hints, the error handler MPI gave it; later calls add the view (displacement, etype and
 * filetype as references to their datatype records, data representation), the atomicity,
 * further hints and the error handler.  The drain, once nothing is in flight, reads the
 * individual file pointer and, where the application used it, the shared one
 * (mana_files_capture_positions); ROMIO reports neither for a sequential file, whose shared
 * pointer the stub counts instead and the restart walks back (file_sequential.c).
 *
 * The file's content is not in the image: at restart the file must still be at the same path.
 * It is opened again without MPI_MODE_CREATE and MPI_MODE_EXCL (it exists; EXCL would fail),
 * the view, atomicity and hints are set again, both pointers are moved back, and a split
 * collective the application began gets its stand-in (file_split.c).
 *
 * Opening a file is collective over its communicator, so every member must reopen its files
 * in orders that agree.  A file is named by its communicator's group id and creation index
 * (comm_order.h) and its opening index among the files opened on that communicator; sorting
 * by the triple gives every process a subsequence of one global order, which cannot deadlock
 * for the same reason as communicators. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "cc_algorithm.h"
#include "mana/raw_syscall.h"
#include "comm_order.h"
#include "file_sequential.h"
#include "file_split.h"
#include "p2p.h"
#include "records.h"
#include "stub_hooks.h"
#include "u64map.h"

struct file_rec {
  uint64_t ggid, cindex, findex; /* the order of reopening (above) */
  MPI_Comm predefined;           /* MPI_COMM_WORLD, MPI_COMM_SELF, or MPI_COMM_NULL */
  int size;
  int *ranks; /* world ranks in rank order */
  char *name;
  int amode;
  struct mana_kvlist open_hints, later_hints; /* at open; from set_info and set_view */
  struct mana_eh_ref errhandler;
  int has_view;
  MPI_Offset disp;
  struct mana_dt_arg etype, filetype;
  char *datarep;
  int has_atomicity, atomic;
  struct mana_file_split split; /* a split collective begun and not ended (file_split.c) */
  int used_shared;              /* the shared file pointer may be anywhere but 0 */
  MPI_Count seq_bytes; /* a sequential file: bytes this rank moved the shared pointer (view) */
  int incomplete;      /* the record misses something: refused */
  /* Written by the drain on the checkpoint thread. */
  int have_pos, have_shared;
  MPI_Offset pos, shared;
};

/* Group key (ggid mixed with the communicator's index) -> files opened on it so far. */
static struct mana_u64map opened_per_comm;
/* What MPI_File_set_errhandler(MPI_FILE_NULL, ...) made the default for new files. */
static int has_default_eh;
static struct mana_eh_ref default_eh;

static struct file_rec *rec_of(MPI_File fh)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_FILE, (uint32_t)(uintptr_t)fh);
  return s ? s->meta : NULL;
}

static MPI_File real_of(const struct mana_slot *s)
{
  return (MPI_File)(uintptr_t)s->real;
}

/* The collective clock's id of the communicator the file was opened on (0: unknown, the file
 * is refused anyway): collective file operations count there, like the communicator's own
 * collectives, and the same on every member (comm.c, mana_comm_cc_id). */
uint64_t mana_file_cc_id(MPI_File fh)
{
  const struct file_rec *r = rec_of(fh);
  return r && r->ggid ? cc_id_mix(r->ggid, r->cindex) : 0;
}

/* ---- recording ---- */

static int record_comm(struct file_rec *r, MPI_Comm comm)
{
  const int *ranks;
  if (mana_comm_members(comm, &r->ggid, &r->cindex, &r->size, &ranks) != 0)
    return -1;
  r->predefined = comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF ? comm : MPI_COMM_NULL;
  r->ranks = calloc(r->size > 0 ? (size_t)r->size : 1, sizeof(int));
  if (!r->ranks)
    return -1;
  memcpy(r->ranks, ranks, (size_t)r->size * sizeof(int));
  r->findex = mana_comm_next_index(&opened_per_comm, cc_id_mix(r->ggid, r->cindex));
  return r->findex == UINT64_MAX ? -1 : 0;
}

void mana_after_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                          MPI_File *fh)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_FILE, (uint32_t)(uintptr_t)*fh);
  struct file_rec *r = s ? calloc(1, sizeof(*r)) : NULL;
  if (!r)
    return; /* a live file without a record is refused at checkpoint */
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  r->amode = amode;
  r->name = strdup(filename);
  r->etype.predefined = r->filetype.predefined = MPI_BYTE;
  if (record_comm(r, comm) != 0 || !r->name || mana_info_snapshot(info, &r->open_hints) != 0 ||
      MANA_LH_CALL_NOPARK(MPI_File_get_errhandler, real_of(s), &eh) != MPI_SUCCESS)
    r->incomplete = 1;
  if (eh != MPI_ERRHANDLER_NULL) {
    mana_eh_ref_of_real(eh, &r->errhandler);
    if (mana_real_is_created((uint32_t)eh))
      MANA_LH_CALL_NOPARK(MPI_Errhandler_free, &eh);
  }
  s->meta = r;
}

/* Hints accumulate, as for communicators: keys set earlier keep their values. */
static void add_hints(struct file_rec *r, MPI_Info info)
{
  struct mana_kvlist now = {0, 0, NULL};
  if (mana_info_snapshot(info, &now) != 0)
    r->incomplete = 1;
  for (int i = 0; i < now.n; i++)
    if (mana_kvlist_set(&r->later_hints, now.kv[i].key, now.kv[i].value) != 0)
      r->incomplete = 1;
  mana_kvlist_free(&now);
}

/* A restarted file was opened again without MPI_MODE_CREATE and MPI_MODE_EXCL: the
 * application is told the mode it opened the file with. */
void mana_after_File_get_amode(MPI_File fh, int *amode)
{
  const struct file_rec *r = rec_of(fh);
  if (r)
    *amode = r->amode;
}

void mana_after_File_set_info(MPI_File fh, MPI_Info info)
{
  struct file_rec *r = rec_of(fh);
  if (r)
    add_hints(r, info);
}

/* MPI_DISPLACEMENT_CURRENT names the shared pointer's position at the call, which a restart
 * must not take from the reopened file (its pointer is 0 then): the byte displacement MPI
 * resolved it to is recorded instead (MPICH's io/setviewcur read every value one place off
 * after a restart). */
static int resolve_current_disp(MPI_File fh, MPI_Offset *disp)
{
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING];
  int rc = MANA_LH_CALL_NOPARK(MPI_File_get_view, MANA_REAL_PTR(FILE, MPI_File, fh), disp, &et, &ft,
                               rep);
  if (rc != MPI_SUCCESS)
    return rc;
  /* MPI_File_get_view hands out new handles for derived types */
  MPI_Datatype got[2] = {et, ft};
  for (int i = 0; i < 2; i++) {
    int ni, na, nt, combiner;
    if (MANA_LH_CALL_NOPARK(MPI_Type_get_envelope, got[i], &ni, &na, &nt, &combiner) ==
            MPI_SUCCESS &&
        combiner != MPI_COMBINER_NAMED)
      MANA_LH_CALL_NOPARK(MPI_Type_free, &got[i]);
  }
  return MPI_SUCCESS;
}

void mana_after_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                              MPI_Datatype filetype, const char *datarep, MPI_Info info)
{
  struct file_rec *r = rec_of(fh);
  if (!r)
    return;
  char *rep = strdup(datarep);
  if (!rep)
    r->incomplete = 1;
  free(r->datarep);
  r->datarep = rep;
  mana_dt_arg_put(&r->etype);
  mana_dt_arg_put(&r->filetype);
  mana_dt_arg_get(etype, &r->etype);
  mana_dt_arg_get(filetype, &r->filetype);
  r->disp = disp;
  if (disp == MPI_DISPLACEMENT_CURRENT && resolve_current_disp(fh, &r->disp) != MPI_SUCCESS)
    r->incomplete = 1;
  r->has_view = 1;
  r->used_shared = 0; /* a new view puts both pointers back to 0 */
  r->seq_bytes = 0;
  add_hints(r, info);
}

void mana_after_File_set_atomicity(MPI_File fh, int flag)
{
  struct file_rec *r = rec_of(fh);
  if (r) {
    r->has_atomicity = 1;
    r->atomic = flag;
  }
}

void mana_after_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
  struct file_rec *r = rec_of(file);
  if (file == MPI_FILE_NULL) {
    has_default_eh = 1;
    mana_eh_ref_of_virtual(errhandler, &default_eh);
  } else if (r) {
    mana_eh_ref_of_virtual(errhandler, &r->errhandler);
  }
}

struct mana_file_split *mana_file_split_of(MPI_File fh)
{
  struct file_rec *r = rec_of(fh);
  return r ? &r->split : NULL;
}

/* The hooks of the calls that move the shared pointer or begin or end a split collective:
 * one per prototype, made by the macros below. */
static void note(MPI_File fh, int shared)
{
  struct file_rec *r = rec_of(fh);
  if (r)
    r->used_shared |= shared;
}

static void note_split(MPI_File fh, enum mana_split_kind kind, const void *buf)
{
  struct file_rec *r = rec_of(fh);
  if (r)
    mana_file_split_begun(&r->split, kind, buf);
}

/* ROMIO refuses MPI_File_get_position_shared on a sequential file, so the stub counts how far
 * this rank moved its shared pointer since the view was set (ROMIO moves it by the whole
 * request, also at the end of the file); the restart adds up every member's count. */
static void note_moved(MPI_File fh, MPI_Datatype t, MPI_Count n)
{
  struct file_rec *r = rec_of(fh);
  MPI_Count size = 0;
  if (!r || !(r->amode & MPI_MODE_SEQUENTIAL))
    return;
  if (MANA_LH_CALL_NOPARK(MPI_Type_size_x, MANA_REAL(DATATYPE, MPI_Datatype, t), &size) !=
      MPI_SUCCESS)
    r->incomplete = 1;
  else
    r->seq_bytes += n * size;
}

#define U __attribute__((unused))
#define RW_HOOK(name, cbuf, count_t)                                                 \
  void mana_after_##name(MPI_File fh, cbuf void *b U, count_t n U, MPI_Datatype t U, \
                         MPI_Status *st U)                                           \
  {                                                                                  \
    note(fh, 1);                                                                     \
    note_moved(fh, t, n);                                                            \
  }
#define IRW_HOOK(name, cbuf, count_t)                                                \
  void mana_after_##name(MPI_File fh, cbuf void *b U, count_t n U, MPI_Datatype t U, \
                         MPI_Request *rq U)                                          \
  {                                                                                  \
    note(fh, 1);                                                                     \
    note_moved(fh, t, n);                                                            \
  }
#define BEGIN_HOOK(name, kind, shared, cbuf, count_t)                              \
  void mana_after_##name(MPI_File fh, cbuf void *b, count_t n U, MPI_Datatype t U) \
  {                                                                                \
    note(fh, shared);                                                              \
    note_split(fh, kind, b);                                                       \
    if (shared)                                                                    \
      note_moved(fh, t, n);                                                        \
  }
#define BEGIN_AT_HOOK(name, kind, cbuf, count_t)                                                   \
  void mana_after_##name(MPI_File fh, MPI_Offset o U, cbuf void *b, count_t n U, MPI_Datatype t U) \
  {                                                                                                \
    note_split(fh, kind, b);                                                                       \
  }
#define END_HOOK(name, cbuf)                                          \
  void mana_after_##name(MPI_File fh, cbuf void *b U, MPI_Status *st) \
  {                                                                   \
    struct file_rec *r = rec_of(fh);                                  \
    if (r)                                                            \
      mana_file_split_ended(&r->split, st);                           \
  }

RW_HOOK(File_read_shared, , int)
RW_HOOK(File_write_shared, const, int)
RW_HOOK(File_read_ordered, , int)
RW_HOOK(File_write_ordered, const, int)
RW_HOOK(File_read_shared_c, , MPI_Count)
RW_HOOK(File_write_shared_c, const, MPI_Count)
RW_HOOK(File_read_ordered_c, , MPI_Count)
RW_HOOK(File_write_ordered_c, const, MPI_Count)
IRW_HOOK(File_iread_shared, , int)
IRW_HOOK(File_iwrite_shared, const, int)
IRW_HOOK(File_iread_shared_c, , MPI_Count)
IRW_HOOK(File_iwrite_shared_c, const, MPI_Count)
BEGIN_HOOK(File_read_all_begin, MANA_SPLIT_READ_ALL, 0, , int)
BEGIN_HOOK(File_write_all_begin, MANA_SPLIT_WRITE_ALL, 0, const, int)
BEGIN_HOOK(File_read_ordered_begin, MANA_SPLIT_READ_ORDERED, 1, , int)
BEGIN_HOOK(File_write_ordered_begin, MANA_SPLIT_WRITE_ORDERED, 1, const, int)
BEGIN_HOOK(File_read_all_begin_c, MANA_SPLIT_READ_ALL, 0, , MPI_Count)
BEGIN_HOOK(File_write_all_begin_c, MANA_SPLIT_WRITE_ALL, 0, const, MPI_Count)
BEGIN_HOOK(File_read_ordered_begin_c, MANA_SPLIT_READ_ORDERED, 1, , MPI_Count)
BEGIN_HOOK(File_write_ordered_begin_c, MANA_SPLIT_WRITE_ORDERED, 1, const, MPI_Count)
BEGIN_AT_HOOK(File_read_at_all_begin, MANA_SPLIT_READ_AT_ALL, , int)
BEGIN_AT_HOOK(File_write_at_all_begin, MANA_SPLIT_WRITE_AT_ALL, const, int)
BEGIN_AT_HOOK(File_read_at_all_begin_c, MANA_SPLIT_READ_AT_ALL, , MPI_Count)
BEGIN_AT_HOOK(File_write_at_all_begin_c, MANA_SPLIT_WRITE_AT_ALL, const, MPI_Count)
END_HOOK(File_read_all_end, )
END_HOOK(File_write_all_end, const)
END_HOOK(File_read_at_all_end, )
END_HOOK(File_write_at_all_end, const)
END_HOOK(File_read_ordered_end, )
END_HOOK(File_write_ordered_end, const)

void mana_after_File_seek_shared(MPI_File fh, MPI_Offset offset U, int whence U)
{
  note(fh, 1);
}

static void release(struct mana_slot *s)
{
  struct file_rec *r = s->meta;
  if (!r)
    return;
  free(r->ranks);
  free(r->name);
  free(r->datarep);
  mana_kvlist_free(&r->open_hints);
  mana_kvlist_free(&r->later_hints);
  mana_dt_arg_put(&r->etype);
  mana_dt_arg_put(&r->filetype);
  free(r);
}

/* ---- at the checkpoint ---- */

static void stand_in_splits(void);

/* Errors on the real file F are returned instead of reaching the application's handler (which
 * may abort) until errors_back; the handler F had, or MPI_ERRHANDLER_NULL. */
static MPI_Errhandler errors_returned(MPI_File f)
{
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  if (MANA_LH_ANY(MPI_File_get_errhandler, f, &eh) != MPI_SUCCESS)
    return MPI_ERRHANDLER_NULL;
  MANA_LH_ANY(MPI_File_set_errhandler, f, MPI_ERRORS_RETURN);
  return eh;
}

static void errors_back(MPI_File f, MPI_Errhandler eh)
{
  if (eh == MPI_ERRHANDLER_NULL)
    return;
  MANA_LH_ANY(MPI_File_set_errhandler, f, eh);
  if (mana_real_is_created((uint32_t)eh))
    MANA_LH_ANY(MPI_Errhandler_free, &eh);
}

/* On the checkpoint thread after the drain (or an application thread in the test entry
 * point): MPI only, no upper-half libc.  A failing query must not reach an aborting error
 * handler of the application's: errors are returned for its duration, and the pointer is
 * then "unknown" (the individual one is reported at restart; the shared one is left at 0). */
void mana_files_capture_positions(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_FILE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct file_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r)
      continue;
    MPI_File f = real_of(s);
    MPI_Errhandler eh = errors_returned(f);
    /* A sequential file has no individual pointer, and ROMIO does not report its shared one
     * (the stub counts it: note_moved). */
    int sequential = (r->amode & MPI_MODE_SEQUENTIAL) != 0;
    r->have_pos = !sequential && MANA_LH_ANY(MPI_File_get_position, f, &r->pos) == MPI_SUCCESS;
    /* ROMIO reports a negative position after a view it refused and left half-installed (-4
     * after a filetype at displacement -2 ints) and right after a view whose filetype's lower
     * bound is above 0 (-1: MPICH's io/resized2); MPI_File_seek refuses it, so the restart
     * leaves the pointer at 0 in the application's last view. */
    if (r->have_pos && r->pos < 0)
      r->pos = 0;
    /* Reading the shared pointer makes ROMIO create its hidden pointer file: only when the
     * application has moved it. */
    r->have_shared = !sequential && r->used_shared &&
                     MANA_LH_ANY(MPI_File_get_position_shared, f, &r->shared) == MPI_SUCCESS;
    errors_back(f, eh);
  }
  stand_in_splits();
}

static const char *refusal(const struct file_rec *r)
{
  if (!r || r->incomplete)
    return "no complete record of";
  if (r->split.failed)
    return "MPI refused the stand-in of the split collective (MPI_File_*_begin) begun on";
  /* Only the drain puts the stand-in in place: the in-place rebuild has none. */
  if (r->split.begun && !r->split.saved)
    return "a split collective (MPI_File_*_begin without its _end) no drain has ended is in "
           "progress on";
  if (r->has_view && (!mana_dt_arg_ok(&r->etype) || !mana_dt_arg_ok(&r->filetype)))
    return "no usable datatype record for the view of";
  return NULL;
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_FILE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const char *why = (s->flags & MANA_SLOT_USED) ? refusal(s->meta) : NULL;
    if (why) {
      mana_reason(reason, len, why, "MPI file", mana_handle_make(MANA_KIND_FILE, i));
      return 0;
    }
  }
  return 1;
}

/* ---- rebuilding ---- */

struct file_key {
  uint64_t ggid, cindex, findex;
  uint32_t slot;
};

static int key_cmp(const void *pa, const void *pb)
{
  const struct file_key *a = pa, *b = pb;
  if (a->ggid != b->ggid)
    return a->ggid < b->ggid ? -1 : 1;
  if (a->cindex != b->cindex)
    return a->cindex < b->cindex ? -1 : 1;
  if (a->findex != b->findex)
    return a->findex < b->findex ? -1 : 1;
  return 0;
}

/* Fills keys (room for the table's in_use) with the live files in the order every member
 * agrees on; their number.  No libc: also used on the checkpoint thread. */
static size_t list_files(struct file_key *keys)
{
  struct mana_table *t = &mana_tables[MANA_KIND_FILE];
  size_t n = 0;
  for (uint32_t i = 0; i < t->capacity && n < t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct file_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r)
      continue;
    struct file_key k = {r->ggid, r->cindex, r->findex, i};
    size_t at = n++;
    for (; at > 0 && key_cmp(&keys[at - 1], &k) > 0; at--) /* few files: insertion */
      keys[at] = keys[at - 1];
    keys[at] = k;
  }
  return n;
}

/* The live files in the order every member agrees on; NULL if out of memory. */
static struct file_key *sorted_files(size_t *n)
{
  struct mana_table *t = &mana_tables[MANA_KIND_FILE];
  struct file_key *keys = calloc(t->in_use ? t->in_use : 1, sizeof(*keys));
  *n = 0;
  if (keys)
    *n = list_files(keys);
  return keys;
}

/* Calls FN on every live file, in the order every member agrees on (collective calls inside
 * FN cannot deadlock).  On the checkpoint thread: memory from mmap, no libc. */
static void each_file_in_order(void (*fn)(MPI_File f, struct file_rec *r))
{
  struct mana_table *t = &mana_tables[MANA_KIND_FILE];
  size_t bytes = (t->in_use ? t->in_use : 1) * sizeof(struct file_key);
  struct file_key *keys = mana_raw_map(bytes);
  if (!keys)
    return;
  size_t n = list_files(keys);
  for (size_t k = 0; k < n; k++) {
    struct mana_slot *s = mana_slot_at(t, keys[k].slot);
    fn(real_of(s), s->meta);
  }
  mana_raw_unmap(keys, bytes);
}

/* Every file, also one without a view of the application's: ROMIO keeps the types of a view
 * it refused (MPI_ERR_IO for a filetype with negative displacements, MPICH's io/tst_fileview)
 * half-installed until the next view or the close. */
static void default_view(MPI_File f, struct file_rec *r)
{
  MANA_LH_ANY(MPI_File_set_errhandler, f, MPI_ERRORS_RETURN);
  MANA_LH_ANY(MPI_File_set_view, f,
              (r->amode & MPI_MODE_SEQUENTIAL) ? MPI_DISPLACEMENT_CURRENT : (MPI_Offset)0, MPI_BYTE,
              MPI_BYTE, "native", MPI_INFO_NULL);
}

/* A --kill checkpoint ends the job with the files open (closing one opened with
 * MPI_MODE_DELETE_ON_CLOSE would delete what the restart reopens).  A file's view holds its
 * etype and filetype inside MPI, and MPICH 4.0.2 reports each datatype still held at
 * MPI_Finalize ("yaksa: N leaked handle pool objects"), which a native run that closed its
 * files never prints: every file gets the default view back, collectively
 * over its members in the global order.  On the checkpoint thread, the application parked:
 * errors returned (the job is ending; nothing depends on the file now). */
void mana_files_release_views_for_exit(void)
{
  each_file_in_order(default_view);
}

/* A split collective begun and not ended gets its stand-in (file_split.c), collectively over
 * the file's members; errors returned meanwhile. */
static void stand_in_split(MPI_File f, struct file_rec *r)
{
  if (!r->split.begun)
    return;
  MPI_Errhandler eh = errors_returned(f);
  mana_file_split_stand_in(f, &r->split);
  errors_back(f, eh);
}

static void stand_in_splits(void)
{
  each_file_in_order(stand_in_split);
}

/* Test mode: the files are closed in the same order they will be opened again (closing is
 * collective too). */
static int discard(void)
{
  size_t n;
  struct file_key *keys = sorted_files(&n);
  if (!keys)
    return mana_rebuild_error("files", 0, "allocating their list", MPI_ERR_NO_MEM);
  for (size_t k = 0; k < n; k++) {
    struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_FILE], keys[k].slot);
    MPI_File f = real_of(s);
    MANA_LH_CALL_NOPARK(MPI_File_close, &f);
  }
  free(keys);
  return MPI_SUCCESS;
}

static int set_hints(MPI_File f, const struct mana_kvlist *l, uint32_t v)
{
  MPI_Info info = MPI_INFO_NULL;
  int rc = mana_kvlist_to_real(l, &info);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_File_set_info, f, info);
  if (info != MPI_INFO_NULL)
    MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("MPI file", v, "MPI_File_set_info", rc);
}

/* The shared pointer is one for all members; the members that read it agree on it, the
 * others learn it here (one reduction over the file's communicator).  0 when it is unknown. */
static int agree_shared(const struct file_rec *r, MPI_Comm c, uint32_t v, MPI_Offset *shared)
{
  int64_t vals[3] = {r->have_shared ? r->shared : -1, r->have_shared ? -r->shared : INT64_MIN,
                     (r->used_shared && !r->have_shared) ? 1 : 0};
  int rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, vals, 3, MPI_INT64_T, MPI_MAX, c);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_Allreduce (shared file pointer)", rc);
  *shared = 0;
  if (vals[2] || (vals[0] >= 0 && vals[0] != -vals[1]))
    fprintf(stderr,
            "mana: rebuilding MPI file %#x (%s): the shared file pointer was not "
            "read at the checkpoint; it is at 0\n",
            v, r->name);
  else if (vals[0] > 0)
    *shared = (MPI_Offset)vals[0];
  return MPI_SUCCESS;
}

static struct mana_seq_view real_view(const struct file_rec *r)
{
  return (struct mana_seq_view){r->disp, mana_dt_arg_real(&r->etype),
                                mana_dt_arg_real(&r->filetype), r->datarep};
}

/* A file opened with MPI_MODE_SEQUENTIAL: its view must be set at MPI_DISPLACEMENT_CURRENT and
 * its shared pointer cannot be sought, so the pointer is walked to the view's displacement,
 * the view set there, then walked to its position (file_sequential.c). */
static int restore_sequential(const struct file_rec *r, MPI_Comm c, MPI_File f, uint32_t v)
{
  MPI_Count bytes = r->seq_bytes;
  int unit = 1,
      rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, &bytes, 1, MPI_COUNT, MPI_SUM, c);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_Allreduce (shared file pointer)", rc);
  struct mana_seq_view view = real_view(r);
  if (r->has_view && (rc = MANA_LH_CALL_NOPARK(MPI_Type_size, view.etype, &unit)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_Type_size (etype)", rc);
  MPI_Offset shared = unit > 0 ? (MPI_Offset)(bytes / unit) : 0;
  /* Opened to append, the file's pointer starts at its end: where the job's appending writes
   * left it, and counted from an end that has moved since, so nothing is walked. */
  int walk = !(r->amode & MPI_MODE_APPEND);
  if (r->has_view && walk &&
      (rc = mana_file_seq_advance(f, c, r->name, r->amode, r->disp, NULL)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "reaching the view's displacement", rc);
  if (r->has_view &&
      (rc = MANA_LH_CALL_NOPARK(MPI_File_set_view, f, MPI_DISPLACEMENT_CURRENT, view.etype,
                                view.filetype, view.datarep, MPI_INFO_NULL)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_File_set_view", rc);
  if (walk && shared > 0 &&
      (rc = mana_file_seq_advance(f, c, r->name, r->amode, shared, r->has_view ? &view : NULL)) !=
          MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "reaching the shared file pointer", rc);
  return MPI_SUCCESS;
}

/* Everything after the open: collective calls in the same order on every member. */
static int restore_state(const struct file_rec *r, MPI_Comm c, MPI_File f, uint32_t v)
{
  int rc = MPI_SUCCESS;
  MPI_Offset shared;
  if (r->amode & MPI_MODE_SEQUENTIAL) {
    if ((rc = restore_sequential(r, c, f, v)) != MPI_SUCCESS)
      return rc;
  } else if (r->has_view &&
             (rc = MANA_LH_CALL_NOPARK(MPI_File_set_view, f, r->disp, mana_dt_arg_real(&r->etype),
                                       mana_dt_arg_real(&r->filetype), r->datarep,
                                       MPI_INFO_NULL)) != MPI_SUCCESS) {
    return mana_rebuild_error("MPI file", v, "MPI_File_set_view", rc);
  }
  if (r->later_hints.n && (rc = set_hints(f, &r->later_hints, v)) != MPI_SUCCESS)
    return rc;
  if (r->has_atomicity &&
      (rc = MANA_LH_CALL_NOPARK(MPI_File_set_atomicity, f, r->atomic)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_File_set_atomicity", rc);
  if (!(r->amode & MPI_MODE_SEQUENTIAL)) { /* a sequential file has no individual pointer */
    if (r->have_pos && r->pos != 0 &&
        (rc = MANA_LH_CALL_NOPARK(MPI_File_seek, f, r->pos, MPI_SEEK_SET)) != MPI_SUCCESS)
      return mana_rebuild_error("MPI file", v, "MPI_File_seek", rc);
    if (!r->have_pos)
      fprintf(stderr,
              "mana: rebuilding MPI file %#x (%s): the individual file pointer was not "
              "read at the checkpoint; it is at 0\n",
              v, r->name);
    if ((rc = agree_shared(r, c, v, &shared)) != MPI_SUCCESS)
      return rc;
    if (shared > 0 &&
        (rc = MANA_LH_CALL_NOPARK(MPI_File_seek_shared, f, shared, MPI_SEEK_SET)) != MPI_SUCCESS)
      return mana_rebuild_error("MPI file", v, "MPI_File_seek_shared", rc);
  }
  /* A split collective the application began: its stand-in, collectively (file_split.c). */
  if ((rc = mana_file_split_restore(f, &r->split)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "the stand-in of its split collective", rc);
  /* Last: from here on, errors on the file go to the application's handler. */
  MPI_Errhandler eh = mana_eh_ref_real(&r->errhandler);
  if (eh != MPI_ERRHANDLER_NULL &&
      (rc = MANA_LH_CALL_NOPARK(MPI_File_set_errhandler, f, eh)) != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_File_set_errhandler", rc);
  return MPI_SUCCESS;
}

/* A communicator with the recorded members in the recorded order (the application's may be
 * gone); the predefined ones are used as they are. */
static int file_comm(const struct file_rec *r, uint32_t v, MPI_Comm *c)
{
  if (r->predefined != MPI_COMM_NULL) {
    *c = r->predefined;
    return MPI_SUCCESS;
  }
  MPI_Group g;
  int rc = MANA_LH_CALL_NOPARK(MPI_Group_incl, mana_world_group(), r->size, r->ranks, &g);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("MPI file", v, "MPI_Group_incl", rc);
  rc = MANA_LH_CALL_NOPARK(MPI_Comm_create_group, MPI_COMM_WORLD, g,
                           (int)(0x4000 | (r->findex & 0x3fff)), c);
  MANA_LH_CALL_NOPARK(MPI_Group_free, &g);
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("MPI file", v, "MPI_Comm_create_group", rc);
}

static int rebuild_one(const struct file_rec *r, uint32_t v, MPI_File *out)
{
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Info info = MPI_INFO_NULL;
  int rc = file_comm(r, v, &c);
  if (rc != MPI_SUCCESS)
    return rc;
  if (r->open_hints.n)
    rc = mana_kvlist_to_real(&r->open_hints, &info);
  if (rc == MPI_SUCCESS) {
    /* The file exists (its content is not in the image): creating it again must not fail. */
    int amode = r->amode & ~(MPI_MODE_CREATE | MPI_MODE_EXCL);
    rc = MANA_LH_CALL_NOPARK(MPI_File_open, c, r->name, amode, info, out);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr,
              "mana: rebuilding MPI file %#x: cannot open %s again (it must be where "
              "it was at the checkpoint)\n",
              v, r->name);
      rc = mana_rebuild_error("MPI file", v, "MPI_File_open", rc);
    }
  }
  if (info != MPI_INFO_NULL)
    MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
  if (rc == MPI_SUCCESS)
    rc = restore_state(r, c, *out, v);
  if (r->predefined == MPI_COMM_NULL) /* ROMIO keeps its own duplicate */
    MANA_LH_CALL_NOPARK(MPI_Comm_free, &c);
  return rc;
}

static int rebuild(void)
{
  int rc = MPI_SUCCESS;
  if (has_default_eh) {
    MPI_Errhandler eh = mana_eh_ref_real(&default_eh);
    if (eh != MPI_ERRHANDLER_NULL)
      rc = MANA_LH_CALL_NOPARK(MPI_File_set_errhandler, MPI_FILE_NULL, eh);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("MPI file", 0, "MPI_File_set_errhandler (MPI_FILE_NULL)", rc);
  }
  size_t n;
  struct file_key *keys = sorted_files(&n);
  if (!keys)
    return mana_rebuild_error("files", 0, "allocating their list", MPI_ERR_NO_MEM);
  for (size_t k = 0; k < n && rc == MPI_SUCCESS; k++) {
    struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_FILE], keys[k].slot);
    MPI_File f = MPI_FILE_NULL;
    rc = rebuild_one(s->meta, mana_handle_make(MANA_KIND_FILE, keys[k].slot), &f);
    if (rc == MPI_SUCCESS)
      s->real = (uint64_t)(uintptr_t)f;
  }
  free(keys);
  return rc;
}

const struct mana_kind_ops mana_file_ops = {
    .name = "file",
    .kind = MANA_KIND_FILE,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
