/*
 * dev_files.c - devices a program keeps open: /dev/null to write into, /dev/zero and
 * /dev/urandom to read from.  A restarted rank found those descriptors closed (EBADF), or
 * reused by MPI's own and wrote into them (lower-half/state_files.c).  Every round writes
 * into /dev/null, reads zeros from /dev/zero and random bytes from /dev/urandom through the
 * same descriptors, checks each, and reduces on MPI_COMM_WORLD.
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

static int is_device(int fd, const char *path)
{
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && S_ISCHR(a.st_mode) && a.st_rdev == b.st_rdev;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dev_files");
  mt_require_size(2);
  int rounds = (int)mt_arg("dev_files", argc, argv, 1, 30);
  int null_fd = open("/dev/null", O_WRONLY), zero_fd = open("/dev/zero", O_RDONLY);
  int random_fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || zero_fd < 0 || random_fd < 0)
    mt_die("cannot open the devices");
  char buf[256];
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    int bad = !is_device(null_fd, "/dev/null") || !is_device(zero_fd, "/dev/zero") ||
              !is_device(random_fd, "/dev/urandom");
    memset(buf, 'x', sizeof(buf));
    bad += write(null_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf);
    bad += read(zero_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || buf[0] || buf[255];
    bad += read(random_fd, buf, 16) != 16;
    bad += !(fcntl(random_fd, F_GETFD) & FD_CLOEXEC) || (fcntl(null_fd, F_GETFD) & FD_CLOEXEC);
    if (bad)
      mt_check(0, "round %d: %d of the devices' checks failed", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose devices all worked", rounds - bad_rounds, rounds);
  close(null_fd);
  close(zero_fd);
  close(random_fd);
  return mt_end();
}
