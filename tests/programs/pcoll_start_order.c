/*
 * pcoll_start_order.c - persistent collective requests of one communicator started in a
 * different order on each rank, as MPI 4.1 (7.13) allows unless the info key
 * mpi_assert_strict_persistent_collective_ordering says otherwise: MPI_Start one by one in an
 * order that rotates with the rank and the round, with a probe between the starts, and every
 * fourth round MPI_Startall over an array in rank-dependent order; then MPI_Waitall.  Even
 * ranks compute before their starts and odd ranks after them, so that a checkpoint asked for
 * by an odd rank between its starts finds the even ones before theirs.  A
 * checkpoint counted the starts on the communicator, so two ranks that had started A and B,
 * and C and B, looked even while A and C were pending on one side each, and the drain timed
 * out (found by the MPI 4.1 examples, tests/mpi_standard/std4_pcoll.c).  Then the same with
 * requests made and freed every round.
 * Expected: the sums of every round, identical under mana.
 * Ranks: 2 or more.
 */
#include "mpitest.h"

#define NREQ 3
#define ROUNDS 24

static uint64_t work(int round)
{
  uint64_t h = (uint64_t)round;
  for (int i = 0; i < 400000; i++)
    h = mt_mix(h + (uint64_t)i);
  return h;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("pcoll_start_order");
  int rank = mt_.rank, size = mt_.size;
  int sum_in, sum_out, bcast[4], *a2a_in = mt_alloc(sizeof(int) * (size_t)size),
                                 *a2a_out = mt_alloc(sizeof(int) * (size_t)size);
  MPI_Request req[NREQ];
  MPI_Allreduce_init(&sum_in, &sum_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                     &req[0]);
  MPI_Bcast_init(bcast, 4, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
  MPI_Alltoall_init(a2a_in, 1, MPI_INT, a2a_out, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                    &req[2]);
  int wrong = 0;
  uint64_t digest = 0, expect = 0;
  for (int round = 0; round < ROUNDS; round++)
    expect ^= work(round);
  for (int round = 0; round < ROUNDS; round++) {
    sum_in = rank + round;
    for (int k = 0; k < 4; k++)
      bcast[k] = rank == 0 ? round * 10 + k : -1;
    for (int q = 0; q < size; q++)
      a2a_in[q] = rank * 100 + q + round;
    if (rank % 2 == 0)
      digest ^= work(round);
    if (round % 4 == 3) {
      MPI_Request order[NREQ];
      for (int i = 0; i < NREQ; i++)
        order[i] = req[rank % 2 ? NREQ - 1 - i : i];
      MPI_Startall(NREQ, order);
    } else {
      for (int i = 0; i < NREQ; i++) {
        int flag;
        MPI_Start(&req[(i + rank + round) % NREQ]);
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
    }
    if (rank % 2)
      digest ^= work(round);
    MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE);
    wrong += sum_out != size * round + size * (size - 1) / 2;
    for (int k = 0; k < 4; k++)
      wrong += bcast[k] != round * 10 + k;
    for (int q = 0; q < size; q++)
      wrong += a2a_out[q] != q * 100 + rank + round;
  }
  mt_check_int("values wrong over all rounds", wrong, 0);
  mt_check_int("the computation between the starts", digest == expect, 1);
  mt_check_int("the last allreduce", sum_out, size * (ROUNDS - 1) + size * (size - 1) / 2);
  for (int i = 0; i < NREQ; i++)
    MPI_Request_free(&req[i]);

  /* Requests made, started and freed every round: each one's clock group is dropped at its
   * free, and the communicator's count of the frees keeps a later safe point after every
   * member's starts. */
  int wrong_made = 0;
  for (int round = 0; round < ROUNDS; round++) {
    MPI_Request pair[2];
    MPI_Allreduce_init(&sum_in, &sum_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &pair[0]);
    MPI_Bcast_init(bcast, 4, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &pair[1]);
    sum_in = rank * round;
    for (int k = 0; k < 4; k++)
      bcast[k] = rank == 0 ? round + k : -1;
    if (rank % 2 == 0)
      digest ^= work(round);
    MPI_Start(&pair[rank % 2]);
    MPI_Start(&pair[1 - rank % 2]);
    if (rank % 2)
      digest ^= work(round);
    MPI_Waitall(2, pair, MPI_STATUSES_IGNORE);
    wrong_made += sum_out != round * size * (size - 1) / 2;
    for (int k = 0; k < 4; k++)
      wrong_made += bcast[k] != round + k;
    MPI_Request_free(&pair[0]);
    MPI_Request_free(&pair[1]);
  }
  mt_check_int("values wrong with requests made every round", wrong_made, 0);
  mt_check_int("the computation of both loops (each round twice)", digest == 0, 1);
  free(a2a_in);
  free(a2a_out);
  return mt_end();
}
