/*
 * sysv_shm.c - ranks of one node sharing System V shared memory (shmget + shmat), as older
 * hybrid codes and their libraries share a table within a node.
 *
 * Rank 0 makes a segment of 4 pages (IPC_PRIVATE, or with "keyed" under a key made from its
 * pid) and tells the others its id by a broadcast; every rank attaches it where the kernel
 * chooses.  Every round each rank stores a value in its own slot of the round, then, after a
 * barrier, checks every slot of every rank stored so far, and reduces on MPI_COMM_WORLD (the
 * checkpoints fall there).  Rank 0 asks shmctl(IPC_STAT) for the segment's size and number of
 * attaches every round, with the id it was given: a program keeps that id in its memory.
 * With "removed", rank 0 marks the segment for removal (IPC_RMID) once every rank has
 * attached it, the idiom that leaks nothing when the job dies; else it removes it at the end.
 * With "keyed", every rank finds the segment by its key (shmget without IPC_CREAT), and rank 0
 * looks it up by key again every round: the key is PREFIX (hex, default 6d61) in its upper 16
 * bits and rank 0's pid in the lower ones, so that a test can remove what a killed run left
 * (tests/restart/remove_orphan_sysv_shm.sh).  Ranks: 2 (on one node).
 * Arguments: [ROUNDS] [removed|keyed|plain] [PREFIX].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
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
  mt_begin("sysv_shm");
  mt_require_size(2);
  int rounds = (int)mt_arg("sysv_shm", argc, argv, 1, 40);
  if (rounds > (int)ROUND_SLOTS)
    rounds = (int)ROUND_SLOTS;
  const char *how = argc > 2 ? argv[2] : "plain";
  const int removed = strcmp(how, "removed") == 0, keyed = strcmp(how, "keyed") == 0;
  int me = mt_.rank;
  int id[2] = {-1, 0}; /* the segment's id and key */
  if (me == 0) {
    unsigned prefix = (unsigned)strtoul(argc > 3 ? argv[3] : "6d61", NULL, 16) & 0x7fff;
    key_t key = keyed ? (key_t)(prefix << 16 | ((unsigned)getpid() & 0xffff)) : IPC_PRIVATE;
    id[0] = shmget(key, BYTES, IPC_CREAT | IPC_EXCL | 0600);
    id[1] = (int)key;
    if (id[0] < 0)
      mt_die("cannot make the System V shared memory segment");
  }
  MPI_Bcast(id, 2, MPI_INT, 0, MPI_COMM_WORLD);
  if (keyed && me != 0 && shmget((key_t)id[1], 0, 0600) != id[0])
    mt_die("the segment's key does not find its id");
  int *slots = shmat(id[0], NULL, 0);
  if (slots == (void *)-1)
    mt_die("shmat failed");
  MPI_Barrier(MPI_COMM_WORLD);
  if (removed && me == 0 && shmctl(id[0], IPC_RMID, NULL) != 0)
    mt_die("cannot mark the segment for removal");
  long bad_rounds = 0;
  for (int r = 0; r < rounds; r++) {
    slots[r * MAX_RANKS + me] = value(r, me);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i <= r; i++)
      for (int k = 0; k < mt_.size && k < MAX_RANKS; k++)
        bad += slots[i * MAX_RANKS + k] != value(i, k);
    if (bad)
      mt_check(0, "round %d: %d stores of the ranks missing from the shared memory", r, bad);
    if (me == 0) {
      struct shmid_ds ds;
      int ok = shmctl(id[0], IPC_STAT, &ds) == 0 && ds.shm_segsz == BYTES &&
               ds.shm_nattch == (shmatt_t)mt_.size;
      if (!ok)
        mt_check(0, "round %d: shmctl(IPC_STAT) of the segment's id: %s", r,
                 errno ? strerror(errno) : "wrong size or attaches");
      if (keyed && shmget((key_t)id[1], 0, 0600) != id[0]) {
        mt_check(0, "round %d: the key no longer finds the segment's id", r);
        ok = 0;
      }
      bad += !ok;
    }
    bad_rounds += bad != 0;
    mt_allreduce_steps(1);
  }
  mt_check_int("rounds whose shared memory held every rank's stores", rounds - bad_rounds, rounds);
  if (shmdt(slots) != 0)
    mt_check(0, "shmdt: %s", strerror(errno));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0 && !removed && shmctl(id[0], IPC_RMID, NULL) != 0)
    mt_check(0, "cannot remove the segment at the end: %s", strerror(errno));
  return mt_end();
}
