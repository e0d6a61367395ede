/*
 * std4_isendrecv.c - nonblocking send-receive (MPI_Isendrecv, MPI_Isendrecv_replace), the
 * large-count (_c) forms of point-to-point calls and datatype queries, and communicators
 * duplicated with info (MPI_Comm_dup_with_info, MPI_Comm_idup_with_info, MPI_Comm_get_info,
 * MPI_Comm_set_info) while operations on the parent are pending.
 *
 * Source: MPI-4.1 (section numbers of the HTML edition; none of these sections has an example,
 * the programs follow their definitions):
 *   chapter 4, section 4.2.7 "Blocking Send-Receive" (MPI_Sendrecv, MPI_Sendrecv_replace and
 *     their _c forms: "a shift operation across a chain of MPI processes") and section 4.7.2
 *     "Communication Initiation" (MPI_Isendrecv, MPI_Isendrecv_replace and their _c forms,
 *     completed like any nonblocking operation); section 4.10 "Null MPI Processes" (an
 *     end-off shift whose ends send to and receive from MPI_PROC_NULL);
 *   chapter 3, section "Counts", and chapter 6 (MPI_Type_contiguous_c, MPI_Type_size_c,
 *     MPI_Type_get_extent_c, MPI_Get_count_c, MPI_Get_elements_c, with MPI_Send_c and
 *     MPI_Recv_c);
 *   chapter 8, section 8.4.2 "Communicator Constructors" (MPI_Comm_dup_with_info,
 *     MPI_Comm_idup_with_info: "valid even if there are pending point-to-point
 *     communications"; the new communicator not to be used before the request completes) and
 *     section 8.4.4 "Communicator Info" (MPI_Comm_set_info, MPI_Comm_get_info; the assertion
 *     keys mpi_assert_no_any_tag, mpi_assert_no_any_source, mpi_assert_exact_length,
 *     mpi_assert_allow_overtaking: an implementation may ignore them, so only the values it
 *     reports back are checked, and the program keeps the assertions it makes).
 * Everything (data, counts, the ring, ROUNDS rounds with an MPI_Allreduce on MPI_COMM_WORLD
 * between them, the ways of completing) is made up here.
 * Adapted because of Debian's MPICH 4.0.2: the statuses of MPI_Isendrecv and
 * MPI_Isendrecv_replace come back zeroed (source 0, tag 0, count 0), so they are not checked,
 * and MPI_Isendrecv to MPI_PROC_NULL crashes (in ucp_tag_send_nbx), so the MPI_PROC_NULL
 * shift uses the blocking MPI_Sendrecv_c and MPI_Sendrecv_replace_c only.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 4
#define CNT 8

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std4_isendrecv");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;

  /* a ring shift with MPI_Isendrecv and MPI_Isendrecv_replace, three ways of completion */
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int out[CNT], in[CNT], rep[CNT];
    double dr[3];
    for (int k = 0; k < CNT; k++) {
      out[k] = rank * 1000 + round * 10 + k;
      in[k] = -1;
      rep[k] = rank * 100 + k;
    }
    dr[0] = rank + 0.25;
    dr[1] = round;
    dr[2] = -rank;
    MPI_Request r[3];
    MPI_Status st[3];
    MPI_Isendrecv(out, CNT, MPI_INT, next, 1, in, CNT, MPI_INT, prev, 1, comm, &r[0]);
    MPI_Isendrecv_replace(rep, CNT, MPI_INT, prev, 2, next, 2, comm, &r[1]);
    MPI_Isendrecv_replace_c(dr, (MPI_Count)3, MPI_DOUBLE, next, 3, MPI_ANY_SOURCE, MPI_ANY_TAG,
                            comm, &r[2]);
    if (round % 3 == 0)
      MPI_Waitall(3, r, st);
    else if (round % 3 == 1)
      for (int i = 2; i >= 0; i--)
        MPI_Wait(&r[i], &st[i]);
    else
      for (int i = 0; i < 3; i++) {
        int flag = 0;
        while (!flag)
          MPI_Test(&r[i], &flag, &st[i]);
      }
    for (int k = 0; k < CNT; k++) {
      bad += in[k] != prev * 1000 + round * 10 + k;
      bad += rep[k] != next * 100 + k;
    }
    bad += dr[0] != prev + 0.25 || dr[1] != round || dr[2] != -prev;
    /* the statuses are not checked: MPICH 4.0.2 returns them zeroed (source 0, tag 0,
     * count 0) */
    int one = 1, s = 0;
    MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad += s != size;
  }
  mt_check_int("MPI_Isendrecv / MPI_Isendrecv_replace(_c) ring shift: wrong", bad, 0);

  /* an end-off shift with MPI_PROC_NULL ends (blocking _c forms), and the shift back around
   * the ring with MPI_Isendrecv_c (MPICH 4.0.2 crashes in MPI_Isendrecv sending to
   * MPI_PROC_NULL) */
  int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
  int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int bad_null = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int v = rank * 7 + round, w = -5, x = -6;
    MPI_Status s1, s2;
    MPI_Sendrecv_c(&v, 1, MPI_INT, up, 30, &w, 1, MPI_INT, down, 30, comm, &s1);
    MPI_Request q;
    MPI_Isendrecv_c(&v, 1, MPI_INT, prev, 31, &x, 1, MPI_INT, next, 31, comm, &q);
    MPI_Wait(&q, &s2);
    MPI_Count c1;
    MPI_Get_count_c(&s1, MPI_INT, &c1);
    if (down == MPI_PROC_NULL)
      bad_null += w != -5 || s1.MPI_SOURCE != MPI_PROC_NULL || s1.MPI_TAG != MPI_ANY_TAG || c1;
    else
      bad_null += w != down * 7 + round || c1 != 1;
    bad_null += x != next * 7 + round;
    int sr[2] = {rank, round};
    MPI_Sendrecv_replace_c(sr, 2, MPI_INT, up, 32, down, 32, comm, &s1);
    if (down == MPI_PROC_NULL)
      bad_null += sr[0] != rank; /* nothing received: the buffer is unchanged */
    else
      bad_null += sr[0] != down || sr[1] != round;
  }
  mt_check_int("end-off shifts with MPI_PROC_NULL (Sendrecv_c), ring back (Isendrecv_c): wrong",
               bad_null, 0);

  /* large-count datatype queries and MPI_Send_c / MPI_Recv_c */
  {
    MPI_Datatype t;
    MPI_Type_contiguous_c((MPI_Count)5, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Count tsize, lb, extent;
    MPI_Type_size_c(t, &tsize);
    MPI_Type_get_extent_c(t, &lb, &extent);
    int okt = tsize == 5 * (MPI_Count)sizeof(double) && lb == 0 && extent == tsize;
    double buf[15];
    for (int i = 0; i < 15; i++)
      buf[i] = rank == 0 ? i * 1.5 : -1.0;
    MPI_Status st;
    if (rank == 0)
      MPI_Send_c(buf, (MPI_Count)3, t, 1, 40, comm);
    else if (rank == 1) {
      MPI_Recv_c(buf, (MPI_Count)3, t, 0, 40, comm, &st);
      MPI_Count n, e;
      MPI_Get_count_c(&st, t, &n);
      MPI_Get_elements_c(&st, MPI_DOUBLE, &e);
      okt &= n == 3 && e == 15;
      for (int i = 0; i < 15; i++)
        okt &= buf[i] == i * 1.5;
    }
    MPI_Type_free(&t);
    mt_check(okt, "MPI_Type_contiguous_c, size/extent _c, MPI_Send_c/MPI_Recv_c, count/elements");
  }
  mt_allreduce_steps(2);

  /* communicators duplicated with info, one of them while operations are pending */
  {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(info, "mpi_assert_exact_length", "true");
    MPI_Comm dup1, dup2;
    MPI_Comm_dup_with_info(comm, info, &dup1);

    /* pending operations on dup1 while it is duplicated with MPI_Comm_idup_with_info */
    int pv = rank * 11, pin = -1;
    MPI_Request pend, dreq;
    MPI_Isendrecv(&pv, 1, MPI_INT, next, 50, &pin, 1, MPI_INT, prev, 50, dup1, &pend);
    MPI_Info info2;
    MPI_Info_create(&info2);
    MPI_Info_set(info2, "mpi_assert_allow_overtaking", "true");
    MPI_Comm_idup_with_info(dup1, info2, &dup2, &dreq);
    MPI_Info_free(&info2);
    /* other work between the start and the completion of the duplication */
    int one = 1, s = 0;
    MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request both[2] = {pend, dreq};
    MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
    int okd = pin == prev * 11 && s == size;

    /* use both: rounds of a ring shift and an allreduce on each */
    for (int round = 0; round < ROUNDS; round++) {
      MPI_Comm c = round % 2 ? dup2 : dup1;
      int v = rank + round, w = -1, t = 0;
      MPI_Sendrecv(&v, 1, MPI_INT, next, 60 + round, &w, 1, MPI_INT, prev, 60 + round, c,
                   MPI_STATUS_IGNORE);
      MPI_Allreduce(&v, &t, 1, MPI_INT, MPI_SUM, c);
      okd &= w == prev + round && t == size * (size - 1) / 2 + size * round;
    }
    int cmp;
    MPI_Comm_compare(dup1, dup2, &cmp);
    okd &= cmp == MPI_CONGRUENT;
    mt_check(okd, "MPI_Comm_dup_with_info, MPI_Comm_idup_with_info with a pending Isendrecv");

    /* the hints reported back: whatever is reported must be what was asserted */
    int bad_info = 0;
    MPI_Comm cs[2] = {dup1, dup2};
    for (int i = 0; i < 2; i++) {
      MPI_Info got;
      MPI_Comm_get_info(cs[i], &got);
      const char *keys[3] = {"mpi_assert_no_any_tag", "mpi_assert_exact_length",
                             "mpi_assert_allow_overtaking"};
      for (int k = 0; k < 3; k++) {
        char v[64];
        int vlen = sizeof v, flag = 0;
        MPI_Info_get_string(got, keys[k], &vlen, v, &flag);
        if (flag && i == 0 && k < 2)
          bad_info += strcmp(v, "true") != 0;
        if (flag && i == 1 && k == 2)
          bad_info += strcmp(v, "true") != 0;
      }
      MPI_Info_free(&got);
    }
    /* MPI_Comm_set_info: a new hint on dup2 */
    MPI_Info info3;
    MPI_Info_create(&info3);
    MPI_Info_set(info3, "mpi_assert_no_any_source", "true");
    MPI_Comm_set_info(dup2, info3);
    MPI_Info_free(&info3);
    MPI_Info got;
    MPI_Comm_get_info(dup2, &got);
    char v[64];
    int vlen = sizeof v, flag = 0;
    MPI_Info_get_string(got, "mpi_assert_no_any_source", &vlen, v, &flag);
    if (flag)
      bad_info += strcmp(v, "true") != 0;
    MPI_Info_free(&got);
    mt_check_int("communicator info: hints reported with other values", bad_info, 0);

    /* dup2 still works after set_info */
    int w = -1, x = rank * 3;
    MPI_Sendrecv(&x, 1, MPI_INT, next, 70, &w, 1, MPI_INT, prev, 70, dup2, MPI_STATUS_IGNORE);
    mt_check_int("a message on the idup'ed communicator after MPI_Comm_set_info", w, prev * 3);
    MPI_Info_free(&info);
    MPI_Comm_free(&dup1);
    MPI_Comm_free(&dup2);
  }
  mt_allreduce_steps(4);
  return mt_end();
}
