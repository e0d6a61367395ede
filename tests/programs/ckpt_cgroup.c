/*
 * ckpt_cgroup.c - communicators made collectively over a group only, and duplicates made
 * without blocking, for checkpoints at every MPI call (tests/restart/run_at_calls.sh):
 * every round makes, with MPI_Comm_create_group, a communicator of all ranks in reverse
 * order, one of each rank alone and one of the even ranks (tags that repeat across parents),
 * one more of all ranks with another tag, and one with MPI_Comm_create_from_group; then an
 * MPI_Comm_idup and an MPI_Comm_idup_with_info stay pending over point-to-point traffic and a
 * collective on another communicator; every communicator is used by a collective, then freed.
 * The results are folded into a digest that rank 0 prints per round.
 *
 *   usage: ckpt_cgroup [ROUNDS]    default 4
 * Ranks: 2 or more.
 */
#include "mpitest.h"

static uint64_t digest;

static void fold(long long v)
{
  digest = mt_mix(digest ^ (uint64_t)v);
}

/* One Allreduce on c (not MPI_COMM_NULL): members' world ranks weighted by their rank in c. */
static void use(MPI_Comm c)
{
  if (c == MPI_COMM_NULL)
    return;
  int rank, size, v, sum = -1;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  v = (rank + 1) * (mt_.rank + 3);
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
  fold(sum);
  fold(size);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_cgroup");
  const long rounds = mt_arg("ckpt_cgroup", argc, argv, 1, 4);
  const int me = mt_.rank, np = mt_.size;
  MPI_Group world_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int *order = mt_alloc(sizeof(int) * (size_t)np), nevens = 0;
  int *evens = mt_alloc(sizeof(int) * (size_t)np);
  for (int i = 0; i < np; i++) {
    order[i] = np - 1 - i;
    if (i % 2 == 0)
      evens[nevens++] = i;
  }
  MPI_Group reversed, alone, even_group;
  MPI_Group_incl(world_group, np, order, &reversed);
  MPI_Group_incl(world_group, 1, &me, &alone);
  MPI_Group_incl(world_group, nevens, evens, &even_group);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");

  for (int r = 0; r < rounds; r++) {
    MPI_Comm all_rev, self_c, even_c = MPI_COMM_NULL, dup, from_dup, from_group, idup, idup2;
    MPI_Request rq[2];
    MPI_Comm_create_group(MPI_COMM_WORLD, reversed, 10 + r, &all_rev);
    MPI_Comm_create_group(MPI_COMM_WORLD, alone, 10 + r, &self_c);
    if (me % 2 == 0)
      MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 10 + r, &even_c);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    /* from a parent other than MPI_COMM_WORLD: MPICH 4.0.2 crashes (natively) */
    MPI_Comm_create_group(MPI_COMM_WORLD, reversed, 20 + r, &from_dup);
    MPI_Comm_create_from_group(reversed, "ckpt_cgroup", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL,
                               &from_group);
    /* (MPICH 4.0.2 crashes in MPI_Comm_create_group while an idup of the parent is pending) */
    MPI_Comm_idup(MPI_COMM_WORLD, &idup, &rq[0]);
    MPI_Comm_idup_with_info(dup, info, &idup2, &rq[1]);
    /* point-to-point on the reversed communicator while the duplicates are pending */
    int rank_rev, out = 100 * r + me, in = -1;
    MPI_Comm_rank(all_rev, &rank_rev);
    MPI_Sendrecv(&out, 1, MPI_INT, (rank_rev + 1) % np, 1, &in, 1, MPI_INT,
                 (rank_rev + np - 1) % np, 1, all_rev, MPI_STATUS_IGNORE);
    fold(in);
    use(from_dup);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    use(all_rev);
    use(self_c);
    use(even_c);
    use(idup);
    use(idup2);
    use(from_group);
    MPI_Comm_free(&from_group);
    MPI_Comm_free(&from_dup);
    MPI_Comm_free(&idup2);
    MPI_Comm_free(&dup);
    if (even_c != MPI_COMM_NULL)
      MPI_Comm_free(&even_c);
    MPI_Comm_free(&self_c);
    MPI_Comm_free(&all_rev);
    MPI_Comm_free(&idup);
    unsigned long long d = digest, all = 0;
    MPI_Reduce(&d, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (me == 0)
      mt_log("round %d: digest %016llx", r, all);
  }
  MPI_Info_free(&info);
  MPI_Group_free(&even_group);
  MPI_Group_free(&alone);
  MPI_Group_free(&reversed);
  MPI_Group_free(&world_group);
  free(order);
  free(evens);
  mt_check(1, "%ld rounds", rounds);
  return mt_end();
}
