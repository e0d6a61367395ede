/* The process's interval timers (setitimer, alarm): a restarted process has none, and a
 * program that arms one as a watchdog or for profiling lost it.  Each comes back with the
 * time it had left at the checkpoint and its interval.  POSIX timers (timer_create):
 * state_posix_timers.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/time.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

static const int which[] = {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF};
#define NTIMERS (sizeof(which) / sizeof(which[0]))

struct saved_timer {
  int64_t interval_us, value_us;
};
static struct saved_timer saved[NTIMERS];

static int64_t us_of(struct timeval tv)
{
  return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static struct timeval tv_of(int64_t us)
{
  return (struct timeval){(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
}

static int capture(char *err, size_t errlen)
{
  for (size_t i = 0; i < NTIMERS; i++) {
    struct itimerval it;
    if (getitimer(which[i], &it) != 0)
      return mana_fail(err, errlen, errno, "cannot read interval timer %d", which[i]);
    saved[i] = (struct saved_timer){us_of(it.it_interval), us_of(it.it_value)};
  }
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_TIMERS, saved, sizeof(saved)) != 0)
    return mana_fail(err, errlen, 0, "interval timers: %s", mana_image_writer_error(w));
  return 0;
}

/* Read here, armed by mana_state_timers_arm once nothing but the application can take the
 * signals they send. */
static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_timer *t;
  size_t len;
  memset(saved, 0, sizeof(saved));
  if (mana_image_blob(r, MANA_BLOB_TIMERS, (const void **)&t, &len) != 0)
    return 0; /* an image from before timers were saved */
  if (len != sizeof(saved))
    return mana_fail(err, errlen, 0, "the image's interval timer record is malformed");
  memcpy(saved, t, sizeof(saved));
  return 0;
}

void mana_state_timers_arm(void)
{
  for (size_t i = 0; i < NTIMERS; i++) {
    if (!saved[i].value_us)
      continue; /* disarmed */
    struct itimerval it = {tv_of(saved[i].interval_us), tv_of(saved[i].value_us)};
    setitimer(which[i], &it, NULL); /* valid values: read from this kernel at the checkpoint */
  }
}

const struct mana_state_ops mana_state_timers = {"interval timers", dump, restore, capture, NULL};
