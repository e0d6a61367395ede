/*
 * waiting_in.h - which system call a thread of this process waits in, as /proc shows it: for
 * the test programs (through mpitest.h) and the unit tests, which wait for a thread to be
 * blocked in a call before they act on it.
 */
#ifndef MANA_TESTS_WAITING_IN_H
#define MANA_TESTS_WAITING_IN_H

#include <stdio.h>
#include <sys/types.h>

/* The system call thread `tid` of this process waits in (the first field of its
 * /proc/self/task/TID/syscall), or -1. */
static inline long mt_waiting_in(pid_t tid)
{
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "re");
  long nr = -1;
  if (f) {
    if (fscanf(f, "%ld", &nr) != 1)
      nr = -1;
    fclose(f);
  }
  return nr;
}

#endif
