/* A job whose rank 0 keeps, for the whole run, something a restart cannot give back, so that a
 * checkpoint asked for meanwhile must be refused with the reason and the job must go on to its
 * native output (run_refusal.sh):
 *   child    a child process: progress lines piped through a `cat` started with popen, as a
 *            program that sends its log through a compressor does (refused once mana has
 *            waited MANA_CHILDREN_WAIT_MS for it, lower-half/park_children.c);
 *   eventfd  an eventfd a count is posted to every step and read from every third, as a
 *            program that wakes a thread with one does (not kept: lower-half/state_eventfds.c
 *            gives it back, with its count);
 *   eventfd_dup  the same through a duplicate (fcntl F_DUPFD_CLOEXEC) of an eventfd whose
 *            first descriptor is closed at once;
 *   timerfd  timerfds (not kept: lower-half/state_timerfds.c gives them back): one armed for
 *            an hour, one for an hour of wall-clock time (absolute, TFD_TIMER_CANCEL_ON_SET),
 *            one of an hour's interval that expired once unread, one that expired once and is
 *            read only at the end through a duplicate, and one armed for 200 us and waited
 *            for every step; each step counts the armed ones whose time left is in range;
 *   signalfd signalfds (not kept: lower-half/state_signalfds.c): every even step queues
 *            SIGUSR2 with the step as value to the process, every odd one reads it from a
 *            signalfd, and every fifth SIGRTMIN+2 read at the next from a duplicate of
 *            another, so a checkpoint may fall while one waits; a thread waits all along in a
 *            blocking read of a signalfd of every other signal (sigfillset, as is usual), for
 *            the SIGRTMIN+3 sent to it at the end;
 *   inotify  an inotify instance watching the working directory (refused, state_pipes.c);
 *   eventfd_closed  an eventfd made and closed at once (nothing is kept: a checkpoint must be
 *            taken, lower-half/app_fd_origin.c);
 *   thread_timer  a POSIX timer notifying by SIGEV_THREAD (glibc runs the function on a thread
 *            of its own, which the kernel signals by id), armed for an hour and read every
 *            step (lower-half/state_posix_timers.c).
 *   epoll    an event loop: an epoll instance watching a pipe (level-triggered), an eventfd
 *            (edge-triggered), a one-shot eventfd re-armed every third step through a
 *            duplicate of the instance, and a second epoll instance that watches a third
 *            eventfd; every step posts to all of them, waits without blocking and adds up the
 *            data of what was reported (not kept: lower-half/state_epolls.c gives them back);
 *   epoll_stale  an epoll instance watching a pipe's read end through a descriptor closed
 *            after a dup (the watch stays, keyed by the closed number, which a restart could
 *            not add again: refused); every step writes a byte, waits and reads it.
 *   usage: kept_resource child|eventfd|eventfd_dup|eventfd_closed|timerfd|signalfd|inotify|
 *          thread_timer|epoll|epoll_stale STEPS STEP_MS
 * Rank 0 prints "child started", "eventfd made" (also for epoll), "signalfd made",
 * "inotify made" or "timer made" (also for timerfd) once it holds it (for
 * eventfd_closed, "eventfd made and closed"), then STEPS
 * steps of an Allreduce, a use of the resource and STEP_MS of sleep, a line per 10 steps. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static FILE *child;
static int efd = -1, tfd = -1, ifd = -1;
/* epoll: the outer instance and its duplicate, the inner one, the pipe's ends and the
 * edge-triggered, one-shot and inner eventfds */
static int ep = -1, ep_stale = -1, ep_dup, ep_inner, pipe_rd, pipe_wr, ev_edge, ev_once, ev_inner;
enum { DATA_PIPE = 1, DATA_EDGE = 2, DATA_ONCE = 4, DATA_INNER = 8 };

static int watch(int epfd, int fd, uint32_t events, uint64_t data)
{
  struct epoll_event ev = {.events = events, .data.u64 = data};
  return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int make_event_loop(void)
{
  int p[2];
  if (pipe(p) != 0)
    return -1;
  pipe_rd = p[0];
  pipe_wr = p[1];
  ep = epoll_create1(EPOLL_CLOEXEC);
  ep_inner = epoll_create1(0);
  ev_edge = eventfd(0, EFD_NONBLOCK);
  ev_once = eventfd(0, EFD_NONBLOCK);
  ev_inner = eventfd(0, EFD_NONBLOCK);
  ep_dup = ep >= 0 ? fcntl(ep, F_DUPFD_CLOEXEC, 40) : -1;
  if (ep < 0 || ep_inner < 0 || ev_edge < 0 || ev_once < 0 || ev_inner < 0 || ep_dup < 0)
    return -1;
  return watch(ep, pipe_rd, EPOLLIN, DATA_PIPE) | watch(ep, ev_edge, EPOLLIN | EPOLLET, DATA_EDGE) |
         watch(ep_dup, ev_once, EPOLLIN | EPOLLONESHOT, DATA_ONCE) |
         watch(ep_inner, ev_inner, EPOLLIN, 99) | watch(ep, ep_inner, EPOLLIN, DATA_INNER);
}

/* One turn of the event loop: the sum of the data of what was reported, times ten plus the
 * number of events; -1000 for each call that failed. */
static long event_loop_turn(int step)
{
  uint64_t one = 1, count;
  char byte = 'x';
  long failed = 0, sum = 0;
  failed += write(pipe_wr, &byte, 1) != 1;
  failed += write(ev_edge, &one, 8) != 8;
  failed += write(ev_once, &one, 8) != 8;
  failed += write(ev_inner, &one, 8) != 8;
  struct epoll_event evs[8];
  int n = epoll_wait(ep, evs, 8, 0);
  failed += n < 0;
  for (int i = 0; i < n; i++)
    sum += (long)evs[i].data.u64;
  failed += read(pipe_rd, &byte, 1) != 1;
  failed += read(ev_once, &count, 8) != 8;
  if (step % 3 == 2) {
    failed += read(ev_edge, &count, 8) != 8;
    struct epoll_event again = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = DATA_ONCE};
    failed += epoll_ctl(ep_dup, EPOLL_CTL_MOD, ev_once, &again) != 0;
  }
  if (step % 2 == 1) {
    failed += read(ev_inner, &count, 8) != 8;
    struct epoll_event inner;
    failed += epoll_wait(ep_inner, &inner, 1, 0) != 0; /* drained: nothing to report */
  }
  return failed ? -1000 * failed : sum * 10 + (n > 0 ? n : 0);
}
/* timerfd: armed for an hour, for an hour of wall-clock time, an hour's interval, expired
 * once and its duplicate, and the one waited for every step */
static int t_hour = -1, t_wall, t_period, t_done, t_done_dup, t_step;

static int arm(int fd, int flags, time_t value_s, long value_ns, time_t interval_s)
{
  struct itimerspec its = {{interval_s, 0}, {value_s, value_ns}};
  return fd < 0 ? -1 : timerfd_settime(fd, flags, &its, NULL);
}

/* Waits for timerfd `fd` to expire, without reading it. */
static int expired(int fd)
{
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 10000) == 1 ? 0 : -1;
}

static int make_timerfds(void)
{
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  t_hour = timerfd_create(CLOCK_MONOTONIC, 0);
  t_wall = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC);
  t_period = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK);
  t_done = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  t_step = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  t_done_dup = t_done >= 0 ? fcntl(t_done, F_DUPFD_CLOEXEC, 40) : -1;
  if (arm(t_hour, 0, 3600, 0, 0) || arm(t_period, 0, 0, 1000000, 3600) ||
      arm(t_wall, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, now.tv_sec + 3600, 0, 0) ||
      arm(t_done, 0, 0, 1000000, 0) || t_step < 0 || t_done_dup < 0)
    return -1;
  return expired(t_period) | expired(t_done);
}

/* 1 when timerfd `fd` is armed with a time left in (low, high] seconds. */
static int left_in(int fd, time_t low, time_t high)
{
  struct itimerspec its;
  if (timerfd_gettime(fd, &its) != 0)
    return 0;
  time_t s = its.it_value.tv_sec + (its.it_value.tv_nsec > 0);
  return s > low && s <= high;
}

static long timerfd_turn(void)
{
  uint64_t count = 0;
  long n =
      left_in(t_hour, 3000, 3600) + left_in(t_wall, 3000, 3600) + left_in(t_period, 3000, 3600);
  if (arm(t_step, 0, 0, 200000, 0) == 0 && expired(t_step) == 0 &&
      read(t_step, &count, sizeof(count)) == sizeof(count))
    n += 10 * (long)count;
  return n;
}

/* The expirations waiting on a timerfd, read at the end: -1 when none. */
static long expirations(int fd)
{
  uint64_t count;
  return read(fd, &count, sizeof(count)) == sizeof(count) ? (long)count : -1;
}

/* signalfd: the signalfd of SIGUSR2, a duplicate of that of SIGRTMIN+2, and the thread that
 * waits on one of every other signal */
static int s_fd = -1, s_dup;
static pthread_t s_waiter;
static char s_waiter_saw[64];

static void *wait_every_signal(void *arg)
{
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  sigdelset(&all, SIGUSR2); /* the main thread's */
  sigdelset(&all, SIGRTMIN + 2);
  int fd = signalfd(-1, &all, SFD_CLOEXEC);
  struct signalfd_siginfo si;
  ssize_t n = fd >= 0 ? read(fd, &si, sizeof(si)) : -1;
  if (n != sizeof(si))
    snprintf(s_waiter_saw, sizeof(s_waiter_saw), "no signal (%zd)", n);
  else
    snprintf(s_waiter_saw, sizeof(s_waiter_saw), "signal SIGRTMIN%+d value %d",
             (int)si.ssi_signo - SIGRTMIN, si.ssi_int);
  return NULL;
}

/* Before MPI_Init, on every rank, so that every thread blocks them (a thread that does not
 * would take SIGUSR2 and end the process, natively too). */
static void block_signals_read(void)
{
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR2);
  sigaddset(&mask, SIGRTMIN + 2);
  sigaddset(&mask, SIGRTMIN + 3);
  sigprocmask(SIG_BLOCK, &mask, NULL);
}

static int make_signalfds(void)
{
  sigset_t usr2, rt2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigemptyset(&rt2);
  sigaddset(&rt2, SIGRTMIN + 2);
  s_fd = signalfd(-1, &usr2, SFD_NONBLOCK);
  int rt = signalfd(-1, &rt2, SFD_NONBLOCK | SFD_CLOEXEC);
  s_dup = rt >= 0 ? fcntl(rt, F_DUPFD_CLOEXEC, 40) : -1;
  return s_dup < 0 || pthread_create(&s_waiter, NULL, wait_every_signal, NULL) != 0 ? -1 : 0;
}

static long send_value(int sig, int value)
{
  union sigval v = {.sival_int = value};
  return sigqueue(getpid(), sig, v) == 0 ? 0 : -1000;
}

/* The value of the signal read from `fd`, or -1000 when none or another came. */
static long read_value(int fd, int sig)
{
  struct signalfd_siginfo si;
  if (read(fd, &si, sizeof(si)) != sizeof(si) || (int)si.ssi_signo != sig)
    return -1000;
  return si.ssi_int;
}

static long signalfd_turn(int step)
{
  long v = 0;
  if (step % 5 == 0)
    v += send_value(SIGRTMIN + 2, 1000 + step);
  else if (step % 5 == 1)
    v += read_value(s_dup, SIGRTMIN + 2);
  if (step % 2 == 0)
    return v + send_value(SIGUSR2, step);
  return v + read_value(s_fd, SIGUSR2);
}

static timer_t timer;
static int have_timer;

static void on_timer(union sigval v)
{
  (void)v;
}

static void take(const char *what)
{
  if (strcmp(what, "child") == 0) {
    child = popen("cat > /dev/null", "w");
    if (child)
      printf("child started\n");
  } else if (strcmp(what, "eventfd") == 0) {
    efd = eventfd(0, 0);
    if (efd >= 0)
      printf("eventfd made\n");
  } else if (strcmp(what, "eventfd_dup") == 0) {
    int first = eventfd(0, 0);
    efd = first >= 0 ? fcntl(first, F_DUPFD_CLOEXEC, 40) : -1;
    if (first >= 0)
      close(first);
    if (efd >= 0)
      printf("eventfd made\n");
  } else if (strcmp(what, "eventfd_closed") == 0) {
    int once = eventfd(0, 0);
    if (once >= 0 && close(once) == 0) {
      printf("eventfd made and closed\n");
      fflush(stdout);
      return;
    }
  } else if (strcmp(what, "epoll") == 0) {
    if (make_event_loop() == 0) {
      efd = -2; /* held: the loop's descriptors */
      printf("eventfd made\n");
    }
  } else if (strcmp(what, "epoll_stale") == 0) {
    int p[2];
    ep_stale = epoll_create1(0);
    if (ep_stale >= 0 && pipe(p) == 0 && watch(ep_stale, p[0], EPOLLIN, DATA_PIPE) == 0) {
      pipe_rd = dup(p[0]);
      pipe_wr = p[1];
      close(p[0]);
      efd = -2;
      printf("eventfd made\n");
    }
  } else if (strcmp(what, "timerfd") == 0) {
    if (make_timerfds() == 0) {
      tfd = t_hour;
      printf("timer made\n");
    }
  } else if (strcmp(what, "signalfd") == 0) {
    if (make_signalfds() == 0) {
      efd = -2; /* held: the signalfds */
      printf("signalfd made\n");
    }
  } else if (strcmp(what, "inotify") == 0) {
    ifd = inotify_init1(IN_CLOEXEC);
    if (ifd >= 0 && inotify_add_watch(ifd, ".", IN_CREATE) >= 0) {
      efd = -2;
      printf("inotify made\n");
    }
  } else if (strcmp(what, "thread_timer") == 0) {
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = on_timer;
    struct itimerspec hour = {{0, 0}, {3600, 0}};
    have_timer = timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0 &&
                 timer_settime(timer, 0, &hour, NULL) == 0;
    if (have_timer)
      printf("timer made\n");
  }
  if (!child && efd == -1 && tfd < 0 && !have_timer) {
    fprintf(stderr, "kept_resource: cannot make a %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fflush(stdout);
}

/* One use of the resource; returns what it counted. */
static long use(int step, long total)
{
  if (child)
    fprintf(child, "step %d total %ld\n", step, total);
  if (ep >= 0)
    return event_loop_turn(step);
  if (ep_stale >= 0) {
    char byte = 'x';
    struct epoll_event ev;
    int n = write(pipe_wr, &byte, 1) == 1 ? epoll_wait(ep_stale, &ev, 1, 0) : -1;
    return n == 1 && read(pipe_rd, &byte, 1) == 1 ? (long)ev.data.u64 : -1000;
  }
  if (s_fd >= 0)
    return signalfd_turn(step);
  if (t_hour >= 0)
    return timerfd_turn();
  uint64_t one = 1, count = 0;
  if (efd >= 0 && write(efd, &one, sizeof(one)) == sizeof(one))
    return step % 3 == 2 && read(efd, &count, sizeof(count)) == sizeof(count) ? (long)count : 0;
  struct itimerspec left;
  if (have_timer && timer_gettime(timer, &left) == 0 && left.it_value.tv_sec > 0)
    return 1;
  return 0;
}

int main(int argc, char **argv)
{
  const char *what = argc > 1 ? argv[1] : "child";
  if (strcmp(what, "signalfd") == 0)
    block_signals_read();
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int steps = argc > 2 ? atoi(argv[2]) : 40;
  int step_ms = argc > 3 ? atoi(argv[3]) : 50;
  if (rank == 0)
    take(what);
  long total = 0, used = 0;
  for (int step = 0; step < steps; step++) {
    int got = step * (rank + 1) + rank % 7, sum = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    used += use(step, total);
    if (rank == 0 && step % 10 == 9)
      printf("step %d total %ld used %ld\n", step + 1, total, used);
    struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (child)
    printf("child exited with status %d\n", pclose(child));
  if (t_hour >= 0)
    printf("timerfd expirations waiting: %ld and %ld\n", expirations(t_done_dup),
           expirations(t_period));
  if (s_fd >= 0) {
    union sigval v = {.sival_int = 4242};
    pthread_sigqueue(s_waiter, SIGRTMIN + 3, v);
    pthread_join(s_waiter, NULL);
    printf("the waiting thread read %s\n", s_waiter_saw);
  }
  if (efd >= 0)
    close(efd);
  if (tfd >= 0)
    close(tfd);
  if (have_timer)
    timer_delete(timer);
  MPI_Finalize();
  return 0;
}
