/*
 * std_intercomm.c - intercommunicators: made with MPI_Intercomm_create between the groups
 * of a split, subset with MPI_Comm_create, split with MPI_Comm_split, merged, and used for
 * point-to-point and collective communication.
 *
 * Source: MPI-3.1:
 *   section 6.6.3 "Inter-Communication Examples": Example 1, the three-group "pipeline"
 *     (group 0 talks to group 1, group 1 to group 2), and Example 2, the three-group "ring"
 *     (every pair of groups), both with membershipKey = rank % 3, MPI_Comm_split into the
 *     local groups, MPI_Intercomm_create with the hard-coded tags 1, 2 and 12, and the frees;
 *   section 6.4.2 (Communicator Constructors), the example of MPI_Comm_create on an
 *     intercommunicator (the first process of the left side joined with the whole right
 *     side) and the "parallel client-server model" example of MPI_Comm_split on an
 *     intercommunicator (each client assigned to one server by color = rank % num_servers).
 * Adaptations: the "Do work ..." of the examples is filled in: on every intercommunicator
 * each process sends its world rank to rank (local rank % remote size) of the remote group
 * and receives from every remote process that chose it, then an MPI_Allreduce and an
 * MPI_Bcast across the intercommunicator; the number of groups is 3 from 3 ranks up and 2
 * at 2 ranks (then the pipeline and the ring have one intercommunicator).  The client-server
 * split and the create use the pipeline's group-0/group-1 intercommunicator (group 0 is the
 * left side, the clients).  MPI_Intercomm_merge of each intercommunicator is added.
 * ROUNDS rounds create, use and free everything again with different data.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 4

static int ngroups, wrank, wsize;
static int bad_p2p, bad_coll, bad_merge;

static int group_size(int g)
{
  int n = 0;
  for (int r = 0; r < wsize; r++)
    n += r % ngroups == g;
  return n;
}
/* world rank of local rank i of group g */
static int world_of(int g, int i)
{
  return g + i * ngroups;
}

/* Work on an intercommunicator between my group and group rg. */
static void do_work(MPI_Comm inter, int myg, int rg, int round)
{
  int lrank, lsize, rsize, flag;
  MPI_Comm_test_inter(inter, &flag);
  MPI_Comm_rank(inter, &lrank);
  MPI_Comm_size(inter, &lsize);
  MPI_Comm_remote_size(inter, &rsize);
  bad_coll +=
      !flag || lsize != group_size(myg) || rsize != group_size(rg) || world_of(myg, lrank) != wrank;

  /* point-to-point: to remote rank lrank % rsize; receive from every remote i with i %
   * lsize == lrank */
  MPI_Request sreq;
  int payload = wrank * 100 + round;
  MPI_Isend(&payload, 1, MPI_INT, lrank % rsize, 7, inter, &sreq);
  for (int i = 0; i < rsize; i++)
    if (i % lsize == lrank) {
      int v;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, i, 7, inter, &st);
      bad_p2p += v != world_of(rg, i) * 100 + round || st.MPI_SOURCE != i;
    }
  MPI_Wait(&sreq, MPI_STATUS_IGNORE);

  /* allreduce: the sum of the remote group's values */
  int mine = wrank + round, sum = 0, want = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter);
  for (int i = 0; i < rsize; i++)
    want += world_of(rg, i) + round;
  bad_coll += sum != want;

  /* bcast from rank 0 of the lower-numbered group */
  int val = -1;
  int low = myg < rg;
  if (low)
    val = lrank == 0 ? 5000 + round * 10 + myg : -1;
  MPI_Bcast(&val, 1, MPI_INT, low ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter);
  if (!low)
    bad_coll += val != 5000 + round * 10 + rg;

  /* merge: the lower group first */
  MPI_Comm merged;
  int mr, ms;
  MPI_Intercomm_merge(inter, low ? 0 : 1, &merged);
  MPI_Comm_rank(merged, &mr);
  MPI_Comm_size(merged, &ms);
  bad_merge += ms != lsize + rsize || mr != (low ? lrank : group_size(rg) + lrank);
  int one = 1, n = 0;
  MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, merged);
  bad_merge += n != ms;
  MPI_Comm_free(&merged);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_intercomm");
  wrank = mt_.rank;
  wsize = mt_.size;
  ngroups = wsize >= 3 ? 3 : 2;
  int bad_create = 0, bad_split = 0;

  for (int round = 0; round < ROUNDS; round++) {
    MPI_Comm myComm, myFirstComm = MPI_COMM_NULL, mySecondComm = MPI_COMM_NULL;
    int membershipKey = wrank % ngroups;
    MPI_Comm_split(MPI_COMM_WORLD, membershipKey, wrank, &myComm);

    /* Example 1: pipeline */
    if (membershipKey == 0) {
      MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 1, 1, &myFirstComm);
      do_work(myFirstComm, 0, 1, round);
    } else if (membershipKey == 1) {
      MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 0, 1, &myFirstComm);
      if (ngroups == 3)
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 2, 12, &mySecondComm);
      do_work(myFirstComm, 1, 0, round);
      if (ngroups == 3)
        do_work(mySecondComm, 1, 2, round);
    } else if (membershipKey == 2) {
      MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 1, 12, &myFirstComm);
      do_work(myFirstComm, 2, 1, round);
    }

    /* section 6.4.2: MPI_Comm_create on the group-0/group-1 intercommunicator: the first
     * process of the left side (group 0) with all of the right side (group 1) */
    if (membershipKey <= 1) {
      MPI_Comm new_inter_comm;
      MPI_Group local_group, group;
      int rank0 = 0;
      if (membershipKey == 0) {
        MPI_Comm_group(myFirstComm, &local_group);
        MPI_Group_incl(local_group, 1, &rank0, &group);
        MPI_Group_free(&local_group);
      } else
        MPI_Comm_group(myFirstComm, &group);
      MPI_Comm_create(myFirstComm, group, &new_inter_comm);
      MPI_Group_free(&group);
      int lr;
      MPI_Comm_rank(myFirstComm, &lr);
      if (membershipKey == 0 && lr != 0)
        bad_create += new_inter_comm != MPI_COMM_NULL;
      else {
        int rs, ls;
        MPI_Comm_remote_size(new_inter_comm, &rs);
        MPI_Comm_size(new_inter_comm, &ls);
        bad_create += membershipKey == 0 ? (ls != 1 || rs != group_size(1))
                                         : (ls != group_size(1) || rs != 1);
        /* the single left process sends to every right process */
        if (membershipKey == 0)
          for (int i = 0; i < rs; i++) {
            int v = 700 + i + round;
            MPI_Send(&v, 1, MPI_INT, i, 3, new_inter_comm);
          }
        else {
          int v;
          MPI_Recv(&v, 1, MPI_INT, 0, 3, new_inter_comm, MPI_STATUS_IGNORE);
          bad_create += v != 700 + lr + round;
        }
        MPI_Comm_free(&new_inter_comm);
      }

      /* parallel client-server: clients (group 0) each join one server (group 1) */
      MPI_Comm single_server_comm;
      int color, rank, num;
      MPI_Comm_rank(myFirstComm, &rank);
      MPI_Comm_remote_size(myFirstComm, &num);
      if (membershipKey == 0)
        color = rank % num; /* num is the number of servers */
      else
        color = rank; /* one colour per server */
      MPI_Comm_split(myFirstComm, color, rank, &single_server_comm);
      int nclients = group_size(0), nservers = group_size(1);
      if (membershipKey == 1 && rank >= nclients)
        bad_split += single_server_comm != MPI_COMM_NULL; /* a server with no client */
      else {
        int ls, rs, lr2;
        MPI_Comm_size(single_server_comm, &ls);
        MPI_Comm_remote_size(single_server_comm, &rs);
        MPI_Comm_rank(single_server_comm, &lr2);
        int clients_of = 0;
        for (int c = 0; c < nclients; c++)
          clients_of += c % nservers == color;
        if (membershipKey == 0)
          bad_split += ls != clients_of || rs != 1;
        else
          bad_split += ls != 1 || rs != clients_of;
        /* each client sends a request to its server, which answers with the sum */
        if (membershipKey == 0) {
          int req = wrank + round, ans = -1;
          MPI_Send(&req, 1, MPI_INT, 0, 9, single_server_comm);
          MPI_Bcast(&ans, 1, MPI_INT, 0, single_server_comm);
          int want = 0;
          for (int c = 0; c < nclients; c++)
            if (c % nservers == color)
              want += world_of(0, c) + round;
          bad_split += ans != want;
        } else {
          int sum = 0;
          for (int i = 0; i < rs; i++) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 9, single_server_comm, MPI_STATUS_IGNORE);
            sum += v;
          }
          MPI_Bcast(&sum, 1, MPI_INT, MPI_ROOT, single_server_comm);
        }
        MPI_Comm_free(&single_server_comm);
      }
    }

    switch (membershipKey) { /* free communicators appropriately */
    case 1:
      if (mySecondComm != MPI_COMM_NULL)
        MPI_Comm_free(&mySecondComm);
      /* fall through */
    case 0:
    case 2:
      MPI_Comm_free(&myFirstComm);
      break;
    }

    /* Example 2: ring (every pair of groups) */
    if (ngroups == 3) {
      if (membershipKey == 0) {
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 1, 1, &myFirstComm);
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 2, 2, &mySecondComm);
        do_work(myFirstComm, 0, 1, round);
        do_work(mySecondComm, 0, 2, round);
      } else if (membershipKey == 1) {
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 0, 1, &myFirstComm);
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 2, 12, &mySecondComm);
        do_work(myFirstComm, 1, 0, round);
        do_work(mySecondComm, 1, 2, round);
      } else {
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 0, 2, &myFirstComm);
        MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 1, 12, &mySecondComm);
        do_work(myFirstComm, 2, 0, round);
        do_work(mySecondComm, 2, 1, round);
      }
      MPI_Comm_free(&myFirstComm);
      MPI_Comm_free(&mySecondComm);
    } else {
      MPI_Intercomm_create(myComm, 0, MPI_COMM_WORLD, 1 - membershipKey, 1, &myFirstComm);
      do_work(myFirstComm, membershipKey, 1 - membershipKey, round);
      MPI_Comm_free(&myFirstComm);
    }
    MPI_Comm_free(&myComm);
  }
  mt_check_int("intercommunicator point-to-point: wrong", bad_p2p, 0);
  mt_check_int("intercommunicator sizes, allreduce, bcast: wrong", bad_coll, 0);
  mt_check_int("intercommunicator merge: wrong", bad_merge, 0);
  mt_check_int("comm_create on an intercommunicator: wrong", bad_create, 0);
  mt_check_int("client-server comm_split on an intercommunicator: wrong", bad_split, 0);
  mt_allreduce_steps(4);
  return mt_end();
}
