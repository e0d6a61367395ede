/* The application's System V shared memory (shmget + shmat), which the ranks of a node share
 * as they would POSIX shared memory (state_file_maps.c).  The image holds the attached pages
 * like any memory, but restored they were private copies, and the segment id the application
 * keeps named nothing, or another program's segment.
 *
 * At a checkpoint each attached range is recorded with its segment's key, size, permissions,
 * whether it was marked for removal (IPC_RMID while attached: the idiom that leaks nothing when
 * the job dies, whose key the kernel has reset to IPC_PRIVATE by then), the id the application
 * knows it by and the id the kernel has for it.  A restart makes the segment again under a key
 * every rank of the node finds: its own, or for a private one a key hashed from the
 * checkpoint's host, the kernel's id then and the checkpoint directory.  It writes the range's
 * content from the restored copy into it (every rank that attached it writes the same bytes,
 * as with POSIX shared memory), and moves a fresh attach of the same pages over the copy, so
 * that a range the application had partly unmapped or protected comes back as it was.  The
 * application's id is then translated to the new one in its shm calls (sysv_shm_calls.c), and a
 * segment marked for removal is marked again once the restarted MPI_Init has returned, when
 * every rank of the job has attached it.  A private segment that was not marked keeps the
 * hashed key until the application removes it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "coord_client.h"
#include "huge_pages.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "mana/raw_syscall.h"
#include "state.h"
#include "sysv_shm_calls.h"
#include "upper_mappings.h"

struct sysv_map {
  uint64_t start, end, offset; /* the range, at offset in its segment */
  uint64_t size;               /* the segment's */
  uint64_t placement_key;      /* its checkpoint host and kernel id, hashed */
  uint32_t prot;
  uint32_t mode; /* permission bits, | MARKED_FOR_REMOVAL */
  int32_t app_id, kernel_id, key;
  uint32_t reserved;
};

#define MARKED_FOR_REMOVAL 0x80000000u

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct sysv_map *maps;
static size_t n_maps, maps_cap;

static int note_map(const struct mana_mapping *m, void *arg)
{
  char *err = arg;
  if (!m->shared || strncmp(m->path, "/SYSV", 5) != 0 || (m->dev >> 32) != 0)
    return 0;
  struct shmid_ds ds;
  int kid = (int)m->inode;
  if (shmctl(kid, IPC_STAT, &ds) != 0)
    return mana_fail(err, 256, errno,
                     "the application's System V shared memory segment %d at %#llx", kid,
                     (unsigned long long)m->start);
  if (n_maps == maps_cap) {
    size_t cap = maps_cap ? 2 * maps_cap : 8;
    struct sysv_map *bigger = realloc(maps, cap * sizeof(*maps));
    if (!bigger)
      return mana_fail(err, 256, ENOMEM, "System V shared memory");
    maps = bigger;
    maps_cap = cap;
  }
  struct sysv_map *s = &maps[n_maps++];
  memset(s, 0, sizeof(*s));
  s->start = m->start;
  s->end = m->end;
  s->offset = m->offset;
  s->size = ds.shm_segsz;
  s->placement_key = mana_state_shared_segment_key(&kid, sizeof(kid));
  s->prot = m->prot;
  s->mode = (ds.shm_perm.mode & 0777) | ((ds.shm_perm.mode & SHM_DEST) ? MARKED_FOR_REMOVAL : 0);
  s->app_id = mana_sysv_shm_app_id(kid);
  s->kernel_id = kid;
  s->key = (int32_t)ds.shm_perm.__key;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_maps = 0;
  return mana_upper_mappings_capture(note_map, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_maps; i++)
    if (mana_image_add_blob(w, MANA_BLOB_SYSV_SHM, &maps[i], sizeof(maps[i])) != 0)
      return mana_fail(err, errlen, 0, "System V shared memory: %s", mana_image_writer_error(w));
  return 0;
}

/* The segments this restart made again: the application's id, the new one, an attach of it
 * where the content is written, and whether to mark it for removal after MPI_Init. */
struct made {
  uint64_t placement_key;
  int app_id, kernel_id, remove;
  char *attached;
};
static struct made *made;
static size_t n_made;

/* The key the ranks of a node meet at: the segment's own, else one hashed from where it was
 * and from the checkpoint directory (two jobs restarted on one node never meet). */
static key_t meeting_key(const struct sysv_map *s)
{
  if (s->key != IPC_PRIVATE)
    return (key_t)s->key;
  const char *ckptdir = getenv(COORD_ENV_CKPTDIR);
  uint64_t h = s->placement_key ^ mana_state_shared_segment_name(ckptdir ? ckptdir : "",
                                                                 ckptdir ? strlen(ckptdir) : 0);
  return (key_t)(((h ^ (h >> 32)) & 0x7fffffff) | 1);
}

static struct made *segment_of(const struct sysv_map *s, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_made; i++)
    if (made[i].placement_key == s->placement_key)
      return &made[i];
  struct made *more = realloc(made, (n_made + 1) * sizeof(*more));
  if (!more) {
    mana_fail(err, errlen, ENOMEM, "System V shared memory");
    return NULL;
  }
  made = more;
  key_t key = meeting_key(s);
  int kid = shmget(key, s->size, IPC_CREAT | (int)(s->mode & 0777));
  char *attached = kid < 0 ? (char *)-1 : shmat(kid, NULL, 0);
  if (attached == (char *)-1) {
    mana_fail(err, errlen, errno,
              "cannot make the application's System V shared memory segment %d again "
              "(key %#x, %llu bytes)",
              s->app_id, (unsigned)key, (unsigned long long)s->size);
    return NULL;
  }
  uint64_t name =
      s->key != IPC_PRIVATE ? mana_state_shared_segment_name(&s->key, sizeof(s->key)) : 0;
  if (mana_state_shared_segment_note(s->placement_key, name) != 0 ||
      mana_sysv_shm_remember_id(s->app_id, kid) != 0) {
    shmdt(attached);
    mana_fail(err, errlen, ENOMEM, "too many System V shared memory segments (%d)", s->app_id);
    return NULL;
  }
  made[n_made] = (struct made){s->placement_key, s->app_id, kid,
                               (s->mode & MARKED_FOR_REMOVAL) != 0, attached};
  return &made[n_made++];
}

/* Bytes an attach of a segment of size bytes takes in the window, as sysv_shm_calls.c counts
 * them. */
static uint64_t attach_length(uint64_t size)
{
  uint64_t len = (size + 4095) & ~4095ull;
  return len >= MANA_HUGE_PAGE ? (len + MANA_HUGE_PAGE - 1) & ~(uint64_t)(MANA_HUGE_PAGE - 1) : len;
}

static int restore_range(const struct sysv_map *s, char *err, size_t errlen)
{
  struct made *seg = segment_of(s, err, errlen);
  if (!seg)
    return -1;
  uint64_t len = s->end - s->start;
  if (s->prot & PROT_READ)
    memcpy(seg->attached + s->offset, (const void *)(uintptr_t)s->start, len);
  /* The system call, not libc's mremap: UCX's memory hooks in the lower half replace that
   * with one that drops the new address (the range landed at 0). */
  char *fresh = shmat(seg->kernel_id, NULL, 0);
  long moved = fresh == (char *)-1
                   ? -EINVAL
                   : mana_raw_syscall6(SYS_mremap, (long)(fresh + s->offset), (long)len, (long)len,
                                       MREMAP_MAYMOVE | MREMAP_FIXED, (long)s->start, 0);
  void *at = moved < 0 && moved > -4096 ? MAP_FAILED : (void *)moved;
  int e = moved < 0 && moved > -4096 ? (int)-moved : 0;
  if (fresh != (char *)-1)
    munmap(fresh, (s->size + 4095) & ~4095ull); /* what is left of it */
  if (at == MAP_FAILED || mprotect(at, len, (int)s->prot) != 0)
    return mana_fail(err, errlen, at == MAP_FAILED ? e : errno,
                     "cannot attach the application's System V shared memory segment %d again "
                     "at %#llx",
                     s->app_id, (unsigned long long)s->start);
  if (s->offset == 0 && mana_sysv_shm_remember_attach(s->start, attach_length(s->size)) != 0)
    return mana_fail(err, errlen, ENOMEM, "too many System V shared memory attaches");
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  int rc = 0;
  for (size_t at = 0; rc == 0 && mana_image_next_blob(r, MANA_BLOB_SYSV_SHM, &at, &data, &len);) {
    const struct sysv_map *s = data;
    if (len != sizeof(*s) || s->end <= s->start || s->offset + (s->end - s->start) > s->size + 4095)
      return mana_fail(err, errlen, 0, "a System V shared memory record in the image is malformed");
    rc = restore_range(s, err, errlen);
  }
  for (size_t i = 0; i < n_made; i++) {
    shmdt(made[i].attached);
    made[i].attached = NULL;
  }
  return rc;
}

void mana_state_sysv_shm_remove_restored(void)
{
  for (size_t i = 0; i < n_made; i++)
    if (made[i].remove)
      shmctl(made[i].kernel_id, IPC_RMID, NULL); /* EINVAL: another rank of the node was first */
  free(made);
  made = NULL;
  n_made = 0;
}

const struct mana_state_ops mana_state_sysv_shm = {"System V shared memory", dump, restore, capture,
                                                   NULL};
