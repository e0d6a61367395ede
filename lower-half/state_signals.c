/* Signal dispositions are kernel state shared by both halves.  The ones the upper half chose
 * (a handler in upper-half code, or "ignore") are saved, with the one it chose for the
 * checkpoint signal, kept aside; the lower half's own (mana's SIGSYS, park and checkpoint
 * signal handlers, MPICH's) are set up afresh by a restarted lower half, which installs the
 * checkpoint signal's handler after this restore and so keeps the application's aside again. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image.h"
#include "mana/boundary.h"
#include "mana/image_blobs.h"
#include "park.h"
#include "sigsys.h"
#include "state.h"
#include "mana/fail.h"

struct saved_signal {
  uint32_t signo, pad;
  struct mana_sigaction act;
};

static int upper_owned(uint64_t handler)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  if (handler == (uint64_t)(uintptr_t)SIG_IGN)
    return 1;
  if (handler >= MANA_WINDOW_BASE && handler < MANA_WINDOW_END)
    return 1;
  for (uint32_t i = 0; i < b->n_extra_ranges; i++)
    if (handler >= b->extra_ranges[i].start && handler < b->extra_ranges[i].end)
      return 1;
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  struct saved_signal saved[64];
  uint32_t n = 0;
  for (int sig = 1; sig <= 64; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSYS || sig == MANA_PARK_SIGNAL)
      continue;
    struct mana_sigaction act;
    if (!mana_sigsys_kept_aside(sig, &act) && syscall(SYS_rt_sigaction, sig, NULL, &act, 8) != 0)
      continue;
    if (upper_owned(act.handler))
      saved[n++] = (struct saved_signal){(uint32_t)sig, 0, act};
  }
  if (mana_image_add_blob(w, MANA_BLOB_SIGNALS, saved, n * sizeof(saved[0])) != 0) {
    return mana_fail(err, errlen, 0, "signal dispositions: %s", mana_image_writer_error(w));
  }
  return 0;
}

/* What the restore installed, for mana_state_signals_reapply. */
static struct saved_signal restored[64];
static size_t n_restored;

static int install(const struct saved_signal *s, char *err, size_t errlen)
{
  if (syscall(SYS_rt_sigaction, s->signo, &s->act, NULL, 8) != 0)
    return mana_fail(err, errlen, errno, "cannot restore the disposition of signal %u", s->signo);
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_signal *saved;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_SIGNALS, (const void **)&saved, &len) != 0 ||
      len % sizeof(*saved) != 0 || len > sizeof(restored)) {
    return mana_fail(err, errlen, 0, "signal dispositions missing or malformed in the image");
  }
  memcpy(restored, saved, len);
  n_restored = len / sizeof(*saved);
  for (size_t i = 0; i < n_restored; i++)
    if (install(&restored[i], err, errlen) != 0)
      return -1;
  return 0;
}

int mana_state_signals_reapply(char *err, size_t errlen)
{
  for (size_t i = 0; i < n_restored; i++) {
    if (mana_sigsys_kept_aside((int)restored[i].signo, NULL))
      mana_sigsys_keep_aside((int)restored[i].signo, &restored[i].act);
    else if (install(&restored[i], err, errlen) != 0)
      return -1;
  }
  return 0;
}

const struct mana_state_ops mana_state_signals = {"signal dispositions", dump, restore, NULL, NULL};
