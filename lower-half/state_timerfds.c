/* Timerfds the application made (an event loop's timeouts, a periodic tick read from a
 * descriptor): each is its clock, flags, the time to its next expiry, its interval and the
 * expirations not yet read.  timerfd_gettime first, as the application's own would: it
 * accounts an interval timer's expirations since the last read and moves the timer on; then
 * fdinfo gives the clock, the count ("ticks") and the settime flags.  A restart makes a timerfd
 * on that clock at each descriptor that held one (a duplicate, by kcmp, as a duplicate), and
 * arms it as the threads resume, with the POSIX timers (mana_state_timerfds_arm): for the
 * time it had left, on the application's clocks, which a restart offsets to go on from the
 * checkpoint; but one armed for an absolute wall-clock time (TFD_TIMER_ABSTIME on
 * CLOCK_REALTIME, with TFD_TIMER_CANCEL_ON_SET if it had it) for that same time.  The count
 * goes back with TFD_IOC_SET_TICKS (Linux 3.17, CONFIG_CHECKPOINT_RESTORE); a kernel without
 * it fails the restart of a timerfd that had expirations waiting.  An expiry between the
 * arming and the count is lost.  Before, a checkpoint was refused while the application held
 * a timerfd. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif
#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif

struct saved_timerfd {
  int32_t fd, flags;      /* O_NONBLOCK, O_CLOEXEC */
  int32_t dup_of;         /* -1, or the descriptor of an earlier one it duplicates */
  int32_t clock;          /* CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, their _ALARM */
  uint32_t settime_flags; /* TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET */
  uint32_t pad;
  int64_t left_ns;          /* to the next expiry; 0: disarmed */
  int64_t interval_ns;      /* 0: one expiry */
  int64_t wall_deadline_ns; /* an absolute wall-clock timer's expiry, else 0 */
  uint64_t ticks;           /* expirations not yet read */
};

/* Read by capture, which the writer runs before any dump (checkpoint.c); at a restart, the
 * image's records, kept for mana_state_timerfds_arm. */
static struct saved_timerfd *saved;
static size_t n_saved, saved_cap;

static int64_t ns_of(struct timespec t)
{
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
  return (struct timespec){(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
}

static int on_wall_clock(int32_t clock)
{
  return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_ALARM;
}

static int read_timerfd(int fd, struct saved_timerfd *s)
{
  struct itimerspec now;
  unsigned long long ticks;
  unsigned settime_flags;
  int clock;
  int64_t pos;
  if (mana_fd_info(fd, &s->flags, &pos) != 0 || timerfd_gettime(fd, &now) != 0 ||
      mana_fd_info_field(fd, "clockid", "%d", &clock) != 0 ||
      mana_fd_info_field(fd, "ticks", "%llu", &ticks) != 0 ||
      mana_fd_info_field(fd, "settime flags", "%o", &settime_flags) != 0) {
    errno = errno ? errno : EIO;
    return -1;
  }
  s->clock = clock;
  s->ticks = ticks;
  s->settime_flags = settime_flags;
  s->left_ns = ns_of(now.it_value);
  s->interval_ns = ns_of(now.it_interval);
  struct timespec wall;
  if (s->left_ns && (settime_flags & TFD_TIMER_ABSTIME) && on_wall_clock(clock) &&
      clock_gettime(CLOCK_REALTIME, &wall) == 0)
    s->wall_deadline_ns = ns_of(wall) + s->left_ns;
  return 0;
}

static int capture_one(int fd, int dup_of, char *err, size_t errlen)
{
  if (mana_room_for((void **)&saved, &saved_cap, n_saved, sizeof(*saved)) != 0)
    return mana_fail(err, errlen, ENOMEM, "the application's timerfds");
  struct saved_timerfd *s = &saved[n_saved];
  *s = (struct saved_timerfd){.fd = fd, .dup_of = dup_of};
  errno = 0;
  if (dup_of < 0 && read_timerfd(fd, s) != 0)
    return mana_fail(err, errlen, errno, "cannot read the application's timerfd at descriptor %d",
                     fd);
  int64_t pos;
  if (dup_of >= 0 && mana_fd_info(fd, &s->flags, &pos) != 0)
    return mana_fail(err, errlen, errno, "cannot read the application's timerfd at descriptor %d",
                     fd);
  n_saved++;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_saved = 0;
  return mana_app_anon_fds(MANA_ANON_TIMERFD, capture_one, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (n_saved && mana_image_add_blob(w, MANA_BLOB_TIMERFDS, saved, n_saved * sizeof(*saved)) != 0)
    return mana_fail(err, errlen, 0, "the application's timerfds: %s", mana_image_writer_error(w));
  return 0;
}

static int set_ticks(const struct saved_timerfd *s)
{
  uint64_t ticks = s->ticks;
  return ioctl(s->fd, TFD_IOC_SET_TICKS, &ticks);
}

/* One timerfd made again, disarmed, at its descriptor; its count tried on it, so that a kernel
 * that cannot give it back fails the restart here, not once the application runs. */
static int make(const struct saved_timerfd *s, char *err, size_t errlen)
{
  char what[64];
  snprintf(what, sizeof(what), "the application's timerfd at descriptor %d", s->fd);
  int fd = timerfd_create(s->clock, TFD_CLOEXEC | ((s->flags & O_NONBLOCK) ? TFD_NONBLOCK : 0));
  if (fd < 0)
    return mana_fail(err, errlen, errno, "cannot make %s again on clock %d", what, s->clock);
  if (mana_fd_place(fd, s->fd, s->flags, -1, what, err, errlen) != 0)
    return -1;
  mana_app_fd_note(s->fd); /* the application's again */
  if (s->ticks && set_ticks(s) != 0)
    return mana_fail(err, errlen, errno,
                     "cannot give %s its %llu expirations not yet read (TFD_IOC_SET_TICKS)", what,
                     (unsigned long long)s->ticks);
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_timerfd *got;
  size_t len;
  n_saved = 0;
  if (mana_image_blob(r, MANA_BLOB_TIMERFDS, (const void **)&got, &len) != 0)
    return 0; /* none */
  if (len % sizeof(*got) != 0)
    return mana_fail(err, errlen, 0, "the image's timerfd record is malformed");
  free(saved);
  saved = malloc(len);
  if (!saved)
    return mana_fail(err, errlen, ENOMEM, "the image's timerfds");
  memcpy(saved, got, len);
  saved_cap = len / sizeof(*got);
  for (size_t i = 0; i < saved_cap; i++, n_saved++) {
    const struct saved_timerfd *s = &saved[i];
    if (s->dup_of < 0) {
      if (make(s, err, errlen) != 0)
        return -1;
      continue;
    }
    char what[64];
    snprintf(what, sizeof(what), "the application's timerfd at descriptor %d", s->fd);
    int fd = fcntl(s->dup_of, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot make %s again", what);
    if (mana_fd_place(fd, s->fd, s->flags, -1, what, err, errlen) != 0)
      return -1;
    mana_app_anon_fd_dup(s->dup_of, s->fd);
  }
  return 0;
}

void mana_state_timerfds_arm(void)
{
  for (size_t i = 0; i < n_saved; i++) {
    const struct saved_timerfd *s = &saved[i];
    if (s->dup_of >= 0 || !s->left_ns)
      continue; /* armed through the first, or disarmed */
    struct itimerspec its = {ts_of(s->interval_ns), ts_of(s->left_ns)};
    int flags = 0;
    if (s->wall_deadline_ns) {
      its.it_value = ts_of(s->wall_deadline_ns);
      flags = TFD_TIMER_ABSTIME | (int)(s->settime_flags & TFD_TIMER_CANCEL_ON_SET);
    }
    /* The descriptor and the values were good at restore; settime resets the count. */
    if (timerfd_settime(s->fd, flags, &its, NULL) == 0 && s->ticks)
      set_ticks(s);
  }
}

const struct mana_state_ops mana_state_timerfds = {"timerfds", dump, restore, capture, NULL};
