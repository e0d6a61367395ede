/*
 * file_map_shared.c - files mapped with MAP_SHARED: the program's stores through the mapping
 * reach the file.  Restored as private copies, they stopped reaching it after a restart
 * (lower-half/state_file_maps.c).
 *
 * Each rank makes a file of 4 pages in TMPDIR (else /tmp), maps it shared and read-write,
 * and maps a second file it wrote first read-only and shared.  Every round it stores a value
 * through the first mapping, then reads both files back with pread and checks every value
 * stored so far (the file must hold them) and the read-only mapping against its file, and
 * reduces on MPI_COMM_WORLD (the checkpoints fall there).  The files are removed at the end.
 * Ranks: 2.  Arguments: [ROUNDS].
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpitest.h"

enum { BYTES = 4 * 4096, SLOTS = BYTES / sizeof(int) };

static int make_file(const char *dir, const char *what, int rank, char *path, size_t len)
{
  snprintf(path, len, "%s/file_map_shared.%s.%d.%d", dir, what, (int)getpid(), rank);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, BYTES) != 0)
    mt_die("cannot make the file to map");
  return fd;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("file_map_shared");
  mt_require_size(2);
  int rounds = (int)mt_arg("file_map_shared", argc, argv, 1, 40);
  if (rounds > (int)SLOTS)
    rounds = (int)SLOTS;
  const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  int me = mt_.rank;
  char rw_path[4200], ro_path[4200];
  int rw = make_file(dir, "rw", me, rw_path, sizeof(rw_path));
  int ro = make_file(dir, "ro", me, ro_path, sizeof(ro_path));
  static int pattern[SLOTS], back[SLOTS];
  for (int i = 0; i < (int)SLOTS; i++)
    pattern[i] = i * 7 + me;
  if (pwrite(ro, pattern, BYTES, 0) != BYTES)
    mt_die("cannot write the read-only file");
  int *stores = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
  const int *reads = mmap(NULL, BYTES, PROT_READ, MAP_SHARED, ro, 0);
  if (stores == MAP_FAILED || reads == MAP_FAILED)
    mt_die("mmap failed");
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    stores[r] = r * 3 + me + 1;
    int bad = 0;
    if (pread(rw, back, BYTES, 0) != BYTES)
      mt_die("cannot read the mapped file back");
    for (int i = 0; i <= r; i++)
      bad += back[i] != i * 3 + me + 1;
    bad += memcmp(reads, pattern, BYTES) != 0;
    if (bad)
      mt_check(0, "round %d: %d values missing from the file or the read-only mapping", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose file held every store", rounds - bad_rounds, rounds);
  munmap(stores, BYTES);
  munmap((void *)reads, BYTES);
  close(rw);
  close(ro);
  unlink(rw_path);
  unlink(ro_path);
  return mt_end();
}
