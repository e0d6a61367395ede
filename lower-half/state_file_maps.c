/* Files the application maps shared (mmap of a regular file with MAP_SHARED): its stores go to
 * the file, where a later read or another process sees them.  The image holds their pages like
 * any memory (state_memory.c), but restored they were private copies: whatever the
 * application stored after a restart never reached the file.  So a restart maps each such
 * range from its file again, at its address, with its protection and offset, over the copy.
 * The file is the truth, as for open files (state_files.c); one that is gone fails the
 * restart, naming it.  Shared memory that is MPI's (/dev/shm), removed files and memfds keep
 * the copy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "upper_mappings.h"

struct file_map {
  uint64_t start, end, offset;
  uint32_t prot, reserved;
  char path[PATH_MAX];
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct file_map *maps;
static size_t n_maps, maps_cap;

static int is_application_file_map(const struct mana_mapping *m)
{
  struct stat st;
  size_t len = strlen(m->path);
  return m->shared && m->file_backed && m->path[0] == '/' && strncmp(m->path, "/dev/", 5) != 0 &&
         strncmp(m->path, "/memfd:", 7) != 0 && strncmp(m->path, "/SYSV", 5) != 0 &&
         !(len > 10 && strcmp(m->path + len - 10, " (deleted)") == 0) && stat(m->path, &st) == 0 &&
         S_ISREG(st.st_mode);
}

static int note_map(const struct mana_mapping *m, void *arg)
{
  char *err = arg;
  if (!is_application_file_map(m))
    return 0;
  if (n_maps == maps_cap) {
    size_t cap = maps_cap ? 2 * maps_cap : 8;
    struct file_map *bigger = realloc(maps, cap * sizeof(*maps));
    if (!bigger)
      return mana_fail(err, 256, ENOMEM, "shared file mappings");
    maps = bigger;
    maps_cap = cap;
  }
  struct file_map *f = &maps[n_maps++];
  memset(f, 0, sizeof(*f));
  *f = (struct file_map){m->start, m->end, m->offset, m->prot, 0, ""};
  snprintf(f->path, sizeof(f->path), "%s", m->path);
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_maps = 0;
  char why[256] = "";
  int rc = mana_upper_mappings_each(note_map, why, err, errlen);
  if (rc != 0 && why[0])
    snprintf(err, errlen, "%s", why);
  return rc;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_maps; i++)
    if (mana_image_add_blob(w, MANA_BLOB_FILE_MAP, &maps[i], sizeof(maps[i])) != 0)
      return mana_fail(err, errlen, 0, "shared file mappings: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_FILE_MAP, &at, &data, &len);) {
    const struct file_map *f = data;
    if (len != sizeof(*f) || f->end <= f->start || memchr(f->path, 0, sizeof(f->path)) == NULL)
      return mana_fail(err, errlen, 0, "a shared file mapping's record in the image is malformed");
    int fd = open(f->path, (f->prot & PROT_WRITE) ? O_RDWR : O_RDONLY);
    if (fd < 0)
      return mana_fail(err, errlen, errno,
                       "cannot map the application's file %s again at %#llx (shared, offset %llu)",
                       f->path, (unsigned long long)f->start, (unsigned long long)f->offset);
    void *at = mmap((void *)(uintptr_t)f->start, f->end - f->start, (int)f->prot,
                    MAP_SHARED | MAP_FIXED, fd, (off_t)f->offset);
    int e = errno;
    close(fd);
    if (at == MAP_FAILED)
      return mana_fail(err, errlen, e, "cannot map the application's file %s again at %#llx",
                       f->path, (unsigned long long)f->start);
  }
  return 0;
}

const struct mana_state_ops mana_state_file_maps = {"shared file mappings", dump, restore, capture,
                                                    NULL};
