/*
 * child_processes.c - every rank starts child processes all the time, in each way a program
 * can: popen (reading the child's output), system, fork + waitpid and posix_spawn + waitpid,
 * with an MPI_Allreduce between rounds.  A checkpoint lands while some child is alive or not
 * yet waited for on some rank; the image cannot hold the child, so mana must take it at a
 * moment without one (lower-half/park_children.c): a restart from a checkpoint taken with a
 * child alive lost its pipe (the read failed with EBADF) or its exit status (ECHILD).
 * Each round checks what every child printed or exited with.  Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpitest.h"

extern char **environ;

static int via_popen(int value)
{
  char cmd[64], line[64] = "";
  snprintf(cmd, sizeof(cmd), "expr %d + 1", value);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1000;
  if (!fgets(line, sizeof(line), p))
    line[0] = '\0';
  int status = pclose(p);
  return status == 0 && line[0] ? atoi(line) : -1000 - errno;
}

static int via_system(int code)
{
  char cmd[64];
  snprintf(cmd, sizeof(cmd), "exit %d", code);
  int status = system(cmd);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1000 - errno;
}

static int via_fork(int code)
{
  pid_t pid = fork();
  if (pid == 0)
    _exit(code);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1000 - errno;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -999;
}

static int via_spawn(int code)
{
  char arg[64];
  snprintf(arg, sizeof(arg), "exit %d", code);
  char *argv[] = {"sh", "-c", arg, NULL};
  pid_t pid;
  int status = 0, e = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
  if (e != 0 || waitpid(pid, &status, 0) != pid)
    return -1000 - (e ? e : errno);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -999;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("child_processes");
  mt_require_size(2);
  int rounds = (int)mt_arg("child_processes", argc, argv, 1, 16);
  long local = 0;
  for (int round = 0; round < rounds; round++) {
    int base = 10 * round + mt_.rank, bad = 0;
    bad += via_popen(base) != base + 1;
    bad += via_system(base % 7) != base % 7;
    bad += via_fork(base % 5) != base % 5;
    bad += via_spawn(base % 3) != base % 3;
    if (bad)
      mt_check(0, "round %d: %d of 4 children did not give their result", round, bad);
    local += base;
    long total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (round == rounds - 1)
      mt_check_int("sum over rounds and ranks", total, 10L * rounds * (rounds - 1) + rounds);
  }
  mt_check(1, "%d rounds of children", rounds);
  return mt_end();
}
