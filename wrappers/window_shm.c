/* The memory of MPI_Win_allocate_shared, in the upper half.
 *
 * MPICH would allocate it outside the window, where no checkpoint looks.  The stub makes one
 * file in /dev/shm per window (created by the window's rank 0, named after its process and a
 * counter), every rank of the window maps all of it MAP_SHARED (the mmap is served inside the
 * window by mana's seccomp handler), and the file is unlinked once everyone has it.  Rank i's
 * part starts where rank i-1's ends, with no padding: MPICH 4.0.2 lays the default
 * (contiguous) segment out the same way, and MPI_Win_shared_query answers from the record.
 *
 * The real window is MPI_Win_create's over this rank's part, but MPICH 4.0.2 (ch4:ucx) puts an
 * operation for a window whose base is not 16-byte aligned at the base rounded down to 16
 * bytes (measured: a base 4 bytes past a 16-byte boundary receives a put to displacement 0 at
 * base - 4), and a contiguous segment has parts anywhere (4-byte parts in MPICH's own
 * rma/fence_shm).  So the real window starts at the part's address rounded down to 16 bytes,
 * with a displacement unit of 1, and every RMA operation's target displacement is translated
 * (mana_win_target_disp, `tdisp` in mpi_api.txt): the target's offset from that boundary plus
 * the displacement times the target's unit.  MPI_WIN_BASE, _SIZE and _DISP_UNIT are answered
 * from the record.
 *
 * The image saves the mapping like any upper-half memory; a restart maps it back privately.
 * The rebuild then makes it shared again: a new file, each rank writes its own part into it
 * from its restored copy, and every rank maps the file over the same address range.  Ranks
 * that shared a window must still share a node: checked with MPI_Comm_split_type, and the
 * rebuild stops with the reason if not. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "window.h"

#define SHM_NAME_LEN 96

static unsigned shm_counter;

static size_t page_round(MPI_Aint n)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t len = n > 0 ? (size_t)n : 1;
  return (len + page - 1) / page * page;
}

/* Rank 0 makes the file (size len) and tells the others its name; every rank opens it.
 * Returns the descriptor, or -1 (the reason printed) on every rank if rank 0 failed. */
static int open_segment(MPI_Comm c, int me, size_t len, char name[SHM_NAME_LEN])
{
  int fd = -1;
  if (me == 0) {
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
      snprintf(name, SHM_NAME_LEN, "/dev/shm/mana-win-%d-%u", (int)getpid(), shm_counter++);
      fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 && errno != EEXIST)
        break;
    }
    if (fd >= 0 && ftruncate(fd, (off_t)len) != 0) {
      fprintf(stderr, "mana: shared window memory: cannot size %s: %s\n", name, strerror(errno));
      close(fd);
      unlink(name);
      fd = -1;
    } else if (fd < 0) {
      fprintf(stderr, "mana: shared window memory: cannot create a file in /dev/shm: %s\n",
              strerror(errno));
    }
    if (fd < 0)
      name[0] = '\0';
  }
  if (MANA_LH_CALL_NOPARK(MPI_Bcast, name, SHM_NAME_LEN, MPI_CHAR, 0, c) != MPI_SUCCESS || !name[0])
    return me == 0 && fd >= 0 ? (close(fd), -1) : -1;
  if (me != 0 && (fd = open(name, O_RDWR | O_CLOEXEC)) < 0)
    fprintf(stderr, "mana: shared window memory: cannot open %s: %s\n", name, strerror(errno));
  return fd;
}

/* Everyone has mapped it (or failed): the name can go. */
static int finish_segment(MPI_Comm c, int me, int fd, const char *name, int ok)
{
  int all_ok = ok;
  if (fd >= 0)
    close(fd);
  int rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, c);
  if (me == 0)
    unlink(name);
  return rc == MPI_SUCCESS && all_ok ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

int mana_win_shm_create(struct win_rec *r, MPI_Comm c, MPI_Aint size, MPI_Aint disp_unit,
                        void **base)
{
  struct win_shm *s = calloc(1, sizeof(*s));
  int rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_size, c, &s->n);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_rank, c, &s->me);
  MPI_Aint *pairs = rc == MPI_SUCCESS ? malloc(2 * (size_t)s->n * sizeof(MPI_Aint)) : NULL;
  if (rc == MPI_SUCCESS) {
    s->sizes = malloc((size_t)s->n * sizeof(MPI_Aint));
    s->disp_units = malloc((size_t)s->n * sizeof(MPI_Aint));
    s->offsets = malloc((size_t)s->n * sizeof(MPI_Aint));
    if (!pairs || !s->sizes || !s->disp_units || !s->offsets)
      r->incomplete = 1;
  }
  MPI_Aint mine[2] = {size, disp_unit};
  if (rc == MPI_SUCCESS && pairs)
    rc = MANA_LH_CALL_NOPARK(MPI_Allgather, mine, 2, MPI_AINT, pairs, 2, MPI_AINT, c);
  if (rc != MPI_SUCCESS || r->incomplete) {
    free(pairs);
    r->shm = s;
    return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
  }
  MPI_Aint total = 0;
  for (int i = 0; i < s->n; i++) {
    s->sizes[i] = pairs[2 * i];
    s->disp_units[i] = pairs[2 * i + 1];
    s->offsets[i] = total;
    total += s->sizes[i];
  }
  free(pairs);
  s->map_len = page_round(total);
  r->shm = s;
  char name[SHM_NAME_LEN] = "";
  int fd = open_segment(c, s->me, s->map_len, name);
  void *map =
      fd >= 0 ? mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0 && map == MAP_FAILED)
    fprintf(stderr, "mana: shared window memory: cannot map %s: %s\n", name, strerror(errno));
  s->map = map == MAP_FAILED ? NULL : map;
  rc = finish_segment(c, s->me, fd, name, s->map != NULL);
  if (rc == MPI_SUCCESS) /* no memory: no address, as MPICH answers */
    *base = s->sizes[s->me] > 0 ? s->map + s->offsets[s->me] : NULL;
  return rc;
}

/* The ranks that shared the window must share a node again. */
static int still_one_node(const struct win_rec *r, MPI_Comm c)
{
  MPI_Comm node = MPI_COMM_NULL;
  int size = 0;
  int rc =
      MANA_LH_CALL_NOPARK(MPI_Comm_split_type, c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_size, node, &size);
  if (node != MPI_COMM_NULL)
    MANA_LH_CALL_NOPARK(MPI_Comm_free, &node);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("shared window", r->self, "MPI_Comm_split_type", rc);
  int all = size == r->shm->n;
  rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, c);
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("shared window", r->self, "MPI_Allreduce", rc);
  if (!all) {
    fprintf(stderr,
            "mana: rebuilding MPI objects: the %d ranks of shared-memory window %#x "
            "are no longer on one node; it cannot be shared again\n",
            r->shm->n, r->self);
    return MPI_ERR_WIN;
  }
  return MPI_SUCCESS;
}

int mana_win_shm_reshare(struct win_rec *r, MPI_Comm c)
{
  struct win_shm *s = r->shm;
  int rc = still_one_node(r, c);
  if (rc != MPI_SUCCESS)
    return rc;
  char name[SHM_NAME_LEN] = "";
  int fd = open_segment(c, s->me, s->map_len, name);
  int ok = fd >= 0;
  /* This rank's part, from its restored private copy; the others write theirs. */
  MPI_Aint off = s->offsets[s->me], left = s->sizes[s->me];
  while (ok && left > 0) {
    ssize_t n = pwrite(fd, s->map + off, (size_t)left, off);
    if (n <= 0) {
      fprintf(stderr, "mana: rebuilding shared window %#x: cannot write %s: %s\n", r->self, name,
              strerror(errno));
      ok = 0;
      break;
    }
    off += n;
    left -= n;
  }
  int all = ok;
  rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, c);
  if (rc == MPI_SUCCESS && all &&
      mmap(s->map, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
          MAP_FAILED) {
    fprintf(stderr, "mana: rebuilding shared window %#x: cannot map %s at %p: %s\n", r->self, name,
            (void *)s->map, strerror(errno));
    all = 0;
  }
  rc = finish_segment(c, s->me, fd, name, rc == MPI_SUCCESS && all);
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("shared window", r->self, "sharing", rc);
}

void mana_win_shm_free(struct win_rec *r)
{
  if (r->shm && r->shm->map)
    munmap(r->shm->map, r->shm->map_len);
  if (r->shm)
    r->shm->map = NULL;
}

int mana_win_shm_query(const struct win_rec *r, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                       void *baseptr)
{
  const struct win_shm *s = r->shm;
  int at = rank;
  if (rank == MPI_PROC_NULL) { /* the lowest rank with memory, as MPICH answers */
    for (at = 0; at < s->n && s->sizes[at] == 0; at++)
      ;
    if (at == s->n) {
      *size = 0;
      *disp_unit = 0;
      *(void **)baseptr = NULL;
      return MPI_SUCCESS;
    }
  }
  if (at < 0 || at >= s->n)
    return MPI_ERR_RANK;
  *size = s->sizes[at];
  *disp_unit = s->disp_units[at];
  /* A rank without memory has no address (MPICH's rma/win_shared_noncontig_put asserts it) */
  *(void **)baseptr = s->sizes[at] > 0 ? s->map + s->offsets[at] : NULL;
  return MPI_SUCCESS;
}

void mana_win_shm_real_part(const struct win_rec *r, void **base, MPI_Aint *size)
{
  const struct win_shm *s = r->shm;
  MPI_Aint skew = s->offsets[s->me] & 15;
  *base = s->map + s->offsets[s->me] - skew;
  *size = s->sizes[s->me] + skew;
}

MPI_Aint mana_win_target_disp(MPI_Win win, int target_rank, MPI_Aint target_disp)
{
  const struct win_rec *r = mana_win_rec(win);
  const struct win_shm *s = r ? r->shm : NULL;
  if (__builtin_expect(!s, 1) || target_rank < 0 || target_rank >= s->n)
    return target_disp;
  return (s->offsets[target_rank] & 15) + target_disp * s->disp_units[target_rank];
}
