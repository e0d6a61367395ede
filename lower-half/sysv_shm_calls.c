/* System V shared memory (shmget, shmat) made by the application.  Two things the kernel would
 * get wrong for the upper half:
 *
 *  - shmat without an address lets the kernel choose one, outside the window: the segment would
 *    never be in an image, and after a restart the application's pointer would fall on
 *    whatever the lower half mapped there (MPICH's own shared memory, say).  So the SIGSYS
 *    handler attaches it in the window (over the allocator's reservation, SHM_REMAP), and
 *    shmdt puts the reservation back over it in one step, so the range is never a hole.
 *  - a segment made again at a restart gets a new id from the kernel, but the application
 *    keeps the old one in its memory (to shmat it on another rank, to mark it for removal at
 *    the end).  The restart (state_sysv_shm.c) remembers which id is which; shmat and shmctl
 *    take the application's id and shmget returns it.  A segment the application makes after
 *    a restart keeps the kernel's id, which on a long-lived node could equal an old one the
 *    table translates: then the application would reach the other segment (not seen; noted in
 *    docs/checkpoint-engine.md).
 *
 * shmdt of a range the application had partly unmapped and mapped something else into puts
 * the reservation over that too; the kernel's would only detach the segment's pieces. */
#define _GNU_SOURCE
#include "sysv_shm_calls.h"

#include <errno.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#include "address_space.h"
#include "huge_pages.h"
#include "mana/raw_syscall.h"
#include "mana/upper_window.h"

#define IPC_64_FLAG 0x100 /* linux/ipc.h: the layout flag some libcs add to the command */
#define MAX_IDS 256
#define MAX_ATTACHES 1024

/* Written by a restart before the application runs again; read by the handler only. */
static struct {
  int app, kernel;
} ids[MAX_IDS];
static uint32_t n_ids;

/* Ranges the handler (or a restart) attached in the window; addr 0 is a free entry. */
static struct {
  uint64_t addr, len;
} attaches[MAX_ATTACHES];
static volatile int attach_lock;

static void lock(void)
{
  while (__atomic_exchange_n(&attach_lock, 1, __ATOMIC_ACQUIRE))
    __builtin_ia32_pause();
}

static void unlock(void)
{
  __atomic_store_n(&attach_lock, 0, __ATOMIC_RELEASE);
}

static int kernel_id(int app_id)
{
  for (uint32_t i = 0; i < n_ids; i++)
    if (ids[i].app == app_id)
      return ids[i].kernel;
  return app_id;
}

int mana_sysv_shm_app_id(int kernel_id)
{
  for (uint32_t i = 0; i < n_ids; i++)
    if (ids[i].kernel == kernel_id)
      return ids[i].app;
  return kernel_id;
}

int mana_sysv_shm_remember_id(int app_id, int kernel)
{
  for (uint32_t i = 0; i < n_ids; i++)
    if (ids[i].app == app_id) {
      ids[i].kernel = kernel;
      return 0;
    }
  if (n_ids == MAX_IDS)
    return -1;
  ids[n_ids].app = app_id;
  ids[n_ids].kernel = kernel;
  n_ids++;
  return 0;
}

int mana_sysv_shm_remember_attach(uint64_t addr, uint64_t len)
{
  int rc = -1;
  lock();
  for (uint32_t i = 0; i < MAX_ATTACHES && rc != 0; i++)
    if (attaches[i].addr == 0) {
      attaches[i].addr = addr;
      attaches[i].len = len;
      rc = 0;
    }
  unlock();
  return rc;
}

/* The length attached at addr, taken out of the table; 0 when it is not there. */
static uint64_t forget_attach(uint64_t addr)
{
  uint64_t len = 0;
  lock();
  for (uint32_t i = 0; i < MAX_ATTACHES && len == 0; i++)
    if (attaches[i].addr == addr) {
      len = attaches[i].len;
      attaches[i].addr = 0;
    }
  unlock();
  return len;
}

static long raw3(long nr, long a, long b, long c)
{
  return mana_raw_syscall4(nr, a, b, c, 0);
}

static uint64_t page_up(uint64_t v)
{
  return (v + 4095) & ~4095UL;
}

/* Bytes an attach of segment kid takes in the window (whole huge pages for a large one, which
 * may be a SHM_HUGETLB segment: its attach must start and end on one). */
static long attach_length(int kid, uint64_t *len, uint64_t *align)
{
  struct shmid_ds ds;
  long r = raw3(SYS_shmctl, kid, IPC_STAT, (long)&ds);
  if (r < 0)
    return r;
  *len = page_up(ds.shm_segsz);
  *align = 4096;
  if (*len >= MANA_HUGE_PAGE) {
    *align = MANA_HUGE_PAGE;
    *len = (*len + MANA_HUGE_PAGE - 1) & ~(uint64_t)(MANA_HUGE_PAGE - 1);
  }
  return 0;
}

static long serve_shmat(int app_id, uint64_t addr, long flags)
{
  struct mana_window *w = &mana_the_window;
  int kid = kernel_id(app_id);
  if (addr != 0 && (flags & SHM_RND))
    addr &= ~(uint64_t)(SHMLBA - 1);
  if (addr != 0 && !mana_window_contains(w, addr, 1))
    return raw3(SYS_shmat, kid, (long)addr, flags);
  uint64_t len, align;
  long r = attach_length(kid, &len, &align);
  if (r < 0)
    return r;
  if (addr != 0 && (flags & SHM_REMAP)) { /* the application chose what it replaces */
    mana_window_claim(w, addr, len);      /* fails harmlessly where it replaces its own */
    r = raw3(SYS_shmat, kid, (long)addr, flags);
    if (r >= 0)
      mana_sysv_shm_remember_attach(addr, len);
    return r;
  }
  if (addr == 0)
    addr = mana_window_alloc(w, len, align);
  else if ((addr & 4095) || mana_window_claim(w, addr, len) != 0)
    return -EINVAL; /* the kernel's answer for a range that is taken */
  if (addr == 0)
    return -ENOMEM;
  r = raw3(SYS_shmat, kid, (long)addr, flags | SHM_REMAP);
  if (r < 0 || mana_sysv_shm_remember_attach(addr, len) != 0) {
    if (r >= 0) { /* untracked, shmdt could not put the reservation back: undo */
      mana_raw_syscall6(SYS_mmap, (long)addr, (long)len, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      mana_exclude_from_cores(addr, len);
    }
    mana_window_free(w, addr, len);
    return r < 0 ? r : -ENOMEM;
  }
  return r;
}

static long serve_shmdt(uint64_t addr)
{
  uint64_t len = forget_attach(addr);
  if (len == 0)
    return raw3(SYS_shmdt, (long)addr, 0, 0);
  long r = mana_raw_syscall6(SYS_mmap, (long)addr, (long)len, PROT_NONE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (r < 0) {
    mana_sysv_shm_remember_attach(addr, len);
    return r;
  }
  mana_exclude_from_cores(addr, len);
  mana_window_free(&mana_the_window, addr, len);
  return 0;
}

static long serve_shmctl(int app_id, long cmd, long buf)
{
  switch (cmd & ~IPC_64_FLAG) {
  case IPC_STAT:
  case IPC_SET:
  case IPC_RMID:
  case SHM_LOCK:
  case SHM_UNLOCK:
    return raw3(SYS_shmctl, kernel_id(app_id), cmd, buf);
  case SHM_STAT:
  case SHM_STAT_ANY: { /* an index in, an id out */
    long r = raw3(SYS_shmctl, app_id, cmd, buf);
    return r < 0 ? r : mana_sysv_shm_app_id((int)r);
  }
  default:
    return raw3(SYS_shmctl, app_id, cmd, buf);
  }
}

long mana_sysv_shm_call(long nr, const long args[6])
{
  long r;
  switch (nr) {
  case SYS_shmget:
    r = raw3(SYS_shmget, args[0], args[1], args[2]);
    return r < 0 ? r : mana_sysv_shm_app_id((int)r);
  case SYS_shmat:
    return serve_shmat((int)args[0], (uint64_t)args[1], args[2]);
  case SYS_shmdt:
    return serve_shmdt((uint64_t)args[0]);
  case SYS_shmctl:
    return serve_shmctl((int)args[0], args[1], args[2]);
  default:
    return -ENOSYS;
  }
}
