/* The drain's message counters (p2p.h): per world rank, messages sent to it and messages
 * received from it, since MPI_Init.  They are never reset: both sides of every pair keep
 * counting through checkpoints and restarts (the counters are upper-half memory), so the
 * drain compares totals. */
#include "p2p.h"

uint64_t *mana_p2p_sent, *mana_p2p_recvd;
int mana_p2p_world_size, mana_p2p_my_world_rank;

void mana_p2p_init(void)
{
  int size = 0, rank = 0;
  if (mana_p2p_sent)
    return;
  if (MANA_LH_CALL_NOPARK(MPI_Comm_size, MPI_COMM_WORLD, &size) != MPI_SUCCESS ||
      MANA_LH_CALL_NOPARK(MPI_Comm_rank, MPI_COMM_WORLD, &rank) != MPI_SUCCESS || size <= 0)
    return;
  /* One allocation: the drain's exchange needs the sent counts contiguous. */
  uint64_t *both = calloc(2 * (size_t)size, sizeof(uint64_t));
  if (!both)
    return; /* counters stay off (size 0): the drain refuses (drain.c) */
  mana_p2p_sent = both;
  mana_p2p_recvd = both + size;
  mana_p2p_my_world_rank = rank;
  mana_p2p_world_size = size;
  mana_drain_comm_make();
}
