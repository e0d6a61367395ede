/*
 * thread_attrs.c - what a process and its threads are given besides memory: each thread's CPU
 * affinity, nice value and name, the file mode creation mask, an interval timer.  A restarted
 * process had the launcher's for all of them (lower-half/state_sched.c, state_thread_names.c,
 * state_umask.c, state_timers.c), and under mana_launch the process was named "exe".
 *
 * The main thread pins itself to the first CPU of the set it was launched with and a worker
 * thread to the last one (positions, not numbers: a restart with another placement keeps
 * them), each sets its own nice value (3 and 7), the worker names itself "attrs-worker" (the
 * main thread keeps the program's name, as exec gave it), the process sets umask 027 and arms
 * ITIMER_REAL for 1000 s every 1000 s.  Every round both threads check all of it, and the main
 * thread reduces on MPI_COMM_WORLD (the checkpoints fall there).
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "mpitest.h"

static cpu_set_t launch;
static volatile int stop;
static volatile long worker_rounds, worker_bad;

static int nth_cpu(int last)
{
  int found = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &launch)) {
      found = cpu;
      if (!last)
        break;
    }
  return found;
}

static void pin_self(int cpu, int nice)
{
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0 ||
      setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0)
    mt_die("cannot pin a thread or set its nice value");
}

/* 0 when this thread runs on exactly `cpu` with nice value `nice`. */
static int self_differs(int cpu, int nice)
{
  cpu_set_t now;
  int bad =
      sched_getaffinity(0, sizeof(now), &now) != 0 || CPU_COUNT(&now) != 1 || !CPU_ISSET(cpu, &now);
  errno = 0;
  int got = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  return bad || errno || got != nice;
}

/* 0 when this thread's name (/proc/thread-self/comm) is `want`. */
static int name_differs(const char *want)
{
  char name[32] = "";
  FILE *f = fopen("/proc/thread-self/comm", "r");
  int bad = !f || !fgets(name, sizeof(name), f);
  if (f)
    fclose(f);
  name[strcspn(name, "\n")] = '\0';
  return bad || strcmp(name, want) != 0;
}

static void *worker(void *arg)
{
  int cpu = nth_cpu(1);
  pin_self(cpu, 7);
  if (pthread_setname_np(pthread_self(), "attrs-worker") != 0)
    mt_die("cannot name the worker");
  while (!stop) {
    worker_bad += self_differs(cpu, 7) + name_differs("attrs-worker");
    worker_rounds++;
    usleep(200);
  }
  return arg;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  mt_begin("thread_attrs");
  mt_require_size(2);
  int rounds = (int)mt_arg("thread_attrs", argc, argv, 1, 30);
  if (sched_getaffinity(0, sizeof(launch), &launch) != 0)
    mt_die("sched_getaffinity failed");
  int cpu = nth_cpu(0);
  pin_self(cpu, 3);
  umask(027);
  struct itimerval timer = {{1000, 0}, {1000, 0}};
  if (setitimer(ITIMER_REAL, &timer, NULL) != 0)
    mt_die("setitimer failed");
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0)
    mt_die("pthread_create failed");
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    int bad = self_differs(cpu, 3) + name_differs("thread_attrs");
    mode_t mask = umask(027);
    bad += mask != 027;
    struct itimerval left;
    bad += getitimer(ITIMER_REAL, &left) != 0 || left.it_interval.tv_sec != 1000 ||
           (left.it_value.tv_sec == 0 && left.it_value.tv_usec == 0) || left.it_value.tv_sec > 1000;
    if (bad)
      mt_check(0, "round %d: %d of the main thread's attributes changed", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  stop = 1;
  pthread_join(t, NULL);
  mt_check_int("rounds whose attributes were all kept", rounds - bad_rounds, rounds);
  mt_check(worker_rounds > 0 && worker_bad == 0,
           "the worker kept its CPU, nice value and name (%s)", worker_bad ? "no" : "yes");
  return mt_end();
}
