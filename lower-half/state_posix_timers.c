/* The application's POSIX timers (timer_create).  A restarted process has none: a periodic one
 * (a watchdog, a sampling profiler, a progress report) never signalled again, and
 * timer_gettime or timer_settime on its id failed with EINVAL.  The seccomp filter traps
 * timer_create from upper-half code and notes each id (app_fd_origin.c); the timers of the
 * lower half's libraries are left alone.  Each one the application still has comes back with
 * its id (the application holds it), clock, signal and value, interval and the time it had
 * left.  One that signals a single thread (SIGEV_THREAD_ID, and glibc's SIGEV_THREAD, which
 * is one) or counts one thread's CPU time refuses the checkpoint: thread ids change across a
 * restart. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

#ifndef PR_TIMER_CREATE_RESTORE_IDS /* Linux 6.15 */
#define PR_TIMER_CREATE_RESTORE_IDS 77
#define PR_TIMER_CREATE_RESTORE_IDS_OFF 0
#define PR_TIMER_CREATE_RESTORE_IDS_ON 1
#endif

#define MAX_TIMERS 512
/* Without PR_TIMER_CREATE_RESTORE_IDS, ids are reached by making timers in turn. */
#define MAX_STEPS_TO_AN_ID 65536

struct saved_timer {
  int32_t id, clock, notify, signo;
  uint64_t value; /* sigev_value */
  int64_t interval_ns, left_ns;
};

static struct saved_timer saved[MAX_TIMERS];
static uint32_t nsaved;

static int64_t ns_of(struct timespec t)
{
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
  return (struct timespec){(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
}

/* One entry of /proc/self/timers, read into t; 1 when the application made it. */
static int take_entry(struct saved_timer *t, const char *notify, const char *target, char *err,
                      size_t errlen)
{
  if (!mana_app_timer_made(t->id))
    return 0;
  if (strcmp(target, "tid") == 0)
    return mana_fail(err, errlen, 0,
                     "the application's POSIX timer %d signals one thread (SIGEV_THREAD_ID or "
                     "SIGEV_THREAD): a restart could not give it back",
                     t->id);
  if (t->clock == CLOCK_THREAD_CPUTIME_ID || t->clock < 0)
    return mana_fail(err, errlen, 0,
                     "the application's POSIX timer %d counts the CPU time of one thread or "
                     "process (clock %d): a restart could not give it back",
                     t->id, t->clock);
  if (strcmp(notify, "none") == 0)
    t->notify = SIGEV_NONE;
  else if (strcmp(notify, "signal") == 0)
    t->notify = SIGEV_SIGNAL;
  else
    return mana_fail(err, errlen, 0, "the application's POSIX timer %d notifies by '%s'", t->id,
                     notify);
  struct itimerspec its;
  if (syscall(SYS_timer_gettime, t->id, &its) != 0)
    return mana_fail(err, errlen, errno, "cannot read the application's POSIX timer %d", t->id);
  t->interval_ns = ns_of(its.it_interval);
  t->left_ns = ns_of(its.it_value);
  return 1;
}

static int capture(char *err, size_t errlen)
{
  nsaved = 0;
  if (!mana_app_timers_noted())
    return 0;
  FILE *f = fopen("/proc/self/timers", "r");
  if (!f)
    return mana_fail(err, errlen, errno,
                     "the application made POSIX timers and /proc/self/timers cannot be read");
  char line[256], notify[16] = "", target[8] = "";
  struct saved_timer t = {0};
  int have = 0, rc = 0;
  void *value;
  /* Entries are "ID:", "signal:", "notify:" and "ClockID:" lines, in that order. */
  while (rc == 0 && fgets(line, sizeof(line), f)) {
    if (sscanf(line, "ID: %d", &t.id) == 1) {
      have = 1;
    } else if (have && sscanf(line, "signal: %d/%p", &t.signo, &value) == 2) {
      t.value = (uint64_t)(uintptr_t)value;
    } else if (have && sscanf(line, "notify: %15[a-z]/%7[a-z].", notify, target) == 2) {
      continue;
    } else if (have && sscanf(line, "ClockID: %d", &t.clock) == 1) {
      have = 0;
      int mine = take_entry(&t, notify, target, err, errlen);
      if (mine < 0)
        rc = -1;
      else if (mine && nsaved == MAX_TIMERS)
        rc = mana_fail(err, errlen, 0, "the application has more than %d POSIX timers", MAX_TIMERS);
      else if (mine)
        saved[nsaved++] = t;
    }
  }
  fclose(f);
  return rc;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (nsaved &&
      mana_image_add_blob(w, MANA_BLOB_POSIX_TIMERS, saved, nsaved * sizeof(saved[0])) != 0)
    return mana_fail(err, errlen, 0, "POSIX timers: %s", mana_image_writer_error(w));
  return 0;
}

static long make(const struct saved_timer *t, int *id)
{
  struct sigevent sev;
  memset(&sev, 0, sizeof(sev));
  sev.sigev_notify = t->notify;
  sev.sigev_signo = t->signo;
  sev.sigev_value.sival_ptr = (void *)(uintptr_t)t->value;
  return syscall(SYS_timer_create, t->clock, &sev, id);
}

/* Without the prctl (before Linux 6.15) the kernel hands out the next free id: timers are
 * made until the one wanted comes, and the others deleted. */
static int make_in_turn(const struct saved_timer *t, char *err, size_t errlen)
{
  int ids[64], n = 0, got = -1;
  for (int step = 0; step < MAX_STEPS_TO_AN_ID && got != t->id; step++) {
    if (make(t, &got) != 0)
      return mana_fail(err, errlen, errno, "cannot make POSIX timer %d again", t->id);
    if (got == t->id)
      break;
    if (n == (int)(sizeof(ids) / sizeof(ids[0])))
      while (n > 0)
        syscall(SYS_timer_delete, ids[--n]);
    ids[n++] = got;
  }
  while (n > 0)
    syscall(SYS_timer_delete, ids[--n]);
  if (got != t->id)
    return mana_fail(err, errlen, 0, "cannot make POSIX timer %d again: the kernel gives other ids",
                     t->id);
  return 0;
}

static int by_id(const void *a, const void *b)
{
  const struct saved_timer *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* Made here, before the restarted MPI makes timers of its own, and armed at the very end
 * (mana_state_posix_timers_arm).  In the order of their ids: made in turn, an id below one
 * made already would not come again. */
static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_timer *in;
  size_t len;
  nsaved = 0;
  if (mana_image_blob(r, MANA_BLOB_POSIX_TIMERS, (const void **)&in, &len) != 0)
    return 0; /* none, or an image from before POSIX timers were saved */
  if (len % sizeof(saved[0]) || len / sizeof(saved[0]) > MAX_TIMERS)
    return mana_fail(err, errlen, 0, "the image's POSIX timer records are malformed");
  nsaved = (uint32_t)(len / sizeof(saved[0]));
  memcpy(saved, in, len);
  qsort(saved, nsaved, sizeof(saved[0]), by_id);
  /* MANA_TEST_TIMERS_IN_TURN: the way of kernels before 6.15, tested on newer ones. */
  int ids_asked = !getenv("MANA_TEST_TIMERS_IN_TURN") &&
                  prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_ON, 0, 0, 0) == 0;
  int rc = 0;
  for (uint32_t i = 0; i < nsaved && rc == 0; i++) {
    int id = saved[i].id;
    if (ids_asked && make(&saved[i], &id) != 0)
      rc = mana_fail(err, errlen, errno, "cannot make POSIX timer %d again", saved[i].id);
    else if (!ids_asked)
      rc = make_in_turn(&saved[i], err, errlen);
    if (rc == 0)
      mana_app_timer_note(saved[i].id);
  }
  if (ids_asked)
    prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_OFF, 0, 0, 0);
  return rc;
}

/* The signal a restored timer sends, as the timer sends it (si_code SI_TIMER, its id and value):
 * a tick pending at the checkpoint is sent again this way (park.c), or a handler that tells
 * its timers apart by value would not know it.  With two timers on one signal, the first.
 * Runs on the upper half's thread pointer: no libc. */
int mana_posix_timer_siginfo(int sig, siginfo_t *info)
{
  for (uint32_t i = 0; i < nsaved; i++)
    if (saved[i].notify == SIGEV_SIGNAL && saved[i].signo == sig) {
      unsigned char *bytes = (unsigned char *)info;
      for (size_t k = 0; k < sizeof(*info); k++)
        bytes[k] = 0;
      info->si_signo = sig;
      info->si_code = SI_TIMER;
      info->si_timerid = saved[i].id;
      info->si_value.sival_ptr = (void *)(uintptr_t)saved[i].value;
      return 1;
    }
  return 0;
}

void mana_state_posix_timers_arm(void)
{
  for (uint32_t i = 0; i < nsaved; i++) {
    if (!saved[i].left_ns)
      continue; /* disarmed */
    struct itimerspec its = {ts_of(saved[i].interval_ns), ts_of(saved[i].left_ns)};
    syscall(SYS_timer_settime, saved[i].id, 0, &its, NULL);
  }
}

const struct mana_state_ops mana_state_posix_timers = {"POSIX timers", dump, restore, capture,
                                                       NULL};
