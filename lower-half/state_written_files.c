/* The sizes of the regular files the application has written, taken back at a restart.
 *
 * A file's content is not in the image: the file is the truth (state_files.c reopens the
 * open ones at their offsets).  But a job that runs on after a checkpoint goes on growing its
 * files, and a restart from that checkpoint (after a crash past an interval checkpoint, or
 * from an older generation) replays what it wrote since.  Written at an offset, the same bytes
 * land on the same places; appended (O_APPEND, a log opened for each record with stdio's "a"
 * or Fortran's position='append'), they land after the ones already there, and every record
 * from the checkpoint to the crash is there twice.  So a checkpoint records the size of every
 * file the application opened for writing that is still there (written_files.c knows them by
 * path, device and inode), and a restart that goes ahead on every rank (after the restarted
 * MPI_Init) cuts each one that has grown since back to that size, one line on standard error
 * saying so, when it is still the same file (by inode: a node-local file of that name on
 * another node is not).  Files made after the checkpoint are
 * made again by the replay; what was overwritten inside a file is not taken back, and a file
 * another program appends to as well would lose what it appended after the checkpoint:
 * mana_restart --keep-files leaves every file as it is. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "written_files.h"

struct written_file {
  int64_t size;
  uint64_t ino; /* the same on every node of a shared file system, unlike the device */
  char path[PATH_MAX];
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct written_file *files;
static size_t n_files, files_cap;

/* The application's, and still the file it wrote: not mana's images or MPI's and mana's shared
 * memory (POSIX shared memory is state_file_maps.c's). */
static int note_size(uint64_t dev, uint64_t ino, const char *path, void *arg)
{
  char *err = arg;
  struct stat st;
  if (strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0 ||
      strncmp(path, "/sys/", 5) == 0 || mana_is_mana_path(path) || strstr(path, ".img.tmp") ||
      stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != dev ||
      (uint64_t)st.st_ino != ino)
    return 0;
  if (n_files == files_cap) {
    size_t cap = files_cap ? 2 * files_cap : 16;
    struct written_file *bigger = realloc(files, cap * sizeof(*files));
    if (!bigger)
      return mana_fail(err, 256, ENOMEM, "the files the application wrote");
    files = bigger;
    files_cap = cap;
  }
  files[n_files].size = (int64_t)st.st_size;
  files[n_files].ino = ino;
  snprintf(files[n_files].path, sizeof(files[n_files].path), "%s", path);
  n_files++;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_files = 0;
  char why[256] = "";
  if (mana_written_files_each(note_size, why) != 0)
    return mana_fail(err, errlen, 0, "%s", why);
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_files; i++) {
    size_t len = offsetof(struct written_file, path) + strlen(files[i].path) + 1;
    if (mana_image_add_blob(w, MANA_BLOB_WRITTEN_FILE, &files[i], len) != 0)
      return mana_fail(err, errlen, 0, "the files the application wrote: %s",
                       mana_image_writer_error(w));
  }
  return 0;
}

/* The restore keeps the records (files[]) and cuts nothing: a restart that fails afterwards,
 * on this rank or another, must leave the files as it found them, or a second restart, from
 * a younger generation, would find records missing from them (restart-kill:1 cut both ranks'
 * logs).  mana_state_written_files_cut_back runs once every rank has restored. */
static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  n_files = 0;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_WRITTEN_FILE, &at, &data, &len);) {
    const struct written_file *f = data;
    if (len <= offsetof(struct written_file, path) || len > sizeof(*f) ||
        ((const char *)data)[len - 1] != '\0' || f->size < 0)
      return mana_fail(err, errlen, 0, "a written file's record in the image is malformed");
    if (n_files == files_cap) {
      size_t cap = files_cap ? 2 * files_cap : 16;
      struct written_file *bigger = realloc(files, cap * sizeof(*files));
      if (!bigger)
        return mana_fail(err, errlen, ENOMEM, "the files the application wrote");
      files = bigger;
      files_cap = cap;
    }
    memcpy(&files[n_files++], f, len);
  }
  return 0;
}

int mana_state_written_files_cut_back(char *err, size_t errlen)
{
  const char *keep_files = getenv("MANA_RESTART_KEEP_FILES"); /* mana_restart --keep-files */
  int keep = keep_files && strcmp(keep_files, "1") == 0;
  for (size_t i = 0; i < n_files; i++) {
    const struct written_file *f = &files[i];
    struct stat st;
    if (stat(f->path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != f->ino)
      continue; /* gone, replaced, or another node's file of that name: not to be touched */
    if (st.st_size > f->size && keep) {
      fprintf(stderr,
              "mana_lh: %s: %lld bytes, %lld at the checkpoint: left as it is (--keep-files)\n",
              f->path, (long long)st.st_size, (long long)f->size);
    } else if (st.st_size > f->size) {
      if (truncate(f->path, f->size) != 0)
        return mana_fail(err, errlen, errno,
                         "cannot cut the application's file %s back to its %lld bytes at the "
                         "checkpoint (it has %lld)",
                         f->path, (long long)f->size, (long long)st.st_size);
      fprintf(stderr,
              "mana_lh: %s: cut back from %lld to %lld bytes, its size at the checkpoint: the "
              "job wrote on after the checkpoint, and the restarted run writes that again\n",
              f->path, (long long)st.st_size, (long long)f->size);
    }
    mana_written_files_note((uint64_t)st.st_dev, (uint64_t)st.st_ino, f->path);
  }
  n_files = 0;
  return 0;
}

const struct mana_state_ops mana_state_written_files = {"the files the application wrote", dump,
                                                        restore, capture, NULL};
