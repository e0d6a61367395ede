/*
 * std_comm_groups.c - groups and communicators made from them: MPI_Group_incl/excl,
 * MPI_Comm_create, MPI_Comm_split, and communication on each, as in the motivating examples
 * of the groups chapter.
 *
 * Source: MPI-3.1, section 6.5 "Motivating Examples":
 *   6.5.1 Current Practice #1, Example #1b: even ranks send to the next odd rank;
 *   6.5.2 Current Practice #2: a broadcast of data prepared by rank 0;
 *   6.5.3 (Approximate) Current Practice #3: MPI_Group_excl of rank 0, MPI_Comm_create of
 *         "commslave", a reduction on it by every rank but 0, then a reduction on
 *         MPI_COMM_WORLD that rank 0 reaches first;
 *   6.5.4 Example #4: MPI_Group_incl of a list of ranks, MPI_Comm_create, a ring
 *         MPI_Irecv(MPI_ANY_SOURCE)/MPI_Isend on the new communicator with reductions
 *         between the start and MPI_Waitall, then the frees;
 *   6.5.6 Library Example #2 (variants 2A/2B with the barrier of 2C): two overlapping
 *         communicators from group_a and group_b, lib_call() receiving with MPI_ANY_SOURCE
 *         and MPI_ANY_TAG at rank 0 of the communicator;
 *   and section 6.4.2 (MPI_COMM_SPLIT): a split by parity with the keys reversing the order.
 * Adaptations: Example #4's list {2,4,6,8} becomes {size-1,...,1} (rank 0 left out, as the
 * example leaves ranks out) at 3 or more ranks and {1,0} at 2; commslave's reduction root 1
 * becomes 0 when commslave has a single member; list_b {0,2,3} keeps the ranks that exist
 * (so at 2 ranks comm_b holds rank 0 alone); lib_call's root receives one message from each
 * other member and sums them ("done" when all arrived).  Everything is created, used and
 * freed in each of ROUNDS rounds with different data, and every result is compared with the
 * value computed from the ranks.
 * Ranks: 2 or more (4 gives the 2B list).
 */
#include "../programs/mpitest.h"

#define ROUNDS 5
#define TAG_ARBITRARY 12345
#define SOME_COUNT 6

static int lib_calls_ok = 0, lib_calls = 0;

/* Library Example #2's lib_call (with the MPI_Barrier of variant 2C). */
static void lib_call(MPI_Comm comm, int round, int call)
{
  int me, n;
  MPI_Status status;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  if (me == 0) {
    long sum = 0, want = 0;
    for (int got = 0; got < n - 1; got++) {
      int v;
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status);
      if (status.MPI_TAG != 100 + status.MPI_SOURCE)
        sum += 1000000;
      sum += v;
    }
    for (int r = 1; r < n; r++)
      want += r * 10 + round + call;
    lib_calls_ok += sum == want;
  } else {
    int v = me * 10 + round + call;
    MPI_Send(&v, 1, MPI_INT, 0, 100 + me, comm);
    lib_calls_ok++;
  }
  lib_calls++;
  MPI_Barrier(comm);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_comm_groups");
  int me = mt_.rank, size = mt_.size;
  int bad[6] = {0};

  for (int round = 0; round < ROUNDS; round++) {
    /* #1b: even ranks send to the next odd rank */
    {
      int SOME_TAG = 0, v = me * 100 + round;
      MPI_Status status;
      if ((me % 2) == 0) {
        if ((me + 1) < size)
          MPI_Send(&v, 1, MPI_INT, me + 1, SOME_TAG, MPI_COMM_WORLD);
      } else {
        MPI_Recv(&v, 1, MPI_INT, me - 1, SOME_TAG, MPI_COMM_WORLD, &status);
        bad[0] += v != (me - 1) * 100 + round;
      }
    }
    /* #2: a broadcast of data prepared by rank 0 */
    {
      char data[64];
      int count = (int)sizeof data;
      memset(data, 0, sizeof data);
      if (me == 0)
        snprintf(data, sizeof data, "input of round %d", round);
      MPI_Bcast(data, count, MPI_BYTE, 0, MPI_COMM_WORLD);
      char want[64];
      memset(want, 0, sizeof want);
      snprintf(want, sizeof want, "input of round %d", round);
      bad[1] += memcmp(data, want, sizeof data) != 0;
    }
    /* #3: a communicator of all but rank 0 */
    {
      MPI_Group group_world, grprem;
      MPI_Comm commslave;
      static int ranks[] = {0};
      int send_buf[4], recv_buf[4] = {0}, send_buf2[2], recv_buf2[2] = {0};
      MPI_Comm_group(MPI_COMM_WORLD, &group_world);
      MPI_Group_excl(group_world, 1, ranks, &grprem);
      MPI_Comm_create(MPI_COMM_WORLD, grprem, &commslave);
      if (me != 0) {
        int sroot = size - 1 > 1 ? 1 : 0;
        for (int k = 0; k < 4; k++)
          send_buf[k] = me * (k + 1) + round;
        MPI_Reduce(send_buf, recv_buf, 4, MPI_INT, MPI_SUM, sroot, commslave);
        int srank;
        MPI_Comm_rank(commslave, &srank);
        bad[2] += srank != me - 1;
        if (srank == sroot)
          for (int k = 0; k < 4; k++) {
            int want = 0;
            for (int r = 1; r < size; r++)
              want += r * (k + 1) + round;
            bad[2] += recv_buf[k] != want;
          }
        MPI_Comm_free(&commslave);
      } else
        bad[2] += commslave != MPI_COMM_NULL;
      /* zero falls through immediately to this reduce, others do later... */
      send_buf2[0] = me;
      send_buf2[1] = round;
      MPI_Reduce(send_buf2, recv_buf2, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
      if (me == 0)
        bad[2] += recv_buf2[0] != size * (size - 1) / 2 || recv_buf2[1] != size * round;
      MPI_Group_free(&group_world);
      MPI_Group_free(&grprem);
    }
    /* #4: point-to-point and collectives on one communicator */
    {
      MPI_Request request[2];
      MPI_Status status[2];
      MPI_Group group_world, subgroup;
      int ranks[8], n = 0, sub_me;
      MPI_Comm the_comm;
      if (size >= 3)
        for (int r = size - 1; r >= 1; r--)
          ranks[n++] = r;
      else {
        ranks[n++] = 1;
        ranks[n++] = 0;
      }
      MPI_Comm_group(MPI_COMM_WORLD, &group_world);
      MPI_Group_incl(group_world, n, ranks, &subgroup);
      MPI_Group_rank(subgroup, &sub_me);
      MPI_Comm_create(MPI_COMM_WORLD, subgroup, &the_comm);
      if (sub_me != MPI_UNDEFINED) {
        double buff1[8], buff2[8];
        for (int k = 0; k < 8; k++)
          buff2[k] = sub_me * 10.0 + k + round;
        MPI_Irecv(buff1, 8, MPI_DOUBLE, MPI_ANY_SOURCE, TAG_ARBITRARY, the_comm, request);
        MPI_Isend(buff2, 8, MPI_DOUBLE, (sub_me + 1) % n, TAG_ARBITRARY, the_comm, request + 1);
        for (int i = 0; i < SOME_COUNT; i++) {
          int v = sub_me + i, s = -1;
          MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, i % n, the_comm);
          if (sub_me == i % n)
            bad[3] += s != n * (n - 1) / 2 + n * i;
        }
        MPI_Waitall(2, request, status);
        int from = (sub_me + n - 1) % n;
        bad[3] += status[0].MPI_SOURCE != from;
        for (int k = 0; k < 8; k++)
          bad[3] += buff1[k] != from * 10.0 + k + round;
        /* the sub-rank is the position in the list */
        bad[3] += ranks[sub_me] != me;
        MPI_Comm_free(&the_comm);
      } else
        bad[3] += the_comm != MPI_COMM_NULL || me != 0;
      MPI_Group_free(&group_world);
      MPI_Group_free(&subgroup);
    }
    /* Library Example #2 */
    {
      int ma = -1, mb = -1;
      MPI_Group group_world, group_a, group_b;
      MPI_Comm comm_a, comm_b;
      static int list_a[] = {0, 1};
      int list_b[3], size_list_b = 0;
      int cand[3] = {0, 2, 3};
      for (int i = 0; i < 3; i++)
        if (cand[i] < size)
          list_b[size_list_b++] = cand[i];
      int size_list_a = sizeof(list_a) / sizeof(int);
      MPI_Comm_group(MPI_COMM_WORLD, &group_world);
      MPI_Group_incl(group_world, size_list_a, list_a, &group_a);
      MPI_Group_incl(group_world, size_list_b, list_b, &group_b);
      MPI_Comm_create(MPI_COMM_WORLD, group_a, &comm_a);
      MPI_Comm_create(MPI_COMM_WORLD, group_b, &comm_b);
      if (comm_a != MPI_COMM_NULL)
        MPI_Comm_rank(comm_a, &ma);
      if (comm_b != MPI_COMM_NULL)
        MPI_Comm_rank(comm_b, &mb);
      int want_ma = me < 2 ? me : -1, want_mb = -1;
      for (int i = 0; i < size_list_b; i++)
        if (list_b[i] == me)
          want_mb = i;
      bad[4] += ma != want_ma || mb != want_mb;
      if (comm_a != MPI_COMM_NULL)
        lib_call(comm_a, round, 0);
      if (comm_b != MPI_COMM_NULL) {
        lib_call(comm_b, round, 1);
        lib_call(comm_b, round, 2);
      }
      if (comm_a != MPI_COMM_NULL)
        MPI_Comm_free(&comm_a);
      if (comm_b != MPI_COMM_NULL)
        MPI_Comm_free(&comm_b);
      MPI_Group_free(&group_a);
      MPI_Group_free(&group_b);
      MPI_Group_free(&group_world);
    }
    /* MPI_Comm_split: parity colours, keys reversing the order */
    {
      MPI_Comm half;
      int color = me % 2, key = -me, hr, hs;
      MPI_Comm_split(MPI_COMM_WORLD, color, key, &half);
      MPI_Comm_rank(half, &hr);
      MPI_Comm_size(half, &hs);
      int members = (size - color + 1) / 2;
      bad[5] += hs != members;
      /* ranks in reverse order of the world ranks of that colour */
      int above = 0;
      for (int r = me + 2; r < size; r += 2)
        above++;
      bad[5] += hr != above;
      int v = me, s = 0;
      MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, half);
      int want = 0;
      for (int r = color; r < size; r += 2)
        want += r;
      bad[5] += s != want;
      MPI_Comm_free(&half);
    }
  }
  const char *names[6] = {"#1b even to odd",           "#2 bcast",
                          "#3 commslave (group_excl)", "#4 group_incl ring and reduces",
                          "library example #2 ranks",  "comm_split by parity"};
  for (int i = 0; i < 6; i++) {
    char what[96];
    snprintf(what, sizeof what, "%s: wrong results", names[i]);
    mt_check_int(what, bad[i], 0);
  }
  char what[96];
  snprintf(what, sizeof what, "library example #2: lib_call results right (of %d)", lib_calls);
  mt_check_int(what, lib_calls_ok, lib_calls);
  mt_allreduce_steps(4);
  return mt_end();
}
