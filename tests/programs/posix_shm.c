/*
 * posix_shm.c - ranks of one node sharing POSIX shared memory (shm_open + mmap MAP_SHARED), as
 * hybrid codes share a table within a node.  Restored as private copies, the ranks stopped
 * seeing each other's stores after a restart (lower-half/state_file_maps.c).
 *
 * Rank 0 makes a segment of 4 pages named after its pid (told to the others by a broadcast)
 * and keeps its descriptor open; the others open it, map it and close theirs.  Every round
 * each rank stores a value in its own slot of the round, then, after a barrier, checks every
 * slot of every rank stored so far and the segment's size through rank 0's descriptor, and
 * reduces on MPI_COMM_WORLD (the checkpoints fall there).  Rank 0 removes the segment at the
 * end.  Ranks: 2 (on one node).  Arguments: [ROUNDS] [PREFIX] [removed]: the segment is
 * named PREFIX.PID (default mana_posix_shm), so that a test may remove it between a checkpoint
 * and its restart, as a restart on another node would not find it; with "removed", rank 0
 * removes it (and closes its descriptor) as soon as every rank has mapped it, so that nothing
 * is left when the job dies, and the segment has no name at the checkpoints.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

enum { BYTES = 4 * 4096, MAX_RANKS = 8, ROUND_SLOTS = BYTES / sizeof(int) / MAX_RANKS };

static int value(int round, int rank)
{
  return round * 131 + rank * 7 + 1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("posix_shm");
  mt_require_size(2);
  int rounds = (int)mt_arg("posix_shm", argc, argv, 1, 40);
  if (rounds > (int)ROUND_SLOTS)
    rounds = (int)ROUND_SLOTS;
  int me = mt_.rank;
  char name[64] = "";
  int fd = -1;
  if (me == 0) {
    snprintf(name, sizeof(name), "/%.40s.%d", argc > 2 ? argv[2] : "mana_posix_shm", (int)getpid());
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, BYTES) != 0)
      mt_die("cannot make the shared memory segment");
  }
  MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (me != 0 && (fd = shm_open(name, O_RDWR, 0)) < 0)
    mt_die("cannot open the shared memory segment");
  int *slots = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (slots == MAP_FAILED)
    mt_die("mmap failed");
  const int removed = argc > 3 && strcmp(argv[3], "removed") == 0;
  if (me != 0 || removed)
    close(fd);
  if (removed) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0 && shm_unlink(name) != 0)
      mt_die("cannot remove the shared memory segment");
  }
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    slots[r * MAX_RANKS + me] = value(r, me);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i <= r; i++)
      for (int k = 0; k < mt_.size && k < MAX_RANKS; k++)
        bad += slots[i * MAX_RANKS + k] != value(i, k);
    struct stat st;
    if (me == 0 && !removed && (fstat(fd, &st) != 0 || st.st_size != BYTES))
      bad++;
    if (bad)
      mt_check(0, "round %d: %d stores of the ranks missing from the shared memory", r, bad);
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose shared memory held every rank's stores", rounds - bad_rounds, rounds);
  munmap(slots, BYTES);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0 && !removed) {
    close(fd);
    shm_unlink(name);
  }
  return mt_end();
}
