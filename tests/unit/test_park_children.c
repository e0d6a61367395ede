/* Unit tests of the wait for a moment without child processes (lower-half/park_children.c):
 * live children and children not yet waited for are found and named, and the park is taken
 * again until they are gone, or refused once the wait is over.  Parking itself is faked:
 * these tests run in an ordinary process. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lower-half/park_children.h"

/* The fake park: counts the rounds; the application's part, finishing with its child, is
 * played by reap_on_release. */
static int parks, releases;
static pid_t reap_on_release; /* reaped at the second release */

int mana_park_all(int signo, int timeout_ms, char *err, size_t errlen)
{
  (void)signo, (void)timeout_ms, (void)err, (void)errlen;
  parks++;
  return 0;
}

void mana_park_release(void)
{
  if (++releases == 2 && reap_on_release > 0) {
    kill(reap_on_release, SIGKILL);
    waitpid(reap_on_release, NULL, 0);
    reap_on_release = 0;
  }
}

/* A child that waits until it is killed. */
static pid_t start_sleeper(void)
{
  pid_t pid = fork();
  if (pid == 0) {
    for (;;)
      pause();
  }
  cr_assert_gt(pid, 0);
  return pid;
}

static char state_of(pid_t pid)
{
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(buf, sizeof(buf), f)) {
    if (f)
      fclose(f);
    return '?';
  }
  fclose(f);
  const char *end = strrchr(buf, ')');
  return end ? end[2] : '?';
}

Test(park_children, none_without_children)
{
  char why[128] = "";
  cr_assert_eq(mana_child_process(why, sizeof(why)), 0);
}

Test(park_children, a_live_child_is_found_and_named)
{
  pid_t pid = start_sleeper();
  char why[128] = "", want[64];
  cr_assert_eq(mana_child_process(why, sizeof(why)), 1);
  snprintf(want, sizeof(want), "process %d (", (int)pid);
  cr_assert(strstr(why, want), "%s does not name %s", why, want);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  cr_assert_eq(mana_child_process(why, sizeof(why)), 0, "a reaped child is still found");
}

/* After a restart the application's waitpid for it would fail with ECHILD. */
Test(park_children, a_child_not_waited_for_counts)
{
  pid_t pid = fork();
  if (pid == 0)
    _exit(3);
  for (int i = 0; i < 5000 && state_of(pid) != 'Z'; i++)
    usleep(1000);
  cr_assert_eq(state_of(pid), 'Z');
  char why[128] = "";
  cr_assert_eq(mana_child_process(why, sizeof(why)), 1);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert_eq(mana_child_process(why, sizeof(why)), 0);
}

Test(park_children, parks_again_until_the_child_is_gone)
{
  reap_on_release = start_sleeper();
  char err[256] = "";
  enum park_children_outcome out = mana_park_without_children(0, 1000, 10000, err, sizeof(err));
  cr_assert_eq(out, PARK_CHILDREN_NONE, "%s", err);
  cr_assert_eq(parks, 3, "parked %d times", parks);
  cr_assert_eq(releases, 2);
}

Test(park_children, a_child_that_stays_refuses_after_the_wait)
{
  pid_t pid = start_sleeper();
  char err[256] = "", want[64];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  enum park_children_outcome out = mana_park_without_children(0, 1000, 60, err, sizeof(err));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  cr_assert_eq(out, PARK_CHILDREN_REMAIN);
  snprintf(want, sizeof(want), "child process %d (", (int)pid);
  cr_assert(strstr(err, want), "%s does not name %s", err, want);
  cr_assert_geq(ms, 60, "refused after %ld ms, before the wait was over", ms);
  cr_assert_gt(parks, 1, "never parked again");
}

Test(park_children, no_wait_refuses_at_once)
{
  pid_t pid = start_sleeper();
  char err[256] = "";
  enum park_children_outcome out = mana_park_without_children(0, 1000, 0, err, sizeof(err));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  cr_assert_eq(out, PARK_CHILDREN_REMAIN);
  cr_assert_eq(parks, 1);
}
