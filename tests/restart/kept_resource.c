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
 *   timerfd  a timerfd armed for an hour, read every step (lower-half/state_pipes.c);
 *   eventfd_closed  an eventfd made and closed at once (nothing is kept: a checkpoint must be
 *            taken, lower-half/app_fd_origin.c);
 *   thread_timer  a POSIX timer notifying by SIGEV_THREAD (glibc runs the function on a thread
 *            of its own, which the kernel signals by id), armed for an hour and read every
 *            step (lower-half/state_posix_timers.c).
 *   usage: kept_resource child|eventfd|eventfd_dup|eventfd_closed|timerfd|thread_timer STEPS
 *          STEP_MS
 * Rank 0 prints "child started", "eventfd made" or "timer made" (also for timerfd) once it
 * holds it (for
 * eventfd_closed, "eventfd made and closed"), then STEPS
 * steps of an Allreduce, a use of the resource and STEP_MS of sleep, a line per 10 steps. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static FILE *child;
static int efd = -1, tfd = -1;
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
  } else if (strcmp(what, "timerfd") == 0) {
    struct itimerspec hour = {{0, 0}, {3600, 0}};
    tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (tfd >= 0 && timerfd_settime(tfd, 0, &hour, NULL) == 0)
      printf("timer made\n");
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
  if (!child && efd < 0 && tfd < 0 && !have_timer) {
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
  uint64_t one = 1, count = 0;
  if (efd >= 0 && write(efd, &one, sizeof(one)) == sizeof(one))
    return step % 3 == 2 && read(efd, &count, sizeof(count)) == sizeof(count) ? (long)count : 0;
  struct itimerspec remaining;
  if (tfd >= 0 && timerfd_gettime(tfd, &remaining) == 0 && remaining.it_value.tv_sec > 0)
    return 1;
  struct itimerspec left;
  if (have_timer && timer_gettime(timer, &left) == 0 && left.it_value.tv_sec > 0)
    return 1;
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *what = argc > 1 ? argv[1] : "child";
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
  if (efd >= 0)
    close(efd);
  if (tfd >= 0)
    close(tfd);
  if (have_timer)
    timer_delete(timer);
  MPI_Finalize();
  return 0;
}
