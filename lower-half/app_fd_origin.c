/* Descriptors are shared by both halves, and a pipe or a socket says nothing of who made it:
 * UCX and MPICH hold many.  So the seccomp filter traps the calls that make such objects
 * (pipe, socketpair, socket, accept, eventfd, signalfd, timerfd, epoll, inotify) when upper-half
 * code makes them (sigsys.c), and the handler notes each new object here by device and inode,
 * which every duplicate of its descriptors shares and which a descriptor number reused by the
 * lower half does not.  A small ring: objects made and closed long ago drop out; one still
 * open is found again by its inode as long as it is among the last MANA_APP_FDS made.
 * POSIX timers are the process's too, with ids from one counter: the application's are noted
 * by id the same way (timer_create is trapped too). */
#define _GNU_SOURCE
#include "app_fd_origin.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"

#define MANA_APP_FDS 4096

static struct {
  uint64_t dev, ino;
} made[MANA_APP_FDS];
static uint32_t next;

void mana_app_fd_note(long fd)
{
  struct stat st;
  if (fd < 0 || mana_raw_syscall4(SYS_fstat, fd, (long)&st, 0, 0) != 0)
    return;
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
