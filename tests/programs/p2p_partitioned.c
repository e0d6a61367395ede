/* Partitioned point-to-point communication (MPI 4: MPI_Psend_init, MPI_Precv_init, MPI_Pready,
 * MPI_Parrived) in every state a checkpoint can find it in, for a restart to resume:
 *
 *  - two pairs of the same signature (communicator, sender, receiver, tag), which MPI matches
 *    in the order they were made, one of each direction;
 *  - a pair on a duplicate of MPI_COMM_WORLD freed right after the initializations, with a
 *    derived datatype freed too;
 *  - a pair of a rank with itself on MPI_COMM_SELF;
 *  - rounds where the receiver starts first and polls MPI_Parrived while the sender marks
 *    partitions ready one at a time with other MPI calls between them, and rounds where the
 *    sender has marked every partition before the receiver starts;
 *  - a pair one side frees before the other, then a new pair of the same signature: the old
 *    request left must not match the new one;
 *  - a receiver that waits in MPI_Recv for a zero-byte message of MPI_DATATYPE_NULL before
 *    it starts, while the sender tests its request (MPICH's part/nonblocking_pready).
 *
 * Every round's data depends on the round and the partition; the receiver checks it, and
 * rank 0 prints a sum per round, so a run under mana, restarted anywhere, must print what
 * the native run prints.  usage: p2p_partitioned [ROUNDS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PARTS 8
#define PER 4 /* ints per partition */

static int rank, errors;

static void check(int rc, const char *what)
{
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "rank %d: %s failed (%d)\n", rank, what, rc);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static int value(int pair, int round, int part, int k)
{
  return pair * 100000 + round * 1000 + part * 10 + k;
}

static void fill(int *buf, int pair, int round)
{
  for (int p = 0; p < PARTS; p++)
    for (int k = 0; k < PER; k++)
      buf[p * PER + k] = value(pair, round, p, k);
}

static long verify(const int *buf, int pair, int round)
{
  long sum = 0;
  for (int p = 0; p < PARTS; p++)
    for (int k = 0; k < PER; k++) {
      if (buf[p * PER + k] != value(pair, round, p, k) && errors++ < 5)
        printf("rank %d: pair %d round %d partition %d: %d, expected %d\n", rank, pair, round, p,
               buf[p * PER + k], value(pair, round, p, k));
      sum += buf[p * PER + k];
    }
  return sum;
}

/* A little traffic between the two ranks: a point where both are inside MPI. */
static void nudge(int peer)
{
  int out = rank, in = -1;
  check(MPI_Sendrecv(&out, 1, MPI_INT, peer, 99, &in, 1, MPI_INT, peer, 99, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
}

/* One round of a pair between the two ranks.  receiver_first: the receiver starts and polls
 * while the sender marks partitions one by one; else the sender marks them all first. */
static long round_pair(MPI_Request req, int *buf, int sender, int pair, int r, int receiver_first)
{
  int peer = 1 - rank;
  long sum = 0;
  if (rank == sender) {
    fill(buf, pair, r);
    check(MPI_Start(&req), "MPI_Start (send)");
    for (int p = 0; p < PARTS; p++) {
      if (p == PARTS / 2) {
        check(MPI_Pready_range(p, p + 1, req), "MPI_Pready_range");
      } else if (p == PARTS - 1) {
        int list[1] = {p};
        check(MPI_Pready_list(1, list, req), "MPI_Pready_list");
      } else if (p != PARTS / 2 + 1) { /* marked with the range */
        check(MPI_Pready(p, req), "MPI_Pready");
      }
      if (receiver_first)
        nudge(peer);
    }
    if (!receiver_first)
      nudge(peer); /* the receiver starts only now */
    check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (send)");
  } else {
    if (!receiver_first)
      nudge(peer);
    check(MPI_Start(&req), "MPI_Start (receive)");
    if (receiver_first) {
      for (int p = 0; p < PARTS; p++)
        nudge(peer);
      for (int p = 0; p < PARTS; p++) {
        int flag = 0;
        while (!flag)
          check(MPI_Parrived(req, p, &flag), "MPI_Parrived");
      }
    }
    check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (receive)");
    sum = verify(buf, pair, r);
  }
  return sum;
}

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? atoi(argv[1]) : 6, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "p2p_partitioned: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int peer = 1 - rank;
  static int a[PARTS * PER], b[PARTS * PER], c[PARTS * PER], d[PARTS * PER];
  static int self_out[PARTS * PER], self_in[PARTS * PER];
  MPI_Request ra, rb, rc, rd, rs_send, rs_recv;

  /* a: 0 -> 1 tag 7, then b: 0 -> 1 tag 7 (the same signature); c: 1 -> 0 tag 7 */
  if (rank == 0) {
    check(MPI_Psend_init(a, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &ra),
          "MPI_Psend_init a");
    check(MPI_Psend_init(b, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rb),
          "MPI_Psend_init b");
    check(MPI_Precv_init(c, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rc),
          "MPI_Precv_init c");
  } else {
    check(MPI_Precv_init(a, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &ra),
          "MPI_Precv_init a");
    check(MPI_Precv_init(b, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rb),
          "MPI_Precv_init b");
    check(MPI_Psend_init(c, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rc),
          "MPI_Psend_init c");
  }
  /* d: 1 -> 0 on a duplicate freed at once, two ints per element of a derived type */
  MPI_Comm dup;
  MPI_Datatype pairs;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  check(MPI_Type_contiguous(2, MPI_INT, &pairs), "MPI_Type_contiguous");
  check(MPI_Type_commit(&pairs), "MPI_Type_commit");
  if (rank == 1)
    check(MPI_Psend_init(d, PARTS, PER / 2, pairs, 0, 3, dup, MPI_INFO_NULL, &rd),
          "MPI_Psend_init d");
  else
    check(MPI_Precv_init(d, PARTS, PER / 2, pairs, 1, 3, dup, MPI_INFO_NULL, &rd),
          "MPI_Precv_init d");
  check(MPI_Type_free(&pairs), "MPI_Type_free");
  check(MPI_Comm_free(&dup), "MPI_Comm_free");
  /* each rank with itself */
  check(MPI_Precv_init(self_in, PARTS, PER, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_INFO_NULL, &rs_recv),
        "MPI_Precv_init self");
  check(MPI_Psend_init(self_out, PARTS, PER, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_INFO_NULL, &rs_send),
        "MPI_Psend_init self");

  for (int r = 0; r < rounds; r++) {
    long sums[5] = {0};
    sums[0] = round_pair(ra, a, 0, 1, r, r % 2 == 0);
    sums[1] = round_pair(rb, b, 0, 2, r, r % 2 == 1);
    sums[2] = round_pair(rc, c, 1, 3, r, 1);
    sums[3] = round_pair(rd, d, 1, 4, r, r % 3 != 0);
    fill(self_out, 5 + rank, r);
    check(MPI_Start(&rs_recv), "MPI_Start self receive");
    check(MPI_Start(&rs_send), "MPI_Start self send");
    check(MPI_Pready_range(0, PARTS - 1, rs_send), "MPI_Pready_range self");
    nudge(peer);
    check(MPI_Wait(&rs_send, MPI_STATUS_IGNORE), "MPI_Wait self send");
    check(MPI_Wait(&rs_recv, MPI_STATUS_IGNORE), "MPI_Wait self receive");
    sums[4] = verify(self_in, 5 + rank, r);
    long total[5];
    check(MPI_Reduce(sums, total, 5, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (rank == 0)
      printf("round %d: %ld %ld %ld %ld %ld\n", r, total[0], total[1], total[2], total[3],
             total[4]);
  }

  /* b's receiver goes first; a checkpoint between the frees finds b's sender without a
   * partner, and a new pair of the same signature must still meet its own partner */
  if (rank == 1)
    check(MPI_Request_free(&rb), "MPI_Request_free b");
  for (int k = 0; k < 16; k++) /* wide enough for evenly spaced points to land in */
    nudge(peer);
  if (rank == 0)
    check(MPI_Request_free(&rb), "MPI_Request_free b");
  MPI_Request re;
  static int e[PARTS * PER];
  if (rank == 0)
    check(MPI_Psend_init(e, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &re),
          "MPI_Psend_init e");
  else
    check(MPI_Precv_init(e, PARTS, PER, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &re),
          "MPI_Precv_init e");
  for (int r = 0; r < 2; r++) {
    long sum = round_pair(re, e, 0, 6, r, r == 0), total = 0;
    check(MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (rank == 0)
      printf("new pair round %d: %ld\n", r, total);
  }

  /* As MPICH's part/nonblocking_pready: the receiver starts only once a zero-byte message of
   * MPI_DATATYPE_NULL arrives, which it waits for while the sender tests its request; a
   * checkpoint then finds that receive pending (refused before: "no usable datatype") */
  {
    long sum = 0, total = 0;
    if (rank == 0) {
      fill(e, 6, 2);
      check(MPI_Start(&re), "MPI_Start e");
      check(MPI_Pready_range(0, PARTS - 1, re), "MPI_Pready_range e");
      for (int k = 0; k < 48; k++) { /* wider than the points' spacing */
        int flag = 0;
        check(MPI_Test(&re, &flag, MPI_STATUS_IGNORE), "MPI_Test e");
        if (flag)
          printf("the send completed before its receive started\n");
      }
      check(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, 1, 0, MPI_COMM_WORLD), "MPI_Send");
      check(MPI_Wait(&re, MPI_STATUS_IGNORE), "MPI_Wait e");
    } else {
      check(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
      check(MPI_Start(&re), "MPI_Start e");
      check(MPI_Wait(&re, MPI_STATUS_IGNORE), "MPI_Wait e");
      sum = verify(e, 6, 2);
    }
    check(MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (rank == 0)
      printf("new pair round 2: %ld\n", total);
  }

  MPI_Request all[] = {ra, rc, rd, rs_send, rs_recv, re};
  for (int k = 0; k < 6; k++)
    check(MPI_Request_free(&all[k]), "MPI_Request_free");
  int bad = 0;
  MPI_Allreduce(&errors, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s: %d wrong values\n", bad ? "FAIL" : "ok", bad);
  MPI_Finalize();
  return bad != 0;
}
