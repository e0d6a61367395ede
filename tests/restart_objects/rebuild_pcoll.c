/*
 * rebuild_pcoll.c - persistent collective requests survive a drain and a rebuild in place.
 * Requests of many shapes are made: Allreduce_init with a user operation on a derived
 * datatype the program frees right after, Bcast_init on a dup, Alltoallv_init and
 * Gatherv_init whose count arrays the program overwrites after the initialization (MPI lets
 * it: the requests must keep their own copies), Alltoallw_init with a datatype array,
 * Reduce_scatter_init, Barrier_init with hints, Neighbor_allgather_init on a ring and an
 * Allreduce_init across an intercommunicator.  Each is started and completed once; then the
 * objects are rebuilt with every request inactive, and again after a drain that finds some
 * of them started and not completed; every request is started again with new inputs after
 * each rebuild and the results are printed.  Natively the rebuild does nothing: the output
 * must be the same.
 * Ranks: 3.
 */
#include "drain.h"

#define NP 3

static void pairsum(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  int *a = in, *b = inout;
  for (int i = 0; i < 2 * *len; i++)
    b[i] = b[i] * 10 + a[i] % 10; /* not commutative */
}

struct state {
  MPI_Request rq[9];
  int ar_in[2], ar_out[2], bc[3], a2a_in[NP], a2a_out[NP], gv_in[NP], gv_out[NP * NP];
  int a2w_in[NP], a2w_out[NP], rs_in[NP], rs_out, nb_in, nb_out[2], ic_in, ic_out;
};

static void inputs(struct state *s, int round)
{
  int me = mt_.rank;
  s->ar_in[0] = me + round;
  s->ar_in[1] = 3 * me + 1;
  for (int i = 0; i < 3; i++)
    s->bc[i] = me == 1 ? 100 * round + i : -1;
  for (int i = 0; i < NP; i++) {
    s->a2a_in[i] = 10 * me + i + round;
    s->gv_in[i] = 100 * round + 10 * me + i;
    s->a2w_in[i] = -(10 * me + i) - round;
    s->rs_in[i] = i * (me + 1) + round;
  }
  s->nb_in = 7 * me + round;
  s->ic_in = me * me + round;
}

static void show(struct state *s, int round)
{
  mt_log("round %d: allreduce [%d %d], bcast [%d %d %d], reduce_scatter %d", round, s->ar_out[0],
         s->ar_out[1], s->bc[0], s->bc[1], s->bc[2], s->rs_out);
  mt_append("OK   round %d: alltoallv ", round);
  mt_fmt_ints(s->a2a_out, NP);
  mt_append(", alltoallw ");
  mt_fmt_ints(s->a2w_out, NP);
  mt_append(", neighbours [%d %d], across %d\n", s->nb_out[0], s->nb_out[1], s->ic_out);
  if (mt_.rank == 0) {
    mt_append("OK   round %d: gatherv ", round);
    mt_fmt_ints(s->gv_out, NP * (NP + 1) / 2);
    mt_append("\n");
  }
}

static void run_round(struct state *s, int round)
{
  inputs(s, round);
  MPI_Startall(9, s->rq);
  MPI_Waitall(9, s->rq, MPI_STATUSES_IGNORE);
  show(s, round);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_pcoll");
  mt_require_size(NP);
  const int me = mt_.rank;
  struct state s;
  memset(&s, 0, sizeof(s));

  MPI_Op op;
  MPI_Op_create(pairsum, 0, &op);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Allreduce_init(s.ar_in, s.ar_out, 1, pair, op, MPI_COMM_WORLD, MPI_INFO_NULL, &s.rq[0]);
  MPI_Type_free(&pair); /* the request keeps it */

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Bcast_init(s.bc, 3, MPI_INT, 1, dup, MPI_INFO_NULL, &s.rq[1]);

  int counts[NP], displs[NP], gcounts[NP], gdispls[NP], ones[NP], bytes[NP];
  MPI_Datatype types[NP];
  for (int i = 0, at = 0; i < NP; i++) {
    counts[i] = 1;
    displs[i] = NP - 1 - i; /* reversed */
    gcounts[i] = i + 1;
    gdispls[i] = at;
    at += i + 1;
    ones[i] = 1;
    bytes[i] = i * (int)sizeof(int);
    types[i] = MPI_INT;
  }
  MPI_Alltoallv_init(s.a2a_in, counts, displs, MPI_INT, s.a2a_out, counts, displs, MPI_INT,
                     MPI_COMM_WORLD, MPI_INFO_NULL, &s.rq[2]);
  MPI_Gatherv_init(s.gv_in, me + 1, MPI_INT, s.gv_out, gcounts, gdispls, MPI_INT, 0, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &s.rq[3]);
  MPI_Alltoallw_init(s.a2w_in, ones, bytes, types, s.a2w_out, ones, bytes, types, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &s.rq[4]);
  int rcounts[NP] = {1, 1, 1};
  MPI_Reduce_scatter_init(s.rs_in, &s.rs_out, rcounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &s.rq[5]);
  /* the arrays may change once the requests exist */
  for (int i = 0; i < NP; i++)
    counts[i] = gcounts[i] = displs[i] = gdispls[i] = rcounts[i] = -7;

  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "mpi_assert_no_any_source", "true");
  MPI_Barrier_init(MPI_COMM_WORLD, hints, &s.rq[6]);
  MPI_Info_free(&hints);

  int dims[1] = {NP}, periods[1] = {1};
  MPI_Comm ring;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Neighbor_allgather_init(&s.nb_in, 1, MPI_INT, s.nb_out, 1, MPI_INT, ring, MPI_INFO_NULL,
                              &s.rq[7]);

  /* {0} and {1,2} */
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, me > 0, me, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me > 0 ? 0 : 1, 9, &inter);
  MPI_Allreduce_init(&s.ic_in, &s.ic_out, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &s.rq[8]);

  run_round(&s, 0);
  rebuild_checked("with every persistent collective request inactive");
  run_round(&s, 1);

  /* started, not completed, over a drain and a rebuild */
  inputs(&s, 2);
  MPI_Startall(9, s.rq);
  drain_checked("with persistent collective requests started", 1);
  MPI_Waitall(9, s.rq, MPI_STATUSES_IGNORE);
  show(&s, 2);
  run_round(&s, 3);

  /* one freed and one made since: the order they were made in still agrees */
  MPI_Request_free(&s.rq[5]);
  MPI_Reduce_scatter_block_init(s.rs_in, &s.rs_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &s.rq[5]);
  rebuild_checked("after a request was freed and another made");
  run_round(&s, 4);

  for (int i = 0; i < 9; i++)
    MPI_Request_free(&s.rq[i]);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Comm_free(&ring);
  MPI_Comm_free(&dup);
  MPI_Op_free(&op);
  return mt_end();
}
