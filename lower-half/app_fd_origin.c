/* Descriptors are shared by both halves, and a pipe or a socket says nothing of who made it:
 * UCX and MPICH hold many.  So the seccomp filter traps the calls that make such objects
 * (pipe, socketpair, socket, accept, eventfd, signalfd, timerfd, epoll, inotify) when upper-half
 * code makes them (sigsys.c), and the handler notes each new object here by device and inode,
 * which every duplicate of its descriptors shares and which a descriptor number reused by the
 * lower half does not.  A small ring: objects made and closed long ago drop out; one still
 * open is found again by its inode as long as it is among the last MANA_APP_FDS made.
 * POSIX timers are the process's too, with ids from one counter: the application's are noted
 * by id the same way (timer_create is trapped too).
 *
 * Eventfds, timerfds, signalfds, epoll and inotify instances have no inode of their own: they
 * all share the kernel's one anonymous inode, so one the application made and closed long ago
 * made every such descriptor of UCX's look like the application's, and every checkpoint was
 * refused for it.  Those are noted by descriptor number instead, with their kind and, for an
 * eventfd, the kernel's id of it; duplicates the application makes are noted too (dup, dup2,
 * dup3 and fcntl's F_DUPFD are trapped).  A number the application closed and the lower half
 * reused for an object of the same kind (but an eventfd, whose id differs) still looks like
 * the application's: a checkpoint refused, the safe way. */
#define _GNU_SOURCE
#include "app_fd_origin.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"

#define MANA_APP_FDS 4096

static struct {
  uint64_t dev, ino;
} made[MANA_APP_FDS];
static uint32_t next;

#define MANA_APP_ANON_FDS 65536

/* By descriptor number: 0, or the kind (its index in mana_app_anon_identity's kinds[]) in the
 * low byte and an eventfd's id plus one above it.  Descriptors from MANA_APP_ANON_FDS up are
 * not noted: never refused, and not given back. */
static uint64_t anon_made[MANA_APP_ANON_FDS];

/* "/proc/self/fd/N" or "/proc/self/fdinfo/N" without libc (the handler's thread pointer). */
static void fd_path(char *out, const char *dir, long fd)
{
  char digits[24];
  int n = 0, at = 0;
  do
    digits[n++] = (char)('0' + fd % 10);
  while ((fd /= 10) > 0 && n < 20);
  while (*dir)
    out[at++] = *dir++;
  while (n > 0)
    out[at++] = digits[--n];
  out[at] = '\0';
}

static int starts_with(const char *s, long len, const char *prefix)
{
  long i = 0;
  for (; prefix[i]; i++)
    if (i >= len || s[i] != prefix[i])
      return 0;
  return 1;
}

uint64_t mana_app_anon_identity(long fd)
{
  static const char *const kinds[] = {"",
                                      "anon_inode:[eventfd]",
                                      "anon_inode:[timerfd]",
                                      "anon_inode:[signalfd]",
                                      "anon_inode:[eventpoll]",
                                      "anon_inode:inotify"};
  char path[48], link[64];
  fd_path(path, "/proc/self/fd/", fd);
  long len = mana_raw_syscall4(SYS_readlink, (long)path, (long)link, sizeof(link), 0);
  uint64_t kind = 0;
  for (uint64_t k = 1; k < sizeof(kinds) / sizeof(kinds[0]) && !kind; k++)
    if (starts_with(link, len, kinds[k]))
      kind = k;
  if (kind != 1)
    return kind;
  /* An eventfd: its id from "eventfd-id: N" in fdinfo (Linux 5.15 and later). */
  char info[512];
  fd_path(path, "/proc/self/fdinfo/", fd);
  long in = mana_raw_syscall4(SYS_open, (long)path, O_RDONLY | O_CLOEXEC, 0, 0);
  long got = in >= 0 ? mana_raw_syscall4(SYS_read, in, (long)info, sizeof(info) - 1, 0) : -1;
  if (in >= 0)
    mana_raw_syscall4(SYS_close, in, 0, 0, 0);
  uint64_t id = 0;
  for (long i = 0; i + 11 < got; i++)
    if (starts_with(info + i, got - i, "eventfd-id:")) {
      for (i += 11; i < got && info[i] == ' '; i++)
        ;
      for (; i < got && info[i] >= '0' && info[i] <= '9'; i++)
        id = id * 10 + (uint64_t)(info[i] - '0');
      id++;
      break;
    }
  return kind | id << 8;
}

void mana_app_anon_fd_dup(long from, long to)
{
  if (to < 0 || to >= MANA_APP_ANON_FDS)
    return;
  uint64_t v = from >= 0 && from < MANA_APP_ANON_FDS
                   ? __atomic_load_n(&anon_made[from], __ATOMIC_ACQUIRE)
                   : 0;
  __atomic_store_n(&anon_made[to], v, __ATOMIC_RELEASE);
}

int mana_app_anon_fd_made(long fd)
{
  if (fd < 0 || fd >= MANA_APP_ANON_FDS)
    return 0;
  uint64_t v = __atomic_load_n(&anon_made[fd], __ATOMIC_ACQUIRE);
  return v != 0 && v == mana_app_anon_identity(fd);
}

void mana_app_fd_note(long fd)
{
  struct stat st;
  if (fd < 0 || mana_raw_syscall4(SYS_fstat, fd, (long)&st, 0, 0) != 0)
    return;
  uint64_t anon = mana_app_anon_identity(fd);
  if (anon) { /* its inode is everyone's */
    if (fd < MANA_APP_ANON_FDS)
      __atomic_store_n(&anon_made[fd], anon, __ATOMIC_RELEASE);
    return;
  }
  uint32_t at = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MANA_APP_FDS;
  __atomic_store_n(&made[at].dev, (uint64_t)st.st_dev, __ATOMIC_RELAXED);
  __atomic_store_n(&made[at].ino, (uint64_t)st.st_ino, __ATOMIC_RELEASE);
}

int mana_app_fd_made(uint64_t dev, uint64_t ino)
{
  for (uint32_t i = 0; i < MANA_APP_FDS; i++)
    if (__atomic_load_n(&made[i].ino, __ATOMIC_ACQUIRE) == ino &&
        __atomic_load_n(&made[i].dev, __ATOMIC_RELAXED) == dev && ino != 0)
      return 1;
  return 0;
}

#define MANA_APP_TIMERS 1024

/* Ids plus one: 0 is a free entry. */
static int timers_made[MANA_APP_TIMERS];
static uint32_t next_timer;

void mana_app_timer_note(int id)
{
  if (id < 0)
    return;
  uint32_t at = __atomic_fetch_add(&next_timer, 1, __ATOMIC_RELAXED) % MANA_APP_TIMERS;
  __atomic_store_n(&timers_made[at], id + 1, __ATOMIC_RELEASE);
}

int mana_app_timer_made(int id)
{
  for (uint32_t i = 0; i < MANA_APP_TIMERS; i++)
    if (__atomic_load_n(&timers_made[i], __ATOMIC_ACQUIRE) == id + 1)
      return 1;
  return 0;
}

int mana_app_timers_noted(void)
{
  return __atomic_load_n(&next_timer, __ATOMIC_ACQUIRE) != 0;
}
