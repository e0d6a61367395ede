/* app_check: decide, before anything is launched, whether a program can run under mana.
 *
 * mana loads the application as the upper half next to a lower half that owns the real
 * MPICH, and replaces libmpich.so.12 in the upper half with its own stub. That only works
 * for a dynamically linked x86-64 ELF program that reaches MPICH through DT_NEEDED, so
 * anything else is refused here with one clear line instead of failing obscurely later
 * inside every rank.
 */
#ifndef MANA_APP_CHECK_H
#define MANA_APP_CHECK_H

#include <limits.h>

/* Shell conventions, so scripts see the same codes as for "sh -c APP". */
#define APP_CHECK_NOT_FOUND 127
#define APP_CHECK_CANNOT_RUN 126

#define APP_CHECK_MSG_LEN 512

/* The parts of the environment the check depends on, passed in so tests control them. */
struct app_check_env {
  const char *path;            /* PATH; NULL means the execvp default "/bin:/usr/bin" */
  const char *ld_library_path; /* LD_LIBRARY_PATH or NULL */
};

struct app_check_result {
  char resolved[PATH_MAX];       /* where the program was found */
  char error[APP_CHECK_MSG_LEN]; /* one line, no "mana_launch: " prefix */
};

/* Finds app the way execvp would (a name without '/' is searched in PATH; a relative path
 * is taken relative to wdir when wdir is not NULL) and checks it. Returns 0 when mana can
 * run it, APP_CHECK_NOT_FOUND or APP_CHECK_CANNOT_RUN with result->error set otherwise. */
int app_check(const char *app, const char *wdir, const struct app_check_env *env,
              struct app_check_result *result);

#endif
