/* Files the application maps shared (mmap of a regular file with MAP_SHARED): its stores go to
 * the file, where a later read or another process sees them.  The image holds their pages like
 * any memory (state_memory.c), but restored they were private copies: whatever the
 * application stored after a restart never reached the file.  So a restart maps each such
 * range from its file again, at its address, with its protection and offset, over the copy.
 * The file is the truth, as for open files (state_files.c); one that is gone fails the
 * restart, naming it.
 *
 * The application's POSIX shared memory (shm_open: a named file in /dev/shm, mapped shared by
 * the ranks of a node) is the other way round: memory, whose content only the image keeps
 * (a restart on another node, or after a reboot, finds no file), and which the ranks of a
 * node must share again.  A restart makes the file when it is missing, at least as large as
 * it was, writes the range's content from the restored copy into it and maps it shared over
 * the copy.  Every rank that maps a range writes the same bytes (the images are written with
 * every rank parked, and a checkpoint with writable shared memory is never forked,
 * state_memory.c), and no rank runs the application again before every rank has restored its
 * state (the restarted MPI_Init waits for them all).  MPI's shared memory is not the
 * application's: its files in /dev/shm are removed as soon as they are mapped, and are
 * mapped outside the window but for shared RMA windows (window_shm.c, "mana-" files, removed
 * too).
 *
 * A segment the application removed while mapped (shm_open, every rank maps it, shm_unlink:
 * nothing leaks when the job dies) has no name left to meet at.  Its ranges are recorded
 * with a key that names it (the checkpoint's host and the file's device and inode); a restart
 * makes a file in /dev/shm named after that key and the checkpoint directory, which every
 * rank of the node that shared the segment finds, fills and maps as above, and removes it
 * again once the restarted MPI_Init has returned (every rank of the job has mapped it by
 * then).  Other removed files keep the private copy; memfds are state_memfd.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_client.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/fault.h"
#include "mana/image_blobs.h"
#include "mana/launcher_rank.h"
#include "state.h"
#include "upper_mappings.h"

struct file_map {
  uint64_t start, end, offset;
  uint32_t prot;
  uint32_t shm_mode; /* 0: a file; else POSIX shared memory: SHM_RECORD [| SHM_REMOVED] | mode */
  uint64_t shm_size; /* the shared memory file's size (0 for a removed one) */
  uint64_t shm_key;  /* shared memory: its checkpoint host, device and inode, hashed */
  char path[PATH_MAX];
};

#define SHM_RECORD 0x80000000u
#define SHM_REMOVED 0x40000000u
#define SHM_DIR "/dev/shm/"
#define DELETED " (deleted)"

/* FNV-1a, 64 bits: the key of a removed segment. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

#define HASH_START 0xcbf29ce484222325ull

static uint64_t host_hash(void)
{
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  return hash_bytes(HASH_START, host, strlen(host));
}

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct file_map *maps;
static size_t n_maps, maps_cap;

enum map_kind { NOT_THE_APPLICATIONS, FILE_MAP, SHARED_MEMORY, REMOVED_SHARED_MEMORY };

/* What a shared mapping of the upper half is; st is filled for FILE_MAP and SHARED_MEMORY. */
static enum map_kind application_file_map(const struct mana_mapping *m, struct stat *st)
{
  size_t len = strlen(m->path), dlen = strlen(DELETED);
  int removed = len > dlen && strcmp(m->path + len - dlen, DELETED) == 0;
  int shm = strncmp(m->path, SHM_DIR, strlen(SHM_DIR)) == 0;
  if (!m->shared || !m->file_backed || m->path[0] != '/' ||
      (shm && strncmp(m->path + strlen(SHM_DIR), "mana-", 5) == 0))
    return NOT_THE_APPLICATIONS;
  if (removed)
    return shm ? REMOVED_SHARED_MEMORY : NOT_THE_APPLICATIONS;
  if (stat(m->path, st) != 0 || !S_ISREG(st->st_mode))
    return NOT_THE_APPLICATIONS;
  if (shm)
    return SHARED_MEMORY;
  return strncmp(m->path, "/dev/", 5) != 0 ? FILE_MAP : NOT_THE_APPLICATIONS;
}

static int note_map(const struct mana_mapping *m, void *arg)
{
  char *err = arg;
  struct stat st;
  enum map_kind kind = application_file_map(m, &st);
  if (kind == NOT_THE_APPLICATIONS)
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
  *f = (struct file_map){m->start, m->end, m->offset, m->prot, 0, 0, 0, ""};
  if (kind == SHARED_MEMORY || kind == REMOVED_SHARED_MEMORY) {
    f->shm_mode =
        SHM_RECORD | (kind == SHARED_MEMORY ? (uint32_t)(st.st_mode & 07777) : SHM_REMOVED | 0600);
    f->shm_size = kind == SHARED_MEMORY ? (uint64_t)st.st_size : 0;
    uint64_t file[2] = {m->dev, m->inode};
    f->shm_key = mana_state_shared_segment_key(file, sizeof(file));
  }
  snprintf(f->path, sizeof(f->path), "%s", m->path);
  return 0;
}

uint64_t mana_state_shared_segment_key(const void *identity, size_t len)
{
  unsigned long rank = 0, size;
  mana_launcher_rank((const char *const *)environ, &rank, &size);
  uint64_t host = host_hash() + (mana_fault("checkpoint-other-node", (long)rank) ? 1 : 0);
  return hash_bytes(host, identity, len);
}

static int capture(char *err, size_t errlen)
{
  n_maps = 0;
  return mana_upper_mappings_capture(note_map, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_maps; i++)
    if (mana_image_add_blob(w, MANA_BLOB_FILE_MAP, &maps[i], sizeof(maps[i])) != 0)
      return mana_fail(err, errlen, 0, "shared file mappings: %s", mana_image_writer_error(w));
  return 0;
}

/* The files a restart made for removed segments, removed again by
 * mana_state_file_maps_remove_restored. */
static char **restored_names;
static size_t n_restored;

/* The segments this rank shares (POSIX and System V), for
 * mana_state_file_maps_check_placement: each one's key and the hash of the name it is made
 * again under (0 for a removed one, whose name is its key's). */
struct segment {
  uint64_t key, name;
};
static struct segment *segments;
static size_t n_segments;

int mana_state_shared_segment_note(uint64_t key, uint64_t name)
{
  for (size_t i = 0; i < n_segments; i++)
    if (segments[i].key == key)
      return 0;
  struct segment *more = realloc(segments, (n_segments + 1) * sizeof(*more));
  if (!more)
    return -1;
  segments = more;
  segments[n_segments++] = (struct segment){key, name};
  return 0;
}

uint64_t mana_state_shared_segment_name(const void *name, size_t len)
{
  return hash_bytes(HASH_START, name, len);
}

static int note_segment(const struct file_map *f)
{
  uint64_t name =
      f->shm_mode & SHM_REMOVED ? 0 : mana_state_shared_segment_name(f->path, strlen(f->path));
  return mana_state_shared_segment_note(f->shm_key, name);
}

/* Where the ranks of a node meet to share a removed segment again: named after its key and
 * the checkpoint directory (two jobs restarted on one node never meet). */
static int removed_segment_path(const struct file_map *f, char *path, size_t len, char *err,
                                size_t errlen)
{
  const char *ckptdir = getenv(COORD_ENV_CKPTDIR);
  uint64_t key = hash_bytes(f->shm_key, ckptdir ? ckptdir : "", ckptdir ? strlen(ckptdir) : 0);
  snprintf(path, len, SHM_DIR "restored-shm.%016llx", (unsigned long long)key);
  for (size_t i = 0; i < n_restored; i++)
    if (strcmp(restored_names[i], path) == 0)
      return 0;
  char **more = realloc(restored_names, (n_restored + 1) * sizeof(*more));
  if (!more || !(more[n_restored] = strdup(path))) {
    if (more)
      restored_names = more;
    return mana_fail(err, errlen, ENOMEM, "the application's removed shared memory %s", f->path);
  }
  restored_names = more;
  n_restored++;
  return 0;
}

void mana_state_file_maps_remove_restored(void)
{
  for (size_t i = 0; i < n_restored; i++) {
    unlink(restored_names[i]); /* ENOENT: another rank of the node was first */
    free(restored_names[i]);
  }
  free(restored_names);
  restored_names = NULL;
  n_restored = 0;
}

/* POSIX shared memory: the file at path (made when missing, never shrunk) gets the range's
 * content from the restored private copy; an open descriptor, or -1 with err filled. */
static int refill_shared_memory(const struct file_map *f, const char *path, char *err,
                                size_t errlen)
{
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, (mode_t)(f->shm_mode & 07777));
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    mana_fail(err, errlen, errno, "cannot make the application's shared memory %s again (%s)",
              f->path, path);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  uint64_t len = f->end - f->start, need = f->offset + len;
  if (need < f->shm_size)
    need = f->shm_size;
  if ((uint64_t)st.st_size < need && ftruncate(fd, (off_t)need) != 0) {
    mana_fail(err, errlen, errno, "cannot size the application's shared memory %s to %llu bytes",
              f->path, (unsigned long long)need);
    close(fd);
    return -1;
  }
  const char *copy = (const char *)(uintptr_t)f->start;
  for (uint64_t done = 0; (f->prot & PROT_READ) && done < len;) {
    ssize_t n = pwrite(fd, copy + done, len - done, (off_t)(f->offset + done));
    if (n <= 0) {
      mana_fail(err, errlen, n < 0 ? errno : EIO,
                "cannot write the content of the application's shared memory %s", f->path);
      close(fd);
      return -1;
    }
    done += (uint64_t)n;
  }
  return fd;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_FILE_MAP, &at, &data, &len);) {
    const struct file_map *f = data;
    if (len != sizeof(*f) || f->end <= f->start || memchr(f->path, 0, sizeof(f->path)) == NULL)
      return mana_fail(err, errlen, 0, "a shared file mapping's record in the image is malformed");
    int fd;
    if (f->shm_mode & SHM_RECORD) {
      if (note_segment(f) != 0)
        return mana_fail(err, errlen, ENOMEM, "the application's shared memory %s", f->path);
      char removed_path[PATH_MAX];
      const char *path = f->path;
      if (f->shm_mode & SHM_REMOVED) {
        if (removed_segment_path(f, removed_path, sizeof(removed_path), err, errlen) != 0)
          return -1;
        path = removed_path;
      }
      if ((fd = refill_shared_memory(f, path, err, errlen)) < 0)
        return -1;
    } else if ((fd = open(f->path, ((f->prot & PROT_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC)) < 0) {
      return mana_fail(err, errlen, errno,
                       "cannot map the application's file %s again at %#llx (shared, offset %llu)",
                       f->path, (unsigned long long)f->start, (unsigned long long)f->offset);
    }
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

struct segment_user {
  uint64_t first, second, third; /* sorted on in this order */
  int rank;
};

static int by_fields(const void *a, const void *b)
{
  const struct segment_user *x = a, *y = b;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  if (x->second != y->second)
    return x->second < y->second ? -1 : 1;
  return x->third < y->third ? -1 : x->third > y->third;
}

/* The first two ranks of users (n of them, sorted) with equal first and second fields but
 * different third ones, or 0 when there are none. */
static int disagree(struct segment_user *users, size_t n, int *a, int *b)
{
  qsort(users, n, sizeof(*users), by_fields);
  for (size_t i = 1; i < n; i++)
    if (users[i].first == users[i - 1].first && users[i].second == users[i - 1].second &&
        users[i].third != users[i - 1].third) {
      *a = users[i - 1].rank < users[i].rank ? users[i - 1].rank : users[i].rank;
      *b = users[i - 1].rank < users[i].rank ? users[i].rank : users[i - 1].rank;
      return 1;
    }
  return 0;
}

/* Ranks that shared a segment at the checkpoint share it again only on one node: on several,
 * each would go on with its own copy, silently.  And ranks of several nodes that each shared
 * a segment of one name there would share one if restarted on one node.  Every rank gathers
 * every rank's segments and host, so that all reach the same verdict and fail together. */
int mana_state_file_maps_check_placement(char *err, size_t errlen)
{
  int mine = (int)n_segments, most = 0, size, rank;
  if (PMPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return mana_fail(err, errlen, 0, "cannot compare the ranks' shared memory");
  if (most == 0)
    return 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t stride = 1 + 2 * (size_t)most; /* the host's hash, then key and name per segment */
  uint64_t *all = calloc(stride * (size_t)(size + 1), sizeof(*all));
  struct segment_user *users = calloc((size_t)size * (size_t)most, sizeof(*users));
  if (!all || !users) {
    free(all);
    free(users);
    return mana_fail(err, errlen, ENOMEM, "cannot compare the ranks' shared memory");
  }
  uint64_t *own = all + stride * (size_t)size;
  own[0] = host_hash() + (mana_fault("restart-other-node", rank) ? 1 : 0);
  for (size_t i = 0; i < n_segments; i++) {
    own[1 + 2 * i] = segments[i].key;
    own[2 + 2 * i] = segments[i].name;
  }
  int rc = 0, a, b;
  if (PMPI_Allgather(own, (int)stride, MPI_UINT64_T, all, (int)stride, MPI_UINT64_T,
                     MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = mana_fail(err, errlen, 0, "cannot compare the ranks' shared memory");
  /* one segment (key), one host */
  size_t n = 0;
  for (int r = 0; rc == 0 && r < size; r++) {
    const uint64_t *row = all + stride * (size_t)r;
    for (size_t i = 0; i < (size_t)most && row[1 + 2 * i]; i++)
      users[n++] = (struct segment_user){row[1 + 2 * i], 0, row[0], r};
  }
  if (rc == 0 && disagree(users, n, &a, &b)) {
    mana_fail(err, errlen, 0,
              "ranks %d and %d shared memory on one node at the checkpoint but "
              "were restarted on different nodes, where each would go on with its own copy: "
              "restart them on one node again",
              a, b);
    rc = 1; /* found alike by every rank */
  }
  /* one name on one host, one segment */
  n = 0;
  for (int r = 0; rc == 0 && r < size; r++) {
    const uint64_t *row = all + stride * (size_t)r;
    for (size_t i = 0; i < (size_t)most && row[1 + 2 * i]; i++)
      if (row[2 + 2 * i])
        users[n++] = (struct segment_user){row[2 + 2 * i], row[0], row[1 + 2 * i], r};
  }
  if (rc == 0 && disagree(users, n, &a, &b)) {
    mana_fail(err, errlen, 0,
              "ranks %d and %d each shared memory of one name on their own node "
              "at the checkpoint but were restarted on one node, where they would share one: "
              "restart them on as many nodes as before",
              a, b);
    rc = 1; /* found alike by every rank */
  }
  free(all);
  free(users);
  return rc;
}

const struct mana_state_ops mana_state_file_maps = {"shared file mappings", dump, restore, capture,
                                                    NULL};
