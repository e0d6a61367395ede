/* Eventfds the application made (a counter a thread is woken through, a completion count):
 * each is its 64-bit count and its flags, which /proc/self/fdinfo shows without reading the
 * count away.  A restart makes an eventfd with that count and those flags at each descriptor
 * that held it (a duplicate, by kcmp, as a duplicate).  Before, a checkpoint was refused while
 * the application held one.  Which eventfds are the application's: app_fd_origin.c (by
 * descriptor number and the kernel's id of the eventfd: they share one inode with UCX's). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

struct saved_eventfd {
  int32_t fd, flags; /* O_NONBLOCK, O_CLOEXEC */
  int32_t dup_of;    /* -1, or the index of an earlier one sharing its open file description */
  uint32_t semaphore;
  uint64_t count;
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct saved_eventfd *saved;
static size_t n_saved, saved_cap;

/* The count and semaphore flag of eventfd `fd` from its fdinfo; 0, or -1. */
static int read_eventfd(int fd, struct saved_eventfd *s)
{
  char name[64], line[256];
  snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(name, "re");
  if (!f)
    return -1;
  int have_count = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long long v;
    unsigned sem;
    if (sscanf(line, "eventfd-count: %llx", &v) == 1) {
      s->count = v;
      have_count = 1;
    } else if (sscanf(line, "eventfd-semaphore: %u", &sem) == 1) {
      s->semaphore = sem != 0;
    }
  }
  fclose(f);
  return have_count ? 0 : -1;
}

static int capture_one(int fd, int dup_of, char *err, size_t errlen)
{
  if (mana_room_for((void **)&saved, &saved_cap, n_saved, sizeof(*saved)) != 0)
    return mana_fail(err, errlen, ENOMEM, "the application's eventfds");
  struct saved_eventfd *s = &saved[n_saved];
  int64_t pos;
  *s = (struct saved_eventfd){fd, 0, -1, 0, 0};
  if (mana_fd_info(fd, &s->flags, &pos) != 0 || read_eventfd(fd, s) != 0)
    return mana_fail(err, errlen, errno, "cannot read the application's eventfd at descriptor %d",
                     fd);
  for (size_t i = 0; i < n_saved && dup_of >= 0 && s->dup_of < 0; i++)
    if (saved[i].fd == dup_of)
      s->dup_of = (int32_t)i;
  n_saved++;
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_saved = 0;
  return mana_app_anon_fds(MANA_ANON_EVENTFD, capture_one, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (n_saved && mana_image_add_blob(w, MANA_BLOB_EVENTFDS, saved, n_saved * sizeof(*saved)) != 0)
    return mana_fail(err, errlen, 0, "the application's eventfds: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_eventfd *got;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_EVENTFDS, (const void **)&got, &len) != 0)
    return 0; /* none */
  if (len % sizeof(*got) != 0)
    return mana_fail(err, errlen, 0, "the image's eventfd record is malformed");
  size_t n = len / sizeof(*got);
  for (size_t i = 0; i < n; i++) {
    const struct saved_eventfd *s = &got[i];
    char what[64];
    snprintf(what, sizeof(what), "the application's eventfd at descriptor %d", s->fd);
    int fd;
    if (s->dup_of >= 0 && (size_t)s->dup_of < i) {
      fd = fcntl(got[s->dup_of].fd, F_DUPFD_CLOEXEC, 0);
    } else {
      fd = eventfd(0, EFD_CLOEXEC | (s->semaphore ? EFD_SEMAPHORE : 0) |
                          ((s->flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
      if (fd >= 0 && s->count && write(fd, &s->count, sizeof(s->count)) != sizeof(s->count)) {
        int e = errno;
        close(fd);
        return mana_fail(err, errlen, e, "cannot give %s its count %llu again", what,
                         (unsigned long long)s->count);
      }
    }
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot make %s again", what);
    if (mana_fd_place(fd, s->fd, s->flags, -1, what, err, errlen) != 0)
      return -1;
    if (s->dup_of >= 0 && (size_t)s->dup_of < i)
      mana_app_anon_fd_dup(got[s->dup_of].fd, s->fd);
    else
      mana_app_fd_note(s->fd); /* the application's again, under the new eventfd's id */
  }
  return 0;
}

const struct mana_state_ops mana_state_eventfds = {"eventfds", dump, restore, capture, NULL};
