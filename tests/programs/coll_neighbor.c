/*
 * coll_neighbor.c - neighbourhood collectives (Neighbor_allgather(v), Neighbor_alltoall(v,w),
 * their I-variants, and one persistent Neighbor_allgather_init) on two topologies:
 *   - a 2-D Cartesian grid from Dims_create(3, 2) = 3x1, periodic in dim 0 only, so every
 *     rank has a left and a right neighbour plus two MPI_PROC_NULL neighbours in dim 1
 *     (whose receive blocks must stay untouched);
 *   - an asymmetric dist-graph (Dist_graph_create_adjacent):
 *         out-edges 0->{1,2}, 1->{2}, 2->{0,1};  in-edges 0<-{2}, 1<-{0,2}, 2<-{0,1}.
 *   - a directed ring 0->1->2->0 (Dist_graph_create_adjacent, in-degree = out-degree = 1).
 * Every message from s to d carries 100*s + 10*d (+ an element index), so misrouted or
 * reordered blocks are caught.
 * MPICH 4.0.2 note: (I)Neighbor_alltoallw mixes up in- and out-degree when it converts the
 * count arrays (pmodels/mpich#6233, fixed after 4.0.2), so it delivers wrong data on graphs
 * where a rank's in-degree differs from its out-degree. It is therefore exercised on the
 * Cartesian grid and the directed ring only.
 * Ranks: 3.
 */
#include "mpitest.h"

#define MAXN 4
#define SENT -7 /* sentinel in receive buffers */

struct topo {
  const char *name;
  MPI_Comm comm;
  int skip_w; /* see the MPICH 4.0.2 note at the top */
  int indeg, outdeg;
  int src[MAXN], dst[MAXN];
};

static int val(int s, int d, int i)
{
  return 100 * s + 10 * d + i;
}

/* expected receive block layout helpers */
static int is_null(int r)
{
  return r == MPI_PROC_NULL;
}

static void run(struct topo *t, int nonblocking)
{
  const int me = mt_.rank;
  char what[128];
  const char *kind = nonblocking ? "ineighbor" : "neighbor";
  MPI_Request rq;

  /* allgather: 2 ints per neighbour */
  {
    int sb[2] = {val(me, 0, 0), val(me, 0, 1)}, rb[2 * MAXN], ex[2 * MAXN];
    for (int k = 0; k < 2 * MAXN; k++)
      rb[k] = ex[k] = SENT;
    for (int k = 0; k < t->indeg; k++)
      if (!is_null(t->src[k])) {
        ex[2 * k] = val(t->src[k], 0, 0);
        ex[2 * k + 1] = val(t->src[k], 0, 1);
      }
    if (nonblocking) {
      MPI_Ineighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, t->comm, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, t->comm);
    }
    snprintf(what, sizeof what, "%s %s_allgather", t->name, kind);
    mt_check_ints(what, rb, ex, 2 * t->indeg);
  }

  /* allgatherv: rank s contributes s+1 ints; blocks packed in reverse neighbour order */
  {
    int sb[8], rb[32], ex[32], cnt[MAXN], dsp[MAXN], off = 0;
    for (int i = 0; i <= me; i++)
      sb[i] = val(me, 0, i);
    for (int k = 0; k < 32; k++)
      rb[k] = ex[k] = SENT;
    for (int k = t->indeg - 1; k >= 0; k--) {
      cnt[k] = is_null(t->src[k]) ? 1 : t->src[k] + 1;
      dsp[k] = off;
      off += cnt[k] + 1;
      if (!is_null(t->src[k]))
        for (int i = 0; i < cnt[k]; i++)
          ex[dsp[k] + i] = val(t->src[k], 0, i);
    }
    if (nonblocking) {
      MPI_Ineighbor_allgatherv(sb, me + 1, MPI_INT, rb, cnt, dsp, MPI_INT, t->comm, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_allgatherv(sb, me + 1, MPI_INT, rb, cnt, dsp, MPI_INT, t->comm);
    }
    snprintf(what, sizeof what, "%s %s_allgatherv", t->name, kind);
    mt_check_ints(what, rb, ex, off);
  }

  /* alltoall: one distinct int per out-neighbour */
  {
    int sb[MAXN], rb[MAXN], ex[MAXN];
    for (int k = 0; k < t->outdeg; k++)
      sb[k] = is_null(t->dst[k]) ? -1 : val(me, t->dst[k], 0);
    for (int k = 0; k < MAXN; k++)
      rb[k] = ex[k] = SENT;
    for (int k = 0; k < t->indeg; k++)
      if (!is_null(t->src[k]))
        ex[k] = val(t->src[k], me, 0);
    if (nonblocking) {
      MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, t->comm, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, t->comm);
    }
    snprintf(what, sizeof what, "%s %s_alltoall", t->name, kind);
    mt_check_ints(what, rb, ex, t->indeg);
  }

  /* alltoallv: s sends s+d+1 ints to d */
  {
    int sb[32], rb[32], ex[32], sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN], so = 0, ro = 0;
    for (int k = 0; k < 32; k++)
      sb[k] = rb[k] = ex[k] = SENT;
    for (int k = 0; k < t->outdeg; k++) {
      int d = t->dst[k];
      sc[k] = is_null(d) ? 0 : me + d + 1;
      sd[k] = so;
      for (int i = 0; i < sc[k]; i++)
        sb[so + i] = val(me, d, i);
      so += sc[k];
    }
    for (int k = 0; k < t->indeg; k++) {
      int s = t->src[k];
      rc[k] = is_null(s) ? 0 : s + me + 1;
      rd[k] = ro;
      for (int i = 0; i < rc[k]; i++)
        ex[ro + i] = val(s, me, i);
      ro += rc[k];
    }
    if (nonblocking) {
      MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, t->comm, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, t->comm);
    }
    snprintf(what, sizeof what, "%s %s_alltoallv", t->name, kind);
    mt_check_ints(what, rb, ex, ro + 1);
  }

  /* alltoallw: send 2 ints to each neighbour as one "pair" element, receive as 2 MPI_INTs
   * at byte displacements in reverse neighbour order */
  if (t->skip_w) {
    mt_log("%s %s_alltoallw skipped (in-degree != out-degree, MPICH 4.0.2 bug)", t->name, kind);
  } else {
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int sb[2 * MAXN], rb[2 * MAXN], ex[2 * MAXN], sc[MAXN], rc[MAXN];
    MPI_Aint sd[MAXN], rd[MAXN];
    MPI_Datatype st[MAXN], rt[MAXN];
    for (int k = 0; k < 2 * MAXN; k++)
      rb[k] = ex[k] = SENT;
    for (int k = 0; k < t->outdeg; k++) {
      sc[k] = 1;
      st[k] = pair;
      sd[k] = (MPI_Aint)(2 * k * sizeof(int));
      sb[2 * k] = val(me, t->dst[k], 0);
      sb[2 * k + 1] = -val(me, t->dst[k], 0);
    }
    for (int k = 0; k < t->indeg; k++) {
      int slot = t->indeg - 1 - k;
      rc[k] = 2;
      rt[k] = MPI_INT;
      rd[k] = (MPI_Aint)(2 * slot * sizeof(int));
      if (!is_null(t->src[k])) {
        ex[2 * slot] = val(t->src[k], me, 0);
        ex[2 * slot + 1] = -val(t->src[k], me, 0);
      }
    }
    if (nonblocking) {
      MPI_Ineighbor_alltoallw(sb, sc, sd, st, rb, rc, rd, rt, t->comm, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_alltoallw(sb, sc, sd, st, rb, rc, rd, rt, t->comm);
    }
    snprintf(what, sizeof what, "%s %s_alltoallw", t->name, kind);
    mt_check_ints(what, rb, ex, 2 * t->indeg);
    MPI_Type_free(&pair);
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("coll_neighbor");
  mt_require_size(3);
  const int me = mt_.rank;

  /* --- Cartesian 3x1, periodic in dim 0 --- */
  struct topo cart = {.name = "cart"};
  {
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(3, 2, dims);
    mt_check_ints("dims_create(3,2)", dims, (int[]){3, 1}, 2);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart.comm);
    int l, r, d1a, d1b;
    MPI_Cart_shift(cart.comm, 0, 1, &l, &r);
    MPI_Cart_shift(cart.comm, 1, 1, &d1a, &d1b);
    cart.indeg = cart.outdeg = 4;
    int nb[4] = {l, r, d1a, d1b};
    memcpy(cart.src, nb, sizeof nb);
    memcpy(cart.dst, nb, sizeof nb);
    int exp[4] = {(me + 2) % 3, (me + 1) % 3, MPI_PROC_NULL, MPI_PROC_NULL};
    mt_check_ints("cart neighbour order (dim0 -, dim0 +, dim1 -, dim1 +)", nb, exp, 4);
  }

  /* --- asymmetric dist graph --- */
  struct topo graph = {.name = "distgraph"};
  {
    static const int outs[3][2] = {{1, 2}, {2, -1}, {0, 1}}, outn[3] = {2, 1, 2};
    static const int ins[3][2] = {{2, -1}, {0, 2}, {0, 1}}, inn[3] = {1, 2, 2};
    graph.indeg = inn[me];
    graph.outdeg = outn[me];
    for (int k = 0; k < graph.indeg; k++)
      graph.src[k] = ins[me][k];
    for (int k = 0; k < graph.outdeg; k++)
      graph.dst[k] = outs[me][k];
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, graph.indeg, graph.src, MPI_UNWEIGHTED,
                                   graph.outdeg, graph.dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                   &graph.comm);
    int ind, outd, w, s[MAXN], d[MAXN];
    MPI_Dist_graph_neighbors_count(graph.comm, &ind, &outd, &w);
    /* exact degrees: MPICH 4.0.2 copies maxdegree entries regardless of the real degree */
    MPI_Dist_graph_neighbors(graph.comm, ind, s, MPI_UNWEIGHTED, outd, d, MPI_UNWEIGHTED);
    mt_check(ind == graph.indeg && outd == graph.outdeg && w == 0,
             "distgraph degrees %d/%d, weighted %d", ind, outd, w);
    mt_check_ints("distgraph sources", s, graph.src, ind);
    mt_check_ints("distgraph destinations", d, graph.dst, outd);
  }

  /* --- directed ring 0->1->2->0 --- */
  struct topo ring = {.name = "ring"};
  {
    int src = (me + 2) % 3, dst = (me + 1) % 3;
    ring.indeg = ring.outdeg = 1;
    ring.src[0] = src;
    ring.dst[0] = dst;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &ring.comm);
  }
  graph.skip_w = 1;

  run(&cart, 0);
  run(&graph, 0);
  run(&ring, 0);
  run(&cart, 1);
  run(&graph, 1);
  run(&ring, 1);

  /* several non-blocking neighbourhood collectives outstanding at once, on both comms */
  {
    int a[1] = {me}, ra[MAXN], b[1] = {me * 2}, rb[MAXN], ea[MAXN], eb[MAXN];
    MPI_Request rq[2];
    for (int k = 0; k < MAXN; k++)
      ra[k] = rb[k] = ea[k] = eb[k] = SENT;
    MPI_Ineighbor_allgather(a, 1, MPI_INT, ra, 1, MPI_INT, cart.comm, &rq[0]);
    MPI_Ineighbor_allgather(b, 1, MPI_INT, rb, 1, MPI_INT, graph.comm, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 2; k++)
      ea[k] = cart.src[k];
    for (int k = 0; k < graph.indeg; k++)
      eb[k] = graph.src[k] * 2;
    mt_check_ints("concurrent ineighbor_allgather on cart", ra, ea, 4);
    mt_check_ints("concurrent ineighbor_allgather on distgraph", rb, eb, graph.indeg);
  }

  /* persistent neighbourhood allgather on the dist graph, three starts */
  {
    int sb, rb[MAXN], ok = 1;
    MPI_Request rq;
    MPI_Neighbor_allgather_init(&sb, 1, MPI_INT, rb, 1, MPI_INT, graph.comm, MPI_INFO_NULL, &rq);
    for (int round = 0; round < 3; round++) {
      sb = me + 10 * round;
      for (int k = 0; k < MAXN; k++)
        rb[k] = SENT;
      MPI_Start(&rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      for (int k = 0; k < graph.indeg; k++)
        if (rb[k] != graph.src[k] + 10 * round)
          ok = 0;
    }
    mt_check(ok, "neighbor_allgather_init on distgraph, 3 starts");
    MPI_Request_free(&rq);
  }

  MPI_Comm_free(&cart.comm);
  MPI_Comm_free(&graph.comm);
  MPI_Comm_free(&ring.comm);
  return mt_end();
}
