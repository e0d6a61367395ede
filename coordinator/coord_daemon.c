/* coord_daemon: double fork (see coord_daemon.h). */
#define _GNU_SOURCE /* pipe2 */
#include "coord_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "mana/fail.h"

static void redirect_stdio(const char *log_path)
{
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;

  if (out < 0)
    out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (in >= 0)
    dup2(in, STDIN_FILENO);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
  }
  if (in > STDERR_FILENO)
    close(in);
  if (out > STDERR_FILENO)
    close(out);
}

/* The middle process: new session, then the daemon; reports the daemon's pid. */
static void middle(int report_fd)
{
  pid_t daemon_pid;

  if (setsid() < 0)
    _exit(1);
  daemon_pid = fork();
  if (daemon_pid < 0)
    _exit(1);
  if (daemon_pid > 0) {
    /* the only thing the original process waits for */
    ssize_t n = write(report_fd, &daemon_pid, sizeof(daemon_pid));

    _exit(n == (ssize_t)sizeof(daemon_pid) ? 0 : 1);
  }
}

static void original(pid_t middle_pid, int report_fd, const char *announce)
{
  pid_t daemon_pid = 0;
  int status = 0;
  ssize_t n;

  do
    n = read(report_fd, &daemon_pid, sizeof(daemon_pid));
  while (n < 0 && errno == EINTR);
  waitpid(middle_pid, &status, 0);
  if (n != (ssize_t)sizeof(daemon_pid) || !WIFEXITED(status) || WEXITSTATUS(status)) {
    fprintf(stderr, "mana_coordinator: could not start the daemon\n");
    exit(1);
  }
  printf("%s %d\n", announce, (int)daemon_pid);
  fflush(stdout);
  exit(0);
}

int coord_daemonize(const char *log_path, const char *announce, char *err, size_t errlen)
{
  int report[2];
  pid_t pid;

  fflush(NULL);
  if (pipe2(report, O_CLOEXEC) != 0) {
    return mana_fail(err, errlen, errno, "cannot create a pipe");
  }
  pid = fork();
  if (pid < 0) {
    mana_fail(err, errlen, errno, "cannot fork");
    close(report[0]);
    close(report[1]);
    return -1;
  }
  if (pid > 0) {
    close(report[1]);
    original(pid, report[0], announce);
  }
  close(report[0]);
  middle(report[1]);
  close(report[1]);
  if (chdir("/") != 0)
    return mana_fail(err, errlen, errno, "cannot chdir to /"), -1;
  redirect_stdio(log_path);
  return 0;
}
