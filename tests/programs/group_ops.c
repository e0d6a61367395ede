/*
 * group_ops.c - group operations (all local): Comm_group, Group_size/rank, incl, excl,
 * range_incl, range_excl, union, intersection, difference, translate_ranks (with
 * MPI_UNDEFINED and MPI_PROC_NULL), compare (IDENT/SIMILAR/UNEQUAL), MPI_GROUP_EMPTY,
 * Group_free; and Comm_create from a computed group to show the group is usable.
 * Every group is described by its members as world ranks, via translate_ranks.
 * Ranks: 4.
 */
#include "mpitest.h"

static MPI_Group world;

/* members of g as world ranks, in group order; returns the size */
static int members(MPI_Group g, int *out)
{
  int n;
  MPI_Group_size(g, &n);
  int idx[16];
  for (int i = 0; i < n; i++)
    idx[i] = i;
  if (n > 0)
    MPI_Group_translate_ranks(g, n, idx, world, out);
  return n;
}

static void expect_group(const char *what, MPI_Group g, const int *exp, int n)
{
  int got[16], sz = members(g, got);
  char buf[160];
  if (sz != n) {
    mt_check(0, "%s: size %d (expected %d)", what, sz, n);
    return;
  }
  snprintf(buf, sizeof buf, "%s (world ranks)", what);
  if (n == 0)
    mt_check(1, "%s is empty", what);
  else
    mt_check_ints(buf, got, exp, n);
}

static const char *cmpname(int r)
{
  return r == MPI_IDENT     ? "MPI_IDENT"
         : r == MPI_SIMILAR ? "MPI_SIMILAR"
         : r == MPI_UNEQUAL ? "MPI_UNEQUAL"
                            : "?";
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("group_ops");
  mt_require_size(4);
  const int me = mt_.rank;
  int sz, rk, res;

  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_size(world, &sz);
  MPI_Group_rank(world, &rk);
  mt_check(sz == 4 && rk == me, "world group size %d rank %d", sz, rk);

  MPI_Group a, b, u, in, d, d2, r1, r2, e1, empty_u;
  int ia[3] = {3, 0, 2};
  MPI_Group_incl(world, 3, ia, &a); /* {3,0,2} */
  expect_group("incl {3,0,2}", a, ia, 3);
  MPI_Group_rank(a, &rk);
  mt_check_int("my rank in {3,0,2}", rk, me == 3 ? 0 : me == 0 ? 1 : me == 2 ? 2 : MPI_UNDEFINED);

  int eb[1] = {2};
  MPI_Group_excl(world, 1, eb, &b); /* {0,1,3} */
  expect_group("excl {2}", b, (int[]){0, 1, 3}, 3);

  MPI_Group_union(a, b, &u); /* a's order, then b's extras: {3,0,2,1} */
  expect_group("union({3,0,2},{0,1,3})", u, (int[]){3, 0, 2, 1}, 4);
  MPI_Group_intersection(a, b, &in); /* a's order: {3,0} */
  expect_group("intersection({3,0,2},{0,1,3})", in, (int[]){3, 0}, 2);
  MPI_Group_difference(a, b, &d); /* {2} */
  expect_group("difference({3,0,2},{0,1,3})", d, (int[]){2}, 1);
  MPI_Group_difference(b, a, &d2); /* {1} */
  expect_group("difference({0,1,3},{3,0,2})", d2, (int[]){1}, 1);

  int ranges[2][3] = {{3, 0, -2}, {0, 0, 1}}; /* 3,1 then 0 */
  MPI_Group_range_incl(world, 2, ranges, &r1);
  expect_group("range_incl {3..0 step -2, 0..0}", r1, (int[]){3, 1, 0}, 3);
  int rx[1][3] = {{1, 3, 2}}; /* drop 1 and 3 */
  MPI_Group_range_excl(world, 1, rx, &r2);
  expect_group("range_excl {1..3 step 2}", r2, (int[]){0, 2}, 2);

  /* translate ranks of u into a, including MPI_PROC_NULL */
  {
    int from[5] = {0, 1, 2, 3, MPI_PROC_NULL}, to[5];
    MPI_Group_translate_ranks(u, 5, from, a, to);
    mt_check_ints("translate u -> {3,0,2} (world 1 is MPI_UNDEFINED)", to,
                  (int[]){0, 1, 2, MPI_UNDEFINED, MPI_PROC_NULL}, 5);
  }

  /* compare */
  MPI_Group_compare(world, world, &res);
  mt_check(res == MPI_IDENT, "compare(world, world) = %s", cmpname(res));
  MPI_Group_compare(world, u, &res);
  mt_check(res == MPI_SIMILAR, "compare(world, union) = %s", cmpname(res));
  MPI_Group_compare(a, b, &res);
  mt_check(res == MPI_UNEQUAL, "compare({3,0,2}, {0,1,3}) = %s", cmpname(res));
  {
    MPI_Group same;
    int ord[4] = {0, 1, 2, 3};
    MPI_Group_incl(world, 4, ord, &same);
    MPI_Group_compare(world, same, &res);
    mt_check(res == MPI_IDENT, "compare(world, incl {0,1,2,3}) = %s", cmpname(res));
    MPI_Group_free(&same);
  }

  /* empty groups */
  MPI_Group_intersection(d, d2, &e1);
  MPI_Group_size(e1, &sz);
  MPI_Group_compare(e1, MPI_GROUP_EMPTY, &res);
  mt_check(sz == 0 && res == MPI_IDENT,
           "intersection of disjoint groups: size %d, compare to GROUP_EMPTY %s", sz, cmpname(res));
  MPI_Group_union(MPI_GROUP_EMPTY, d, &empty_u);
  expect_group("union(GROUP_EMPTY, {2})", empty_u, (int[]){2}, 1);
  MPI_Group_size(MPI_GROUP_EMPTY, &sz);
  MPI_Group_rank(MPI_GROUP_EMPTY, &rk);
  mt_check(sz == 0 && rk == MPI_UNDEFINED, "GROUP_EMPTY size %d, rank is MPI_UNDEFINED", sz);

  /* a computed group is usable: Comm_create(world, union) orders ranks as {3,0,2,1} */
  {
    MPI_Comm c;
    MPI_Comm_create(MPI_COMM_WORLD, u, &c);
    MPI_Comm_rank(c, &rk);
    mt_check_int("rank in comm created from union", rk,
                 me == 3   ? 0
                 : me == 0 ? 1
                 : me == 2 ? 2
                           : 3);
    int all[4];
    MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, c);
    mt_check_ints("allgather on that comm (world ranks)", all, (int[]){3, 0, 2, 1}, 4);
    MPI_Group cg;
    MPI_Comm_group(c, &cg);
    MPI_Group_compare(cg, u, &res);
    mt_check(res == MPI_IDENT, "comm_group of it compares %s to the union", cmpname(res));
    MPI_Group_free(&cg);
    MPI_Comm_free(&c);
  }

  MPI_Group *all[] = {&a, &b, &u, &in, &d, &d2, &r1, &r2, &e1, &empty_u};
  int freed = 1;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    MPI_Group_free(all[i]);
    if (*all[i] != MPI_GROUP_NULL)
      freed = 0;
  }
  mt_check(freed, "group_free sets MPI_GROUP_NULL");
  MPI_Group_free(&world);
  return mt_end();
}
