/* The lower half starts the application with mana's stub directory first on LD_LIBRARY_PATH
 * and glibc's rseq registration off (upper-half/environment.c).  The application's ld.so read
 * its library search path, and its libc the tunables, when the process started, and neither
 * reads them again (a later dlopen still finds the stub), so the stub takes both out here.
 * Left in, they reached every program the application starts: one linked with MPICH loaded
 * the stub outside mana and died, and getenv showed the application values it never set. */
#define _GNU_SOURCE
#include "job_env.h"

#include <stdlib.h>
#include <string.h>

#include "mana/upper_env.h"

/* `name` without the element `first` it starts with and the separator after it; unset when
 * nothing follows.  Anything else is the job's own and stays. */
static void drop_first(const char *name, const char *first, char sep)
{
  const char *value = getenv(name);
  size_t len = strlen(first);
  if (!value || strncmp(value, first, len) != 0)
    return;
  if (value[len] == '\0')
    unsetenv(name);
  else if (value[len] == sep)
    setenv(name, value + len + 1, 1);
}

void mana_job_env_restore(void)
{
  const char *dir = getenv(MANA_UPPER_STUB_DIR_ENV);
  char copy[4096];
  if (!dir || strlen(dir) >= sizeof(copy))
    return;
  strcpy(copy, dir);
  drop_first("LD_LIBRARY_PATH", copy, ':');
  drop_first("GLIBC_TUNABLES", MANA_UPPER_TUNABLES, ':');
  unsetenv(MANA_UPPER_STUB_DIR_ENV);
}
