/* The drain's pure parts (wrappers/drained.c, the counters of wrappers/p2p.h): buffered
 * messages are matched exactly as MPI matches receives (communicator, source or
 * MPI_ANY_SOURCE, tag or MPI_ANY_TAG, oldest first, never a receive from MPI_PROC_NULL), and
 * the counters count what leaves and enters MPI per world rank and nothing else. */
#include <criterion/criterion.h>

#include "p2p.h"

/* The counters' storage and comm.c's translation, as the test wants them. */
uint64_t *mana_p2p_sent, *mana_p2p_recvd;
int mana_p2p_world_size, mana_p2p_my_world_rank;
int mana_comm_world_rank(MPI_Comm v, int rank)
{
  return v == (MPI_Comm)0x84000001 && rank >= 0 && rank < 2 ? 3 - rank : -1; /* {3, 2} */
}

#define COMM_A ((MPI_Comm)0x84000001)
#define COMM_B ((MPI_Comm)0x84000002)

static struct mana_drained *add(MPI_Comm comm, int source, int tag, int value)
{
  struct mana_drained *m = mana_drained_new(sizeof(int));
  cr_assert_not_null(m);
  m->comm = comm;
  m->comm_id = (const void *)(uintptr_t)comm;
  m->source = source;
  m->tag = tag;
  *(int *)m->data = value;
  mana_drained_append(m);
  return m;
}

static int take(MPI_Comm comm, int source, int tag)
{
  struct mana_drained *prev = NULL, *m = mana_drained_match(comm, source, tag, &prev);
  if (!m)
    return -1;
  mana_drained_unlink(m, prev);
  int v = *(int *)m->data;
  mana_drained_free(m);
  return v;
}

static void empty(void)
{
  while (mana_drained_head)
    take(mana_drained_head->comm, MPI_ANY_SOURCE, MPI_ANY_TAG);
}

Test(drained, matches_like_mpi_oldest_first)
{
  add(COMM_A, 0, 5, 1);
  add(COMM_A, 1, 5, 2);
  add(COMM_A, 0, 7, 3);
  add(COMM_B, 0, 5, 4);
  add(COMM_A, 0, 5, 5);
  cr_expect_eq(mana_drained_count(), 5);
  cr_expect_eq(take(COMM_A, 0, 7), 3, "a tag overtakes another tag");
  cr_expect_eq(take(COMM_A, MPI_ANY_SOURCE, 5), 1, "any source: the oldest");
  cr_expect_eq(take(COMM_B, MPI_ANY_SOURCE, MPI_ANY_TAG), 4, "communicators are apart");
  cr_expect_eq(take(COMM_A, 0, MPI_ANY_TAG), 5, "any tag from 0");
  cr_expect_eq(take(COMM_A, 0, MPI_ANY_TAG), -1, "nothing left from 0");
  cr_expect_eq(take(COMM_A, MPI_PROC_NULL, MPI_ANY_TAG), -1, "MPI_PROC_NULL matches nothing");
  cr_expect_eq(take(COMM_A, 1, 6), -1, "another tag");
  cr_expect_eq(take(COMM_A, 1, 5), 2);
  cr_expect_null(mana_drained_head);
}

Test(drained, order_survives_unlinking_the_tail)
{
  add(COMM_A, 0, 1, 1);
  add(COMM_A, 0, 2, 2);
  cr_expect_eq(take(COMM_A, 0, 2), 2); /* the tail */
  add(COMM_A, 0, 3, 3);
  cr_expect_eq(take(COMM_A, 0, MPI_ANY_TAG), 1);
  cr_expect_eq(take(COMM_A, 0, MPI_ANY_TAG), 3);
  cr_expect_null(mana_drained_head);
  add(COMM_A, 0, 4, 4); /* the list restarts cleanly */
  cr_expect_eq(take(COMM_A, MPI_ANY_SOURCE, MPI_ANY_TAG), 4);
}

Test(drained, a_freed_communicator_drops_its_messages)
{
  add(COMM_A, 0, 1, 1);
  add(COMM_B, 0, 1, 2);
  add(COMM_A, 0, 1, 3);
  add(COMM_B, 0, 1, 4);
  mana_drained_forget_comm((const void *)(uintptr_t)COMM_A);
  cr_expect_eq(mana_drained_count(), 2);
  cr_expect_eq(take(COMM_A, MPI_ANY_SOURCE, MPI_ANY_TAG), -1);
  cr_expect_eq(take(COMM_B, MPI_ANY_SOURCE, MPI_ANY_TAG), 2);
  add(COMM_B, 0, 1, 5);
  cr_expect_eq(take(COMM_B, MPI_ANY_SOURCE, MPI_ANY_TAG), 4);
  cr_expect_eq(take(COMM_B, MPI_ANY_SOURCE, MPI_ANY_TAG), 5);
  empty();
}

Test(drained, large_messages_get_their_own_mapping)
{
  struct mana_drained *m = mana_drained_new(10 << 20);
  cr_assert_not_null(m);
  cr_expect_geq(m->map_len, sizeof(*m) + (10 << 20));
  m->data[(10 << 20) - 1] = 1; /* writable to the end */
  mana_drained_free(m);
  cr_expect_null(mana_drained_new(-1));
}

Test(counters, count_per_world_rank)
{
  uint64_t both[8] = {0};
  mana_p2p_sent = both;
  mana_p2p_recvd = both + 4;
  mana_p2p_world_size = 4;
  mana_count_send(MPI_COMM_WORLD, 2);
  mana_count_send(MPI_COMM_WORLD, MPI_PROC_NULL);
  mana_count_send(MPI_COMM_WORLD, 4); /* invalid: MPI reports it, nothing was sent */
  mana_count_send(COMM_A, 0);         /* world rank 3 */
  mana_count_send(COMM_A, 1);
  mana_uncount_send(COMM_A, 1); /* a send that never started */
  cr_expect_eq(both[2], 1);
  cr_expect_eq(both[3], 1);
  cr_expect_eq(both[0] + both[1], 0);

  MPI_Status st = {0};
  st.MPI_SOURCE = 1;
  mana_count_recv(COMM_A, &st); /* world rank 2 */
  st.MPI_SOURCE = MPI_PROC_NULL;
  mana_count_recv(COMM_A, &st);
  st.MPI_SOURCE = 0;
  st.count_hi_and_cancelled = 1; /* a cancelled receive took nothing */
  mana_count_recv(MPI_COMM_WORLD, &st);
  st.count_hi_and_cancelled = 0;
  mana_count_recv(MPI_COMM_WORLD, &st);
  cr_expect_eq(both[4 + 2], 1);
  cr_expect_eq(both[4 + 0], 1);
  cr_expect_eq(both[4 + 1] + both[4 + 3], 0);
  mana_p2p_world_size = 0; /* before MPI_Init: nothing counted */
  mana_count_send(MPI_COMM_WORLD, 0);
  cr_expect_eq(both[0], 0);
}
