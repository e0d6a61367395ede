/* Memory the application asked a child not to have (madvise MADV_DONTFORK) or to see zeroed
 * (MADV_WIPEONFORK): libraries ask it of registered buffers, random generators' state and
 * secrets.  A forked writer is such a child: the range was missing from its image, or held
 * zeros, and a restart from that generation crashed on the range or read zeros.  So while
 * the application is parked, the rank lifts the advice just before it forks the writer and
 * gives it again right after; and each checkpoint records the advised ranges, which a
 * restart advises again (the restarted application's own children must not get them
 * either).  The advice shows only in /proc/self/smaps, which costs the kernel a walk of every
 * page table: it is read only once upper-half code has asked for either advice (the seccomp
 * filter traps those two calls, sigsys.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "sigsys.h"
#include "state.h"
#include "upper_mappings.h"

struct advised_range {
  uint64_t start, end;
  uint32_t advice; /* MANA_ADVISED_DONTFORK | MANA_ADVISED_WIPEONFORK */
  uint32_t reserved;
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct advised_range *ranges;
static size_t n_ranges, ranges_cap;

static int note_advised(const struct mana_mapping *m, void *why)
{
  if (!m->fork_advice)
    return 0;
  if (n_ranges == ranges_cap) {
    size_t cap = ranges_cap ? 2 * ranges_cap : 8;
    struct advised_range *more = realloc(ranges, cap * sizeof(*more));
    if (!more)
      return mana_fail(why, 256, ENOMEM, "memory advised not to be forked");
    ranges = more;
    ranges_cap = cap;
  }
  ranges[n_ranges++] = (struct advised_range){m->start, m->end, m->fork_advice, 0};
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_ranges = 0;
  if (!__atomic_load_n(&mana_fork_advice_asked, __ATOMIC_ACQUIRE))
    return 0;
  char why[256] = "";
  int rc = mana_upper_mappings_each_advised(note_advised, why, err, errlen);
  if (rc != 0 && why[0])
    return mana_fail(err, errlen, 0, "%s", why);
  return rc;
}

/* Gives (1) or lifts (0) the captured advice; the first failure's errno, else 0. */
static int advise(int give)
{
  int e = 0;
  for (size_t i = 0; i < n_ranges; i++) {
    const struct advised_range *r = &ranges[i];
    void *at = (void *)(uintptr_t)r->start;
    size_t len = r->end - r->start;
    if ((r->advice & MANA_ADVISED_DONTFORK) &&
        madvise(at, len, give ? MADV_DONTFORK : MADV_DOFORK) != 0 && !e)
      e = errno;
    if ((r->advice & MANA_ADVISED_WIPEONFORK) &&
        madvise(at, len, give ? MADV_WIPEONFORK : MADV_KEEPONFORK) != 0 && !e)
      e = errno;
  }
  return e;
}

int mana_fork_advice_lift(char *err, size_t errlen)
{
  int e = advise(0);
  if (e) {
    advise(1);
    return mana_fail(err, errlen, e, "cannot lift the application's fork advice for the writer");
  }
  return 0;
}

void mana_fork_advice_give_back(void)
{
  advise(1); /* what was given once can be given again */
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (n_ranges &&
      mana_image_add_blob(w, MANA_BLOB_FORK_ADVICE, ranges, n_ranges * sizeof(*ranges)) != 0)
    return mana_fail(err, errlen, 0, "memory advised not to be forked: %s",
                     mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_FORK_ADVICE, &at, &data, &len);) {
    if (len % sizeof(struct advised_range) != 0)
      return mana_fail(err, errlen, 0, "the record of advised memory in the image is malformed");
    const struct advised_range *got = data;
    for (size_t i = 0; i < len / sizeof(*got); i++) {
      void *start = (void *)(uintptr_t)got[i].start;
      size_t bytes = got[i].end - got[i].start;
      if (((got[i].advice & MANA_ADVISED_DONTFORK) && madvise(start, bytes, MADV_DONTFORK) != 0) ||
          ((got[i].advice & MANA_ADVISED_WIPEONFORK) &&
           madvise(start, bytes, MADV_WIPEONFORK) != 0))
        return mana_fail(err, errlen, errno, "cannot advise %#llx-%#llx not to be forked again",
                         (unsigned long long)got[i].start, (unsigned long long)got[i].end);
    }
    __atomic_store_n(&mana_fork_advice_asked, 1, __ATOMIC_RELEASE);
  }
  return 0;
}

const struct mana_state_ops mana_state_fork_advice = {"memory advised not to be forked", dump,
                                                      restore, capture, NULL};
