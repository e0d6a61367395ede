/* A checkpoint saves the rank's own process only.  A child the application started (popen,
 * system, fork, posix_spawn) is not in the image: after a restart its pipe is gone (the next
 * read fails with EBADF) and waiting for it fails with ECHILD, so the program takes an error
 * path it never takes natively, or computes with a status it never got.  Such children are
 * short-lived in MPI programs (a command whose output is read, a file compressed), so the
 * checkpoint waits for a moment without any: it releases the parked threads, which finish
 * with their children and run on at most to their next collective (where the clock holds
 * them once the targets are met), and parks them again.  A child that outlives the wait
 * refuses the checkpoint, with its pid and name. */
#define _GNU_SOURCE
#include "park_children.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "park.h"

static long long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void describe(long pid, char *why, size_t len)
{
  char path[64], name[64] = "?";
  snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fgets(name, sizeof(name), f))
      name[strcspn(name, "\n")] = '\0';
    fclose(f);
  }
  snprintf(why, len, "process %ld (%s)", pid, name);
}

/* The first pid in a thread's children file, or 0; -1 when the kernel has no such file. */
static long first_child_of(const char *tid)
{
  char path[300], buf[64];
  snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  return strtol(buf, NULL, 10);
}

/* Without CONFIG_PROC_CHILDREN: every process whose parent is this one. */
static long first_child_by_scan(void)
{
  DIR *proc = opendir("/proc");
  if (!proc)
    return -1;
  long found = 0, self = (long)getpid();
  struct dirent *e;
  while (!found && (e = readdir(proc)) != NULL) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
      continue;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so from the last ')' */
    const char *end = strrchr(buf, ')');
    char state;
    long ppid;
    if (end && sscanf(end + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
      found = strtol(e->d_name, NULL, 10);
  }
  closedir(proc);
  return found;
}

int mana_child_process(char *why, size_t len)
{
  DIR *tasks = opendir("/proc/self/task");
  if (!tasks)
    return -1;
  long child = 0;
  int no_file = 0;
  struct dirent *e;
  while (!child && (e = readdir(tasks)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    long c = first_child_of(e->d_name);
    if (c < 0)
      no_file = 1;
    else
      child = c;
  }
  closedir(tasks);
  if (!child && no_file)
    child = first_child_by_scan();
  if (child <= 0)
    return child < 0 ? -1 : 0;
  describe(child, why, len);
  return 1;
}

int mana_children_wait_ms(void)
{
  static int wait_ms = -1;
  if (wait_ms >= 0)
    return wait_ms;
  wait_ms = MANA_CHILDREN_WAIT_MS;
  const char *env = getenv("MANA_CHILDREN_WAIT_MS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end || v < 0 || v > 3600000)
      fprintf(stderr,
              "mana_lh: MANA_CHILDREN_WAIT_MS=%s is not a number of milliseconds from 0 "
              "to 3600000; using %d\n",
              env, MANA_CHILDREN_WAIT_MS);
    else
      wait_ms = (int)v;
  }
  return wait_ms;
}

enum park_children_outcome mana_park_without_children(int signo, int park_timeout_ms, int wait_ms,
                                                      char *err, size_t errlen)
{
  long long deadline = now_ms() + wait_ms;
  long pause_ms = 1;
  for (;;) {
    if (mana_park_all(signo, park_timeout_ms, err, errlen) != 0)
      return PARK_CHILDREN_FAILED;
    char child[128];
    /* -1: /proc cannot tell; the checkpoint goes on as it did before this check */
    if (mana_child_process(child, sizeof(child)) <= 0)
      return PARK_CHILDREN_NONE;
    if (now_ms() >= deadline) {
      snprintf(err, errlen,
               "the application has a child %s, still there after %d ms: a restart could not give "
               "it back (its pipes, its exit status)",
               child, wait_ms);
      return PARK_CHILDREN_REMAIN;
    }
    mana_park_release();
    struct timespec ts = {0, pause_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (pause_ms < 32)
      pause_ms *= 2;
  }
}
