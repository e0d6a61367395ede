/* Writing a rank's image: memory, then the other kinds of state, then commit. */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image.h"
#include "mana/boundary.h"
#include "mana/fault.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "mana/fail.h"

const struct mana_state_ops *const mana_state_kinds[] = {
    &mana_state_rlimits,       /* first: memory and descriptors may need a raised limit */
    &mana_state_memory,        /* the others may restore into it */
    &mana_state_file_maps,     /* over the memory's private copies */
    &mana_state_sysv_shm,      /* the same for System V shared memory */
    &mana_state_window,        /* the window allocator's free extents */
    &mana_state_signals,       /* dispositions */
    &mana_state_written_files, /* sizes of the files it wrote, taken back */
    &mana_state_files,         /* descriptors: before the restarted MPI opens any */
    &mana_state_unlinked,      /* removed files, with their content */
    &mana_state_memfd,         /* memfds: over the memory's copies, at their descriptors */
    &mana_state_fork_advice,   /* madvise: after every kind that maps over the memory */
    &mana_state_pipes,         /* the application's pipes, with their bytes */
    &mana_state_eventfds,      /* its eventfds, with their counts */
    &mana_state_timerfds,      /* its timerfds: made here, armed as the threads resume */
    &mana_state_signalfds,     /* its signalfds */
    &mana_state_epolls,        /* its epoll instances: after what they watch */
    &mana_state_pending,       /* signals waiting on threads */
    &mana_state_umask,         /* the file mode creation mask */
    &mana_state_timers,        /* read here, armed as the threads resume */
    &mana_state_posix_timers,  /* made here, before the restarted MPI's own; armed with them */
    &mana_state_sched,         /* read here, applied by each resumed thread */
    &mana_state_thread_names,  /* the same */
    &mana_state_clocks,        /* offsets into the restored boundary page, before the filter */
    &mana_state_cwd,           /* last: mana's own paths are absolute by then */
    NULL};

/* The state a kind reads from the live process (mana_state_ops.capture), read now. */
static int capture_all(char *err, size_t errlen)
{
  for (size_t i = 0; mana_state_kinds[i]; i++)
    if (mana_state_kinds[i]->capture && mana_state_kinds[i]->capture(err, errlen) != 0)
      return -1;
  return 0;
}

/* The image of the same rank in the base generation, when it can serve as the base of w;
 * NULL otherwise (said on stderr: the image is then written in full, which is always
 * correct). */
static struct mana_image_reader *open_base(struct mana_image_writer *w, const char *base_dir,
                                           const char *name, uint32_t rank)
{
  char why[1024];
  struct mana_image_reader *base = NULL;
  int fd = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, sizeof(why), "cannot open %s: %s", base_dir, strerror(errno));
  } else {
    if (mana_image_open(&base, fd, name, NULL, why, sizeof(why)) == 0 &&
        mana_image_writer_set_base(w, base, why, sizeof(why)) != 0) {
      mana_image_close(base);
      base = NULL;
    }
    close(fd);
  }
  if (!base)
    fprintf(stderr, "mana_lh: rank %u: the image is written in full, not incrementally: %s\n", rank,
            why);
  return base;
}

/* With `captured`, capture_all ran already (in the rank, before a forked writer). */
static int write_image(const char *dir, const char *name, uint64_t generation, const char *base_dir,
                       const struct mana_rank_facts *facts,
                       const struct mana_write_progress *progress, int captured,
                       struct mana_written *out, char *err, size_t errlen)
{
  if (!captured && capture_all(err, errlen) != 0)
    return -1;
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    return mana_fail(err, errlen, errno, "cannot open checkpoint directory %s", dir);
  }
  struct mana_image_info info;
  memset(&info, 0, sizeof(info));
  info.rank = facts->rank;
  info.world_size = facts->world_size;
  info.generation = generation;
  info.window_base = MANA_WINDOW_BASE;
  info.window_end = MANA_WINDOW_END;
  info.thread_level = facts->thread_level;
  struct mana_image_writer *w = NULL;
  struct mana_image_reader *base = NULL;
  int rc = mana_image_writer_open(&w, dirfd, name, &info, err, errlen);
  if (rc == 0 && base_dir)
    base = open_base(w, base_dir, name, facts->rank);
  if (rc == 0 && progress && progress->fn)
    mana_image_writer_on_progress(w, progress->fn, progress->arg, progress->every);
  if (rc == 0 && mana_fault("write-delay", (long)facts->rank))
    sleep(3);
  if (rc == 0 && (rc = mana_image_add_blob(w, MANA_BLOB_RANK, facts, sizeof(*facts))) != 0)
    mana_fail(err, errlen, 0, "the rank's record: %s", mana_image_writer_error(w));
  for (size_t i = 0; rc == 0 && mana_state_kinds[i]; i++) {
    rc = mana_state_kinds[i]->dump(w, err, errlen);
    if (rc == 0 && mana_state_kinds[i] == &mana_state_memory &&
        mana_fault("write-kill", (long)facts->rank))
      raise(SIGKILL); /* the image is half written: its temporary file stays behind */
  }
  if (rc == 0) {
    struct mana_image_stats st;
    mana_image_writer_stats(w, &st);
    out->oldest = st.oldest_generation;
    rc = mana_image_writer_commit(w, &out->bytes, &out->hash, err, errlen);
  } else if (w) {
    mana_image_writer_abort(w);
  }
  mana_image_close(base);
  close(dirfd);
  return rc;
}

int mana_checkpoint_write(const char *dir, const char *name, uint64_t generation,
                          const char *base_dir, const struct mana_rank_facts *facts,
                          const struct mana_write_progress *progress, struct mana_written *out,
                          char *err, size_t errlen)
{
  return write_image(dir, name, generation, base_dir, facts, progress, 0, out, err, errlen);
}

/* What a forked writer tells the rank: its outcome, in one write on a pipe. */
struct writer_result {
  int rc;
  int pad;
  struct mana_written written;
  char err[512];
};

/* The writer's nice value, MANA_WRITER_NICE (0 to 19, default 10).  The writer shares the
 * node's cores with the application, which runs again as soon as the writer exists: at the
 * same priority each writer takes half a core from a rank that busy-polls in MPI, and the
 * application stood still for 8 to 24 ms at a time while it wrote (2 ranks on 2 cores); at
 * 10 the application's gaps stay near its checkpoint pause and the writer takes about twice
 * as long. */
#define WRITER_NICE_DEFAULT 10

static int configured_nice(void)
{
  static int nice_value = -1;
  if (nice_value >= 0)
    return nice_value;
  nice_value = WRITER_NICE_DEFAULT;
  const char *v = getenv("MANA_WRITER_NICE");
  if (v && *v) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > 19)
      fprintf(stderr, "mana_lh: MANA_WRITER_NICE=%s is not a nice value from 0 to 19; using %d\n",
              v, WRITER_NICE_DEFAULT);
    else
      nice_value = (int)n;
  }
  return nice_value;
}

/* Never ahead of the rank: a job started with nice 15 keeps its writers at 15 (as root,
 * setting 10 would have raised them above the application). */
int mana_checkpoint_writer_nice(void)
{
  errno = 0;
  int own = getpriority(PRIO_PROCESS, 0); /* this thread's; -1 is a valid value */
  int wanted = configured_nice();
  return errno == 0 && own > wanted ? own : wanted;
}

/* MANA_TEST_WRITER_HOLD=FILE (testing aid): the writer waits until FILE exists, at most
 * ten minutes, so that a test can make the application change memory the writer still
 * shares (tests/integration/huge_pages.sh). */
static void hold_for_test(void)
{
  const char *file = getenv("MANA_TEST_WRITER_HOLD");
  for (int i = 0; file && *file && access(file, F_OK) != 0 && i < 60000; i++)
    usleep(10000);
}

static _Noreturn void run_writer(int out, const char *dir, const char *name, uint64_t generation,
                                 const char *base_dir, const struct mana_rank_facts *facts,
                                 int nice_value)
{
  struct writer_result r;
  memset(&r, 0, sizeof(r));
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  /* A writer must not outlive its rank (a killed rank's generation is never committed). */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpriority(PRIO_PROCESS, 0, nice_value);
  hold_for_test();
  r.rc = write_image(dir, name, generation, base_dir, facts, NULL, 1, &r.written, r.err,
                     sizeof(r.err));
  if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
    _exit(2);
  _exit(0);
}

int mana_checkpoint_unforkable(char *why, size_t len)
{
  for (size_t i = 0; mana_state_kinds[i]; i++)
    if (mana_state_kinds[i]->unforkable && mana_state_kinds[i]->unforkable(why, len))
      return 1;
  return 0;
}

int mana_checkpoint_fork_writer(const char *dir, const char *name, uint64_t generation,
                                const char *base_dir, const struct mana_rank_facts *facts,
                                struct mana_forked_writer *fw, char *err, size_t errlen)
{
  if (capture_all(err, errlen) != 0)
    return -1;
  int nice_value = mana_checkpoint_writer_nice();
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return mana_fail(err, errlen, errno, "cannot make a pipe for the image writer");
  if (mana_fork_advice_lift(err, errlen) != 0) { /* the writer must have those ranges */
    close(p[0]);
    close(p[1]);
    return -1;
  }
  fflush(NULL); /* nothing buffered is written twice */
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    run_writer(p[1], dir, name, generation, base_dir, facts, nice_value);
  }
  int e = errno;
  mana_fork_advice_give_back();
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    return mana_fail(err, errlen, e, "cannot fork the image writer");
  }
  fw->pid = pid;
  fw->result_fd = p[0];
  return 0;
}

int mana_checkpoint_writer_wait(struct mana_forked_writer *fw, struct mana_written *out, char *err,
                                size_t errlen)
{
  struct writer_result r;
  size_t got = 0;
  while (got < sizeof(r)) {
    ssize_t n = read(fw->result_fd, (char *)&r + got, sizeof(r) - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fw->result_fd);
  int status = 0;
  while (waitpid(fw->pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (got != sizeof(r)) {
    if (WIFSIGNALED(status))
      return mana_fail(err, errlen, 0, "the image writer (pid %d) was killed by signal %d",
                       (int)fw->pid, WTERMSIG(status));
    return mana_fail(err, errlen, 0, "the image writer (pid %d) ended without a result (status %d)",
                     (int)fw->pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  if (r.rc != 0) {
    r.err[sizeof(r.err) - 1] = '\0';
    return mana_fail(err, errlen, 0, "%s", r.err);
  }
  *out = r.written;
  return 0;
}
