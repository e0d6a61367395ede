/*
 * comm_basic.c - communicator management: Comm_split (with key reordering and
 * MPI_UNDEFINED), Comm_split_type(MPI_COMM_TYPE_SHARED), Comm_dup, Comm_dup_with_info,
 * Comm_idup, Comm_create, Comm_create_group, Comm_compare (IDENT/CONGRUENT/SIMILAR/UNEQUAL),
 * Comm_set_name/Comm_get_name, Comm_free, MPI_COMM_SELF. Each new communicator is used for
 * an Allreduce or a message so it is known to work.
 * Ranks: 4 (about 25 collective calls).
 */
#include "mpitest.h"

static int sum_over(MPI_Comm c, int v)
{
  int s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
  return s;
}

static const char *cmpname(int r)
{
  switch (r) {
  case MPI_IDENT:
    return "MPI_IDENT";
  case MPI_CONGRUENT:
    return "MPI_CONGRUENT";
  case MPI_SIMILAR:
    return "MPI_SIMILAR";
  case MPI_UNEQUAL:
    return "MPI_UNEQUAL";
  default:
    return "?";
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_basic");
  mt_require_size(4);
  const int me = mt_.rank;
  char name[MPI_MAX_OBJECT_NAME];
  int len, res, sz, rk;

  /* names of the predefined communicators */
  MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
  mt_check(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name = %s (len %d)", name, len);
  MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
  mt_check(strcmp(name, "MPI_COMM_SELF") == 0, "self name = %s", name);
  MPI_Comm_size(MPI_COMM_SELF, &sz);
  MPI_Comm_rank(MPI_COMM_SELF, &rk);
  mt_check(sz == 1 && rk == 0, "self size %d rank %d", sz, rk);

  /* Comm_split: colour = parity, key = -rank (reverse order inside each half) */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half);
  MPI_Comm_size(half, &sz);
  MPI_Comm_rank(half, &rk);
  mt_check(sz == 2 && rk == (me < 2 ? 1 : 0), "split by parity, reversed key: size %d rank %d", sz,
           rk);
  mt_check_int("allreduce over parity half", sum_over(half, me), me % 2 == 0 ? 2 : 4);
  MPI_Comm_compare(MPI_COMM_WORLD, half, &res);
  mt_check(res == MPI_UNEQUAL, "compare(world, half) = %s", cmpname(res));
  MPI_Comm_set_name(half, me % 2 ? "odd-half" : "even-half");
  MPI_Comm_get_name(half, name, &len);
  mt_check(strcmp(name, me % 2 ? "odd-half" : "even-half") == 0, "set/get name = %s", name);

  /* split with MPI_UNDEFINED for rank 3 */
  MPI_Comm some;
  MPI_Comm_split(MPI_COMM_WORLD, me == 3 ? MPI_UNDEFINED : 0, me, &some);
  if (me == 3) {
    mt_check(some == MPI_COMM_NULL, "split with MPI_UNDEFINED gives MPI_COMM_NULL");
  } else {
    MPI_Comm_size(some, &sz);
    mt_check_int("size of split without rank 3", sz, 3);
    mt_check_int("allreduce without rank 3", sum_over(some, me + 1), 6);
    MPI_Comm_free(&some);
  }

  /* split_type SHARED: all ranks are on this one machine */
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &sz);
  MPI_Comm_rank(node, &rk);
  mt_check(sz == 4 && rk == me, "split_type shared: size %d rank %d", sz, rk);
  MPI_Comm_compare(MPI_COMM_WORLD, node, &res);
  mt_check(res == MPI_CONGRUENT, "compare(world, shared) = %s", cmpname(res));
  mt_check_int("allreduce on shared comm", sum_over(node, 1), 4);
  MPI_Comm_free(&node);

  /* dup: congruent, separate context, name not inherited */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
  mt_check(res == MPI_CONGRUENT, "compare(world, dup) = %s", cmpname(res));
  MPI_Comm_compare(dup, dup, &res);
  mt_check(res == MPI_IDENT, "compare(dup, dup) = %s", cmpname(res));
  MPI_Comm_get_name(dup, name, &len);
  mt_check(len == 0, "dup has an empty name (len %d)", len);
  {
    /* same tag on world and on dup: contexts keep them apart */
    int a = -1, b = -1, x = me, y = 100 + me;
    int to = (me + 1) % 4, from = (me + 3) % 4;
    MPI_Request rq[4];
    MPI_Irecv(&a, 1, MPI_INT, from, 0, dup, &rq[0]);
    MPI_Irecv(&b, 1, MPI_INT, from, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(&y, 1, MPI_INT, to, 0, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(&x, 1, MPI_INT, to, 0, dup, &rq[3]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    mt_check(a == from && b == 100 + from, "same tag on world and dup kept apart (%d, %d)", a, b);
  }

  /* dup_with_info + get_info */
  {
    MPI_Info info, got;
    MPI_Comm dwi;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dwi);
    MPI_Info_free(&info);
    MPI_Comm_get_info(dwi, &got);
    mt_check(got != MPI_INFO_NULL, "comm_get_info returns an info object");
    MPI_Info_free(&got);
    MPI_Comm_compare(MPI_COMM_WORLD, dwi, &res);
    mt_check(res == MPI_CONGRUENT, "compare(world, dup_with_info) = %s", cmpname(res));
    mt_check_int("allreduce on dup_with_info", sum_over(dwi, me * me), 14);
    MPI_Comm_free(&dwi);
  }

  /* idup, completed with Wait; a message on the parent while idup is pending */
  {
    MPI_Comm idup;
    MPI_Request rq;
    MPI_Comm_idup(half, &idup, &rq);
    int v = me, w = -1;
    int partner = me ^ 2; /* the other member of my parity half */
    MPI_Sendrecv(&v, 1, MPI_INT, partner, 9, &w, 1, MPI_INT, partner, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Comm_compare(half, idup, &res);
    mt_check(res == MPI_CONGRUENT && w == partner, "idup of half: %s, overlapped message %d",
             cmpname(res), w);
    mt_check_int("allreduce on idup", sum_over(idup, 10), 20);
    MPI_Comm_free(&idup);
  }

  /* Comm_create from the group {0, 2, 3}; rank 1 gets MPI_COMM_NULL */
  MPI_Group wg, g023;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int r023[3] = {0, 2, 3};
  MPI_Group_incl(wg, 3, r023, &g023);
  MPI_Comm c023;
  MPI_Comm_create(MPI_COMM_WORLD, g023, &c023);
  if (me == 1) {
    mt_check(c023 == MPI_COMM_NULL, "comm_create: non-member gets MPI_COMM_NULL");
  } else {
    MPI_Comm_rank(c023, &rk);
    mt_check_int("comm_create: rank in {0,2,3}", rk, me == 0 ? 0 : me - 1);
    mt_check_int("allreduce on created comm", sum_over(c023, me), 5);
  }

  /* Comm_create_group: only the members {3, 1} call it; order defines the ranks */
  MPI_Group g31;
  int r31[2] = {3, 1};
  MPI_Group_incl(wg, 2, r31, &g31);
  if (me == 1 || me == 3) {
    MPI_Comm c31;
    MPI_Comm_create_group(MPI_COMM_WORLD, g31, 77, &c31);
    MPI_Comm_rank(c31, &rk);
    mt_check_int("comm_create_group rank (3 -> 0, 1 -> 1)", rk, me == 3 ? 0 : 1);
    MPI_Comm_compare(half, c31, &res);
    mt_check(res == MPI_CONGRUENT, "compare(odd half (keys reversed), {3,1}) = %s", cmpname(res));
    MPI_Comm c13;
    MPI_Group g13;
    int r13[2] = {1, 3};
    MPI_Group_incl(wg, 2, r13, &g13);
    MPI_Comm_create_group(MPI_COMM_WORLD, g13, 78, &c13);
    MPI_Comm_compare(c13, c31, &res);
    mt_check(res == MPI_SIMILAR, "compare({1,3}, {3,1}) = %s", cmpname(res));
    MPI_Comm_free(&c13);
    MPI_Group_free(&g13);
    int v = me, o = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, 1 - rk, 0, &o, 1, MPI_INT, 1 - rk, 0, c31, MPI_STATUS_IGNORE);
    mt_check_int("message on create_group comm", o, me == 1 ? 3 : 1);
    MPI_Comm_free(&c31);
  } else {
    mt_log("not a member of {3,1}");
  }

  /* split of a derived communicator */
  if (c023 != MPI_COMM_NULL) {
    MPI_Comm sub;
    MPI_Comm_rank(c023, &rk);
    MPI_Comm_split(c023, rk == 0, 0, &sub);
    MPI_Comm_size(sub, &sz);
    mt_check_int("split of created comm: size", sz, me == 0 ? 1 : 2);
    MPI_Comm_free(&sub);
    MPI_Comm_free(&c023);
  }

  /* Comm_free sets the handle to MPI_COMM_NULL */
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  mt_check(dup == MPI_COMM_NULL && half == MPI_COMM_NULL, "comm_free sets MPI_COMM_NULL");
  MPI_Group_free(&wg);
  MPI_Group_free(&g023);
  MPI_Group_free(&g31);

  /* create and free many communicators: handles and context ids get recycled */
  {
    int ok = 1;
    for (int i = 0; i < 8; i++) {
      MPI_Comm c;
      MPI_Comm_dup(MPI_COMM_WORLD, &c);
      MPI_Comm_rank(c, &rk);
      if (rk != me)
        ok = 0;
      MPI_Comm_free(&c);
    }
    mt_check(ok, "8 dup/free cycles");
  }

  return mt_end();
}
