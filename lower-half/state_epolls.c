/* Epoll instances the application made (an event loop over its pipes and eventfds): each is its
 * descriptor, flags and interest list, which /proc/self/fdinfo shows one watch per line
 * ("tfd: N events: E data: D ... ino: I sdev: S").  A restart makes an epoll instance at each
 * descriptor that held one (a duplicate, by kcmp, as a duplicate), then adds every watch again
 * with its events (EPOLLET, EPOLLONESHOT and the others among them: a one-shot watch that fired
 * keeps only those bits, disabled as it was) and its data, once the kinds that give back the
 * watched descriptors have run (state_pipes.c, state_eventfds.c; the launcher's standard
 * streams).  What was ready but not yet taken is not saved: the kernel finds a level-triggered
 * watch ready again, and an edge-triggered one whose descriptor is ready is reported once more.
 * A watch whose descriptor number no longer holds the file it was added with (closed after a
 * dup) could not be added under the same key: the checkpoint is refused
 * (mana_epoll_unrestorable).  Before, any epoll instance of the application refused it. */
#define _GNU_SOURCE
#include "state_epolls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

/* One record per watch, and one with tfd -1 for an instance that watches nothing. */
struct saved_watch {
  int32_t epfd, flags; /* the instance's descriptor and its O_CLOEXEC */
  int32_t dup_of;      /* -1, or the descriptor of an earlier instance it duplicates */
  int32_t tfd;         /* the watched descriptor, or -1 */
  uint32_t events, pad;
  uint64_t data;
};

/* Read by capture, which the writer runs before any dump (checkpoint.c). */
static struct saved_watch *saved;
static size_t n_saved, saved_cap;

static int add(const struct saved_watch *w)
{
  if (n_saved == saved_cap) {
    size_t cap = saved_cap ? 2 * saved_cap : 16;
    struct saved_watch *more = realloc(saved, cap * sizeof(*more));
    if (!more)
      return -1;
    saved = more;
    saved_cap = cap;
  }
  saved[n_saved++] = *w;
  return 0;
}

/* Calls fn(tfd, events, data, ino, kernel dev, arg) for each watch of epoll `fd`; the first
 * non-zero it returns, or -1 with errno when fdinfo cannot be read. */
static int each_watch(int fd, int (*fn)(int, uint32_t, uint64_t, uint64_t, uint32_t, void *),
                      void *arg)
{
  char name[64], line[256];
  snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(name, "re");
  if (!f)
    return -1;
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof(line), f)) {
    int tfd;
    unsigned events;
    unsigned long long data, pos, ino;
    unsigned sdev;
    if (sscanf(line, "tfd: %d events: %x data: %llx pos:%llx ino:%llx sdev:%x", &tfd, &events,
               &data, &pos, &ino, &sdev) == 6)
      rc = fn(tfd, events, data, ino, sdev, arg);
  }
  fclose(f);
  return rc;
}

/* 1 when descriptor `tfd` holds the file a watch was added with (inode, and the kernel's
 * device number as fdinfo prints it: 12 bits of major above 20 of minor). */
static int same_file(int tfd, uint64_t ino, uint32_t sdev)
{
  struct stat st;
  return fstat(tfd, &st) == 0 && (uint64_t)st.st_ino == ino &&
         st.st_dev == makedev(sdev >> 20, sdev & 0xfffff);
}

/* `arg`: the instance's record, which each of its watches copies. */
static int capture_watch(int tfd, uint32_t events, uint64_t data, uint64_t ino, uint32_t sdev,
                         void *arg)
{
  (void)ino;
  (void)sdev;
  struct saved_watch w = *(const struct saved_watch *)arg;
  w.tfd = tfd;
  w.events = events;
  w.data = data;
  return add(&w);
}

static int capture_one(int fd, int dup_of, char *err, size_t errlen)
{
  struct saved_watch c = {fd, 0, dup_of, -1, 0, 0, 0};
  int64_t pos;
  if (mana_fd_info(fd, &c.flags, &pos) != 0)
    return mana_fail(err, errlen, errno, "cannot read the application's epoll descriptor %d", fd);
  size_t before = n_saved;
  errno = 0;
  if (dup_of < 0 && each_watch(fd, capture_watch, &c) != 0)
    return mana_fail(err, errlen, errno ? errno : ENOMEM,
                     "cannot read the watches of the application's epoll descriptor %d", fd);
  if (n_saved == before && add(&c) != 0) /* no watch, or a duplicate */
    return mana_fail(err, errlen, ENOMEM, "the application's epoll descriptors");
  return 0;
}

static int capture(char *err, size_t errlen)
{
  n_saved = 0;
  return mana_app_anon_fds(MANA_ANON_EPOLL, capture_one, err, errlen);
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (n_saved && mana_image_add_blob(w, MANA_BLOB_EPOLLS, saved, n_saved * sizeof(*saved)) != 0)
    return mana_fail(err, errlen, 0, "the application's epoll descriptors: %s",
                     mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_watch *got;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_EPOLLS, (const void **)&got, &len) != 0)
    return 0; /* none */
  if (len % sizeof(*got) != 0)
    return mana_fail(err, errlen, 0, "the image's epoll record is malformed");
  size_t n = len / sizeof(*got);
  /* The instances first, in the order they were read (a duplicate after its original), so
   * that a watch of one instance by another finds it. */
  for (size_t i = 0; i < n; i++) {
    const struct saved_watch *s = &got[i];
    if (i > 0 && got[i - 1].epfd == s->epfd)
      continue; /* another watch of the same instance */
    char what[64];
    snprintf(what, sizeof(what), "the application's epoll descriptor %d", s->epfd);
    int fd = s->dup_of >= 0 ? fcntl(s->dup_of, F_DUPFD_CLOEXEC, 0) : epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0)
      return mana_fail(err, errlen, errno, "cannot make %s again", what);
    if (mana_fd_place(fd, s->epfd, s->flags, -1, what, err, errlen) != 0)
      return -1;
    if (s->dup_of >= 0)
      mana_app_anon_fd_dup(s->dup_of, s->epfd);
    else
      mana_app_fd_note(s->epfd); /* the application's again */
  }
  for (size_t i = 0; i < n; i++) {
    const struct saved_watch *s = &got[i];
    if (s->tfd < 0)
      continue;
    struct epoll_event ev = {.events = s->events, .data.u64 = s->data};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->tfd, &ev) != 0)
      return mana_fail(err, errlen, errno,
                       "cannot watch descriptor %d again from the application's epoll "
                       "descriptor %d (events %#x)",
                       s->tfd, s->epfd, s->events);
  }
  return 0;
}

struct checking {
  int epfd;
  char *why;
  size_t len;
};

static int check_watch(int tfd, uint32_t events, uint64_t data, uint64_t ino, uint32_t sdev,
                       void *arg)
{
  (void)events;
  (void)data;
  struct checking *c = arg;
  if (same_file(tfd, ino, sdev))
    return 0;
  snprintf(c->why, c->len,
           "the application's epoll descriptor %d watches a file that descriptor %d no longer "
           "holds (closed after a dup), which a restart could not watch again",
           c->epfd, tfd);
  return 1;
}

int mana_epoll_unrestorable(int fd, char *why, size_t len)
{
  struct checking c = {fd, why, len};
  int rc = each_watch(fd, check_watch, &c);
  if (rc < 0)
    snprintf(why, len, "cannot read the watches of the application's epoll descriptor %d", fd);
  return rc != 0;
}

const struct mana_state_ops mana_state_epolls = {"epoll instances", dump, restore, capture, NULL};
