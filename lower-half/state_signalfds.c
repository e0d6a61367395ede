/* Signalfds the application made (signals taken as reads from a descriptor, in an event loop):
 * each is its signal mask, which fdinfo shows ("sigmask:"), and its flags.  A signalfd holds
 * nothing else: the signals it reads are the ones pending on the process and the reading
 * thread, which state_pending.c gives back.  A restart makes a signalfd with that mask at each
 * descriptor that held one (a duplicate, by kcmp, as a duplicate).  The mask never holds
 * mana's own signals (sigsys.c takes them out when the application makes one).  Before, a
 * checkpoint was refused while the application held a signalfd. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

struct saved_signalfd {
  int32_t fd, flags; /* O_NONBLOCK, O_CLOEXEC */
  int32_t dup_of;    /* -1, or the descriptor of an earlier one it duplicates */
  uint32_t pad;
  uint64_t mask; /* the kernel's 64-bit signal mask */
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct saved_signalfd *saved;
static size_t n_saved, saved_cap;

static int capture_one(int fd, int dup_of, char *err, size_t errlen)
{
  if (mana_room_for((void **)&saved, &saved_cap, n_saved, sizeof(*saved)) != 0)
    return mana_fail(err, errlen, ENOMEM, "the application's signalfds");
  struct saved_signalfd *s = &saved[n_saved];
  unsigned long long mask;
  int64_t pos;
  *s = (struct saved_signalfd){.fd = fd, .dup_of = dup_of};
  errno = 0;
  if (mana_fd_info(fd, &s->flags, &pos) != 0 ||
      mana_fd_info_field(fd, "sigmask", "%llx", &mask) != 0)
    return mana_fail(err, errlen, errno ? errno : EIO,
                     "cannot read the application's signalfd at descriptor %d", fd);
  s->mask = mask;
  n_saved++;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_saved = 0;
  return mana_app_anon_fds(MANA_ANON_SIGNALFD, capture_one, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (n_saved && mana_image_add_blob(w, MANA_BLOB_SIGNALFDS, saved, n_saved * sizeof(*saved)) != 0)
    return mana_fail(err, errlen, 0, "the application's signalfds: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_signalfd *got;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_SIGNALFDS, (const void **)&got, &len) != 0)
    return 0; /* none */
  if (len % sizeof(*got) != 0)
    return mana_fail(err, errlen, 0, "the image's signalfd record is malformed");
  for (size_t i = 0; i < len / sizeof(*got); i++) {
    const struct saved_signalfd *s = &got[i];
    char what[64];
    snprintf(what, sizeof(what), "the application's signalfd at descriptor %d", s->fd);
    int fd;
    if (s->dup_of >= 0) {
      fd = fcntl(s->dup_of, F_DUPFD_CLOEXEC, 0);
    } else {
      /* The raw call: the kernel's mask is the 8 bytes saved, not glibc's sigset_t. */
      uint64_t mask = s->mask;
      fd = (int)syscall(SYS_signalfd4, -1, &mask, sizeof(mask),
                        SFD_CLOEXEC | ((s->flags & O_NONBLOCK) ? SFD_NONBLOCK : 0));
    }
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot make %s again", what);
    if (mana_fd_place(fd, s->fd, s->flags, -1, what, err, errlen) != 0)
      return -1;
    if (s->dup_of >= 0)
      mana_app_anon_fd_dup(s->dup_of, s->fd);
    else
      mana_app_fd_note(s->fd); /* the application's again */
  }
  return 0;
}

const struct mana_state_ops mana_state_signalfds = {"signalfds", dump, restore, capture, NULL};
