/* The process's resource limits.  A restarted process has the limits of the shell or job
 * step that started the restart; the application may have raised its own (the open files'
 * soft limit up to the hard one, to keep a file per peer or per variable open; the stack for
 * Fortran's automatic arrays), and the restart then failed to put back the descriptors
 * above the old soft limit, or the application ran into it.  So a restart raises every soft
 * limit the application had raised, up to the hard limit it finds, before any other state
 * comes back (descriptors, memory).  A limit the application lowered stays the restart's:
 * the original run lowered it after MPI_Init, and the restarted MPI must not start under it
 * (a locked-memory limit for its network buffers) — but for the core dump size, which only
 * says what a crash leaves behind. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

#define N_LIMITS 16 /* RLIMIT_NLIMITS of Linux on x86-64 */
_Static_assert(RLIMIT_NLIMITS <= N_LIMITS, "more resource limits than the image holds");

struct saved_limit {
  uint64_t soft, hard;
};

static struct saved_limit saved[N_LIMITS];

static int capture(char *err, size_t errlen)
{
  for (int i = 0; i < RLIMIT_NLIMITS; i++) {
    struct rlimit l;
    if (getrlimit(i, &l) != 0)
      return mana_fail(err, errlen, errno, "cannot read resource limit %d", i);
    saved[i] = (struct saved_limit){l.rlim_cur, l.rlim_max};
  }
  for (int i = RLIMIT_NLIMITS; i < N_LIMITS; i++)
    saved[i] = (struct saved_limit){RLIM_INFINITY, RLIM_INFINITY};
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_RLIMITS, saved, sizeof(saved)) != 0)
    return mana_fail(err, errlen, 0, "resource limits: %s", mana_image_writer_error(w));
  return 0;
}

static const char *limit_name(int i)
{
  static const char *const names[] = {[RLIMIT_CPU] = "CPU time",
                                      [RLIMIT_FSIZE] = "file size",
                                      [RLIMIT_DATA] = "data size",
                                      [RLIMIT_STACK] = "stack size",
                                      [RLIMIT_CORE] = "core size",
                                      [RLIMIT_RSS] = "resident set",
                                      [RLIMIT_NPROC] = "processes",
                                      [RLIMIT_NOFILE] = "open files",
                                      [RLIMIT_MEMLOCK] = "locked memory",
                                      [RLIMIT_AS] = "address space",
                                      [RLIMIT_LOCKS] = "file locks",
                                      [RLIMIT_SIGPENDING] = "pending signals",
                                      [RLIMIT_MSGQUEUE] = "message queues",
                                      [RLIMIT_NICE] = "nice",
                                      [RLIMIT_RTPRIO] = "real-time priority",
                                      [RLIMIT_RTTIME] = "real-time CPU time"};
  return i < (int)(sizeof(names) / sizeof(names[0])) && names[i] ? names[i] : "unknown";
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_limit *got;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_RLIMITS, (const void **)&got, &len) != 0)
    return 0; /* an image from before the limits were saved */
  if (len != sizeof(saved))
    return mana_fail(err, errlen, 0, "the image's resource limits record is malformed");
  for (int i = 0; i < RLIMIT_NLIMITS; i++) {
    struct rlimit now;
    if (getrlimit(i, &now) != 0)
      return mana_fail(err, errlen, errno, "cannot read resource limit %d", i);
    rlim_t want = (rlim_t)got[i].soft;
    if (want == now.rlim_cur || (want < now.rlim_cur && i != RLIMIT_CORE))
      continue;
    if (want > now.rlim_max) {
      fprintf(stderr,
              "mana_lh: the application's soft limit of %s (%llu) is above the restart's "
              "hard limit (%llu); it gets the hard limit\n",
              limit_name(i), (unsigned long long)want, (unsigned long long)now.rlim_max);
      want = now.rlim_max;
    }
    now.rlim_cur = want;
    if (setrlimit(i, &now) != 0)
      return mana_fail(err, errlen, errno, "cannot set the application's limit of %s to %llu",
                       limit_name(i), (unsigned long long)want);
  }
  return 0;
}

const struct mana_state_ops mana_state_rlimits = {"resource limits", dump, restore, capture, NULL};
