/* mana's one way to fail with a reason.  Every error is one line that names the object
 * (a file, a rank, a generation, an option) and what went wrong with it; when a system call
 * failed, the system's words for its errno end the line (": No space left on device").
 * Components keep the line where their callers look for it (an err buffer, a launch plan's
 * or a coordinator connection's error field) but all format it here.
 *
 * The stub's drain does not use it: it runs on the checkpoint thread with the lower half's
 * thread pointer, where the upper half's stdio must not run (wrappers/drain.c). */
#ifndef MANA_FAIL_H
#define MANA_FAIL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Writes the line into err[0..len) (nothing when err is NULL or len is 0), appending ": " and
 * strerror(errnum) when `append` is set, and leaves errno at errnum when it is not 0.
 * Returns -1. */
static inline int mana_vfail(char *err, size_t len, int errnum, int append, const char *fmt,
                             va_list ap)
{
  if (err && len) {
    int n = vsnprintf(err, len, fmt, ap);
    if (append && errnum && n >= 0 && (size_t)n < len)
      snprintf(err + n, len - (size_t)n, ": %s", strerror(errnum));
  }
  if (errnum)
    errno = errnum;
  return -1;
}

/* A failure whose cause is errnum from a system call (0: none): the line ends with the
 * system's words for it, and errno is left at errnum so that a caller can tell the kind. */
static inline int mana_fail(char *err, size_t len, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int mana_fail(char *err, size_t len, int errnum, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  mana_vfail(err, len, errnum, 1, fmt, ap);
  va_end(ap);
  return -1;
}

/* A failure of kind errnum (EBADMSG: damaged data, EINVAL: a bad argument, ...) that no
 * system call reported: the line says it all and errno tells the kind. */
static inline int mana_fail_as(char *err, size_t len, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int mana_fail_as(char *err, size_t len, int errnum, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  mana_vfail(err, len, errnum, 0, fmt, ap);
  va_end(ap);
  return -1;
}

#endif
