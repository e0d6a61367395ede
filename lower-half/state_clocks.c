/* The application's CLOCK_MONOTONIC and CLOCK_BOOTTIME (mana/app_clocks.h).  They count from
 * the node's boot: a restart on another node, or on this one after a reboot, would show the
 * application a clock that jumped by days or ran backwards (a code stopping itself before its
 * allocation ends by comparing omp_get_wtime() or Fortran's system_clock with its start
 * would stop at once, or never; elapsed times come out negative).  So the checkpoint records
 * the clocks as the application saw them and the wall clock, and a restart that finds the
 * clocks elsewhere than the wall clock's advance puts them where that advance says: they go
 * on as if the process had waited through the time between (as MPI_Wtime does,
 * wrappers/clock.c), through an offset the stand-in vDSO adds.  On the same boot the kernel's
 * clocks are right and the offset stays what it was (0 for a job that never moved): nothing
 * is trapped then. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "image.h"
#include "mana/app_clocks.h"
#include "mana/boundary.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

struct saved_clocks {
  int64_t realtime_ns;
  int64_t kernel_ns[MANA_CLOCK_N_OFFSETS]; /* the kernel's readings, without the offsets */
  int64_t offset_ns[MANA_CLOCK_N_OFFSETS];
};

static struct saved_clocks saved;

static const clockid_t clock_of[MANA_CLOCK_N_OFFSETS] = {
    [MANA_CLOCK_OFF_MONOTONIC] = CLOCK_MONOTONIC, [MANA_CLOCK_OFF_BOOTTIME] = CLOCK_BOOTTIME};

static int64_t read_ns(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts); /* the lower half's libc: the kernel's vDSO, no offset */
  return (int64_t)ts.tv_sec * MANA_NSEC_PER_SEC + ts.tv_nsec;
}

/* In the parked rank: a forked writer would read the clocks later. */
static int capture(char *err, size_t errlen)
{
  (void)err;
  (void)errlen;
  saved.realtime_ns = read_ns(CLOCK_REALTIME);
  for (int i = 0; i < MANA_CLOCK_N_OFFSETS; i++) {
    saved.kernel_ns[i] = read_ns(clock_of[i]);
    saved.offset_ns[i] = MANA_BOUNDARY->clock_offset_ns[i];
  }
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_CLOCKS, &saved, sizeof(saved)) != 0)
    return mana_fail(err, errlen, 0, "clocks: %s", mana_image_writer_error(w));
  return 0;
}

/* The offset that puts clock i where the wall clock's advance since the checkpoint says. */
static int64_t offset_now(const struct saved_clocks *got, int i, int64_t realtime_now)
{
  int64_t waited = realtime_now - got->realtime_ns;
  if (waited < 0)
    waited = 0; /* a wall clock behind the checkpoint's: the clock goes on from where it was */
  int64_t seen_then = got->kernel_ns[i] + got->offset_ns[i];
  int64_t kernel_now = read_ns(clock_of[i]);
  int64_t drift = kernel_now + got->offset_ns[i] - (seen_then + waited);
  /* the same boot: the clocks ran on with the wall clock, within what NTP slews it by */
  int64_t slack = MANA_NSEC_PER_SEC + waited / 1000;
  if (llabs(drift) <= slack)
    return got->offset_ns[i];
  return seen_then + waited - kernel_now;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_clocks *got;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_CLOCKS, (const void **)&got, &len) != 0)
    return 0; /* an image from before the clocks were saved */
  if (len != sizeof(saved))
    return mana_fail(err, errlen, 0, "the image's clocks record is malformed");
  int64_t realtime_now = read_ns(CLOCK_REALTIME);
  for (int i = 0; i < MANA_CLOCK_N_OFFSETS; i++)
    MANA_BOUNDARY->clock_offset_ns[i] = offset_now(got, i, realtime_now);
  return 0;
}

const struct mana_state_ops mana_state_clocks = {"clocks", dump, restore, capture, NULL};
