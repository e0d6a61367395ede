/* Pipes the application made and holds both ends of (a thread's wake-up pipe, a queue between
 * its threads): a restart makes a new pipe, puts each end at the descriptors that held it, with
 * their flags, and writes back the bytes that were waiting in it.  Which pipes are the
 * application's is known from where they were made (app_fd_origin.c); the launcher's pipes
 * (the rank's standard streams) and MPI's are not.  The bytes waiting are read when the
 * checkpoint captures, with every application thread parked, and written back at once, so the
 * running job finds its pipe as it was.
 *
 * Everything else the application made that is not a file (sockets, inotify instances, a pipe
 * whose other end is in another process; eventfds, timerfds and signalfds are the kinds of
 * state_eventfds.c, state_timerfds.c and state_signalfds.c, epoll instances state_epolls.c's,
 * which says when one cannot come back) cannot come back: a checkpoint is refused while one
 * is open (mana_app_fds_unrestorable).
 * Before, a restarted rank found such descriptors closed, or reused by MPI's own, and wrote
 * into them. */
#define _GNU_SOURCE
#include "state_pipes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_fd_origin.h"
#include "app_fds.h"
#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "state_epolls.h"

/* One descriptor of an application's pipe. */
struct pipe_end {
  int32_t fd, flags; /* O_RDONLY or O_WRONLY, O_NONBLOCK, O_CLOEXEC */
  uint64_t ino;
};

/* The descriptors of the application's objects that are not files, by inode. */
struct app_fd {
  int fd;
  int32_t flags;
  struct stat st;
};

static int is_pipe_end_for(const struct app_fd *a, int writing)
{
  return S_ISFIFO(a->st.st_mode) && ((a->flags & O_ACCMODE) == O_WRONLY) == writing;
}

/* The application's descriptors that are not regular files or directories; n in *count. */
static struct app_fd *list_app_fds(size_t *count)
{
  DIR *dir = opendir("/proc/self/fd");
  struct app_fd *list = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while (dir && (e = readdir(dir)) != NULL) {
    struct app_fd a = {atoi(e->d_name), 0, {0}};
    if (e->d_name[0] == '.' || a.fd == dirfd(dir) || fstat(a.fd, &a.st) != 0 ||
        S_ISREG(a.st.st_mode) || S_ISDIR(a.st.st_mode) ||
        !(mana_app_anon_identity(a.fd)
              ? mana_app_anon_fd_made(a.fd)
              : mana_app_fd_made((uint64_t)a.st.st_dev, (uint64_t)a.st.st_ino)))
      continue;
    int64_t pos;
    if (mana_fd_info(a.fd, &a.flags, &pos) != 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 8;
      struct app_fd *bigger = realloc(list, cap * sizeof(*list));
      if (!bigger)
        break;
      list = bigger;
    }
    list[n++] = a;
  }
  if (dir)
    closedir(dir);
  *count = n;
  return list;
}

static const char *kind_of(const struct stat *st)
{
  if (S_ISSOCK(st->st_mode))
    return "a socket";
  if (S_ISFIFO(st->st_mode))
    return "a pipe whose other end is not in this process";
  return "an inotify descriptor";
}

int mana_app_fds_unrestorable(char *why, size_t len)
{
  size_t n;
  struct app_fd *list = list_app_fds(&n);
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    int other_end = 0;
    for (size_t j = 0; j < n && S_ISFIFO(list[i].st.st_mode); j++)
      other_end |= list[j].st.st_ino == list[i].st.st_ino &&
                   is_pipe_end_for(&list[j], !is_pipe_end_for(&list[i], 1));
    uint64_t anon = mana_app_anon_identity(list[i].fd) & 0xff;
    if ((S_ISFIFO(list[i].st.st_mode) && other_end) || anon == MANA_ANON_EVENTFD ||
        anon == MANA_ANON_TIMERFD || anon == MANA_ANON_SIGNALFD)
      continue;
    if (anon == MANA_ANON_EPOLL) {
      found = mana_epoll_unrestorable(list[i].fd, why, len);
      continue;
    }
    snprintf(why, len,
             "the application holds %s (descriptor %d), which a restart could not give back",
             kind_of(&list[i].st), list[i].fd);
    found = 1;
  }
  free(list);
  return found;
}

/* ---- the pipes: one blob per pipe, its ends then the bytes waiting in it ---- */

struct saved_pipe {
  uint32_t n_ends;
  int32_t size; /* F_GETPIPE_SZ */
  uint64_t bytes;
  /* struct pipe_end ends[n_ends]; then the bytes */
};

static struct saved_pipe **saved;
static size_t n_saved;

static void forget(void)
{
  for (size_t i = 0; i < n_saved; i++)
    free(saved[i]);
  free(saved);
  saved = NULL;
  n_saved = 0;
}

/* Reads the bytes waiting in the pipe of `rd` into `out` and writes them back through `wr`. */
static int take_and_put_back(int rd, int wr, char *out, uint64_t bytes)
{
  uint64_t got = 0;
  while (got < bytes) {
    ssize_t r = read(rd, out + got, bytes - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    got += (uint64_t)r;
  }
  return mana_fd_write_all(wr, out, bytes);
}

static int save_pipe(const struct app_fd *list, size_t n, size_t first, char *err, size_t errlen)
{
  uint32_t ends = 0;
  int rd = -1, wr = -1;
  for (size_t j = first; j < n; j++)
    if (list[j].st.st_ino == list[first].st.st_ino) {
      ends++;
      if (is_pipe_end_for(&list[j], 1))
        wr = list[j].fd;
      else
        rd = list[j].fd;
    }
  int waiting = 0;
  if (rd < 0 || wr < 0 || ioctl(rd, FIONREAD, &waiting) != 0 || waiting < 0)
    return mana_fail(err, errlen, errno, "cannot read the application's pipe at descriptor %d",
                     list[first].fd);
  struct saved_pipe *p = calloc(1, sizeof(*p) + ends * sizeof(struct pipe_end) + (size_t)waiting);
  struct saved_pipe **more = realloc(saved, (n_saved + 1) * sizeof(*saved));
  if (!p || !more) {
    free(p);
    if (more)
      saved = more;
    return mana_fail(err, errlen, ENOMEM, "the application's pipes");
  }
  saved = more;
  saved[n_saved++] = p;
  p->n_ends = ends;
  p->size = fcntl(rd, F_GETPIPE_SZ);
  p->bytes = (uint64_t)waiting;
  struct pipe_end *end = (struct pipe_end *)(p + 1);
  for (size_t j = first; j < n; j++)
    if (list[j].st.st_ino == list[first].st.st_ino)
      *end++ = (struct pipe_end){list[j].fd, list[j].flags, (uint64_t)list[j].st.st_ino};
  if (waiting && take_and_put_back(rd, wr, (char *)end, (uint64_t)waiting) != 0)
    return mana_fail(err, errlen, errno,
                     "cannot read the %d bytes waiting in the application's "
                     "pipe at descriptor %d",
                     waiting, rd);
  return 0;
}

static int capture(char *err, size_t errlen)
{
  forget();
  size_t n;
  struct app_fd *list = list_app_fds(&n);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      seen |= list[j].st.st_ino == list[i].st.st_ino;
    if (S_ISFIFO(list[i].st.st_mode) && !seen)
      rc = save_pipe(list, n, i, err, errlen);
  }
  free(list);
  return rc;
}

static size_t blob_len(const struct saved_pipe *p)
{
  return sizeof(*p) + p->n_ends * sizeof(struct pipe_end) + p->bytes;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  for (size_t i = 0; i < n_saved; i++)
    if (mana_image_add_blob(w, MANA_BLOB_PIPE, saved[i], blob_len(saved[i])) != 0)
      return mana_fail(err, errlen, 0, "pipes: %s", mana_image_writer_error(w));
  return 0;
}

/* The new pipe's ends above every descriptor its old ends had, so that placing one never moves
 * the other out of the way. */
static int make_pipe_above(int above, int ends[2])
{
  int made[2];
  if (pipe2(made, O_CLOEXEC) != 0)
    return -1;
  for (int k = 0; k < 2; k++) {
    ends[k] = fcntl(made[k], F_DUPFD_CLOEXEC, above + 1);
    close(made[k]);
  }
  if (ends[0] >= 0 && ends[1] >= 0)
    return 0;
  for (int k = 0; k < 2; k++)
    if (ends[k] >= 0)
      close(ends[k]);
  return -1;
}

static int restore_pipe(const struct saved_pipe *p, char *err, size_t errlen)
{
  const struct pipe_end *e = (const struct pipe_end *)(p + 1);
  const char *bytes = (const char *)(e + p->n_ends);
  int above = 0, ends[2];
  for (uint32_t i = 0; i < p->n_ends; i++)
    above = e[i].fd > above ? e[i].fd : above;
  if (make_pipe_above(above, ends) != 0)
    return mana_fail(err, errlen, errno, "cannot make the application's pipe again");
  if (p->size > 0)
    fcntl(ends[0], F_SETPIPE_SZ, p->size);
  mana_app_fd_note(ends[0]); /* the application's again, for the next checkpoint */
  if (mana_fd_write_all(ends[1], bytes, p->bytes) != 0) {
    close(ends[0]);
    close(ends[1]);
    return mana_fail(err, errlen, errno, "cannot refill the application's pipe");
  }
  for (uint32_t i = 0; i < p->n_ends; i++) {
    int writing = (e[i].flags & O_ACCMODE) == O_WRONLY;
    int fd = fcntl(ends[writing], F_DUPFD_CLOEXEC, 0);
    char what[64];
    snprintf(what, sizeof(what), "the application's pipe (descriptor %d)", e[i].fd);
    if (fd < 0 || mana_fd_place(fd, e[i].fd, e[i].flags, -1, what, err, errlen) != 0 ||
        fcntl(e[i].fd, F_SETFL, e[i].flags & O_NONBLOCK) != 0) {
      if (fd < 0)
        mana_fail(err, errlen, errno, "cannot place %s", what);
      close(ends[0]);
      close(ends[1]);
      return -1;
    }
  }
  close(ends[0]);
  close(ends[1]);
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const void *data;
  size_t len;
  for (size_t at = 0; mana_image_next_blob(r, MANA_BLOB_PIPE, &at, &data, &len);) {
    const struct saved_pipe *p = data;
    if (len < sizeof(*p) || len != blob_len(p))
      return mana_fail(err, errlen, 0, "a pipe's record in the image is malformed");
    if (restore_pipe(p, err, errlen) != 0)
      return -1;
  }
  return 0;
}

const struct mana_state_ops mana_state_pipes = {"pipes", dump, restore, capture, NULL};
