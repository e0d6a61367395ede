/* The directory of the running executable, through symbolic links: mana's programs find
 * each other (mana_lh, mana_coordinator, the stub in ../lib/mana) beside themselves. */
#ifndef MANA_EXE_DIR_H
#define MANA_EXE_DIR_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 0, or -1 with errno (ENAMETOOLONG when out is too small). */
static inline int mana_exe_dir(char *out, size_t len)
{
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = '\0';
  if ((size_t)snprintf(out, len, "%s", exe) >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

#endif
