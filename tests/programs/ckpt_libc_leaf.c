/*
 * ckpt_libc_leaf.c - checkpoints while the application is inside the C library's memset and
 * memcpy on large buffers of fresh pages (a page fault every 4 KiB: one call lasts long).  The
 * thread parks where it is, inside the call (it holds no lock of libc's), and a restart
 * resumes it there with the registers it had: the vector registers holding the byte, the
 * progress of `rep stosb`.  MPICH's pt2pt/large_message initializes 2 GB with a loop the
 * compiler makes a memset; its thread could not park until the call returned, and on a loaded
 * machine the checkpoint gave up first.
 *
 * Each round every rank reduces a value on MPI_COMM_WORLD (the checkpoints fall on these
 * calls, just before the copies), sets a fresh buffer of MIB MiB to a byte of the round and
 * rank, copies it into a second fresh buffer and adds up one byte per page of both.
 * Ranks: 2 or more.  Arguments: [ROUNDS] [MIB].
 */
#include <string.h>

#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_libc_leaf");
  int rounds = (int)mt_arg("ckpt_libc_leaf", argc, argv, 1, 8);
  size_t bytes = (size_t)mt_arg("ckpt_libc_leaf", argc, argv, 2, 64) << 20;
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    int in = mt_.rank + round, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    unsigned char *set = mt_alloc(bytes), *copy = mt_alloc(bytes);
    memset(set, (round * 16 + mt_.rank + sum) & 0xff, bytes);
    memcpy(copy, set, bytes);
    long pages = 0;
    for (size_t at = 0; at < bytes; at += 4096)
      pages += set[at] + 2 * copy[bytes - 1 - at];
    mt_check_int("one byte per page of both buffers", pages,
                 3L * ((round * 16 + mt_.rank + sum) & 0xff) * (long)(bytes / 4096));
    total += pages;
    free(set);
    free(copy);
  }
  mt_append("rank %d: total %ld\n", mt_.rank, total);
  return mt_end();
}
