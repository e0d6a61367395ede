/*
 * comm_topo.c - process topologies: Dims_create, Cart_create (2x2, periodic in dim 0 only),
 * Cartdim_get, Cart_get, Cart_coords, Cart_rank (including wrap-around of a periodic
 * coordinate), Cart_shift (PROC_NULL at non-periodic edges), Cart_sub, Cart_map, Topo_test,
 * Graph_create, Graphdims_get, Graph_get, Graph_neighbors_count, Graph_neighbors,
 * Dist_graph_create_adjacent with weights and with MPI_UNWEIGHTED, Dist_graph_create,
 * Dist_graph_neighbors_count and Dist_graph_neighbors. A message along each topology checks
 * the communicators work.
 * Ranks: 4.
 */
#include "mpitest.h"

static int cmp_int(const void *a, const void *b)
{
  return *(const int *)a - *(const int *)b;
}

static const char *topo_name(int t)
{
  switch (t) {
  case MPI_CART:
    return "MPI_CART";
  case MPI_GRAPH:
    return "MPI_GRAPH";
  case MPI_DIST_GRAPH:
    return "MPI_DIST_GRAPH";
  case MPI_UNDEFINED:
    return "MPI_UNDEFINED";
  default:
    return "?";
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("comm_topo");
  mt_require_size(4);
  const int me = mt_.rank;
  int t;

  /* Dims_create (local) */
  {
    int d2[2] = {0, 0}, d3[3] = {0, 3, 0}, d6[2] = {0, 0}, d1[1] = {0};
    MPI_Dims_create(4, 2, d2);
    MPI_Dims_create(24, 3, d3);
    MPI_Dims_create(6, 2, d6);
    MPI_Dims_create(7, 1, d1);
    int got[8] = {d2[0], d2[1], d3[0], d3[1], d3[2], d6[0], d6[1], d1[0]};
    mt_check_ints("dims_create (4,2) (24,3 with dim1=3) (6,2) (7,1)", got,
                  (int[]){2, 2, 4, 3, 2, 3, 2, 7}, 8);
  }

  MPI_Topo_test(MPI_COMM_WORLD, &t);
  mt_check(t == MPI_UNDEFINED, "topo_test(world) = %s", topo_name(t));

  /* ---- Cartesian 2x2, periods {1, 0} ---- */
  MPI_Comm cart;
  int dims[2] = {2, 2}, periods[2] = {1, 0};
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  {
    int nd, gd[2], gp[2], gc[2], c[2], r;
    MPI_Topo_test(cart, &t);
    mt_check(t == MPI_CART, "topo_test(cart) = %s", topo_name(t));
    MPI_Cartdim_get(cart, &nd);
    MPI_Cart_get(cart, 2, gd, gp, gc);
    MPI_Cart_coords(cart, me, 2, c);
    int got[7] = {nd, gd[0], gd[1], gp[0], gp[1], gc[0], gc[1]};
    int exp[7] = {2, 2, 2, 1, 0, me / 2, me % 2};
    mt_check_ints("cartdim, dims, periods, my coords", got, exp, 7);
    mt_check(c[0] == me / 2 && c[1] == me % 2, "cart_coords(%d) = (%d,%d)", me, c[0], c[1]);
    int allr[4];
    for (int i = 0; i < 4; i++) {
      int cc[2] = {i / 2, i % 2};
      MPI_Cart_rank(cart, cc, &allr[i]);
    }
    mt_check_ints("cart_rank of (0,0) (0,1) (1,0) (1,1)", allr, (int[]){0, 1, 2, 3}, 4);
    int wrap[2] = {me / 2 + 2, me % 2}; /* periodic dim: out-of-range coordinate wraps */
    MPI_Cart_rank(cart, wrap, &r);
    mt_check_int("cart_rank with wrapped periodic coordinate", r, me);
    wrap[0] = me / 2 - 1;
    MPI_Cart_rank(cart, wrap, &r);
    mt_check_int("cart_rank with coordinate -1 in periodic dim", r, (me + 2) % 4);

    int s0, d0, s1, d1, s2, d2;
    MPI_Cart_shift(cart, 0, 1, &s0, &d0);
    MPI_Cart_shift(cart, 1, 1, &s1, &d1);
    MPI_Cart_shift(cart, 1, -1, &s2, &d2);
    int sh[6] = {s0, d0, s1, d1, s2, d2};
    int col = me % 2;
    int ex[6] = {(me + 2) % 4,
                 (me + 2) % 4,
                 col == 0 ? MPI_PROC_NULL : me - 1,
                 col == 1 ? MPI_PROC_NULL : me + 1,
                 col == 1 ? MPI_PROC_NULL : me + 1,
                 col == 0 ? MPI_PROC_NULL : me - 1};
    mt_check_ints("cart_shift dim0 +1, dim1 +1, dim1 -1 (src,dst)", sh, ex, 6);

    /* message along dim 1 using the shift result (PROC_NULL at the edge is a no-op) */
    int in = -1, out = me;
    MPI_Sendrecv(&out, 1, MPI_INT, d1, 0, &in, 1, MPI_INT, s1, 0, cart, MPI_STATUS_IGNORE);
    mt_check_int("shift exchange along dim 1", in, col == 0 ? -1 : me - 1);

    /* Cart_sub keeping dim 1: rows {0,1} and {2,3} */
    MPI_Comm row;
    int keep[2] = {0, 1}, rs, rr, rnd, rdims[1], rper[1], rco[1];
    MPI_Cart_sub(cart, keep, &row);
    MPI_Comm_size(row, &rs);
    MPI_Comm_rank(row, &rr);
    MPI_Cart_get(row, 1, rdims, rper, rco);
    MPI_Cartdim_get(row, &rnd);
    int sub[5] = {rs, rr, rnd, rdims[0], rper[0]};
    mt_check_ints("cart_sub(keep dim1): size, rank, ndims, dims, periods", sub,
                  (int[]){2, me % 2, 1, 2, 0}, 5);
    int rsum = 0;
    MPI_Allreduce(&me, &rsum, 1, MPI_INT, MPI_SUM, row);
    mt_check_int("allreduce over row", rsum, me < 2 ? 1 : 5);
    MPI_Comm_free(&row);

    int newrank;
    MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &newrank);
    mt_check_int("cart_map", newrank, me);
  }

  /* ---- Graph: 0-1, 0-2, 0-3, 1-2 (star plus one edge) ---- */
  MPI_Comm graph;
  {
    int index[4] = {3, 5, 7, 8};
    int edges[8] = {1, 2, 3, 0, 2, 0, 1, 0};
    MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &graph);
    MPI_Topo_test(graph, &t);
    mt_check(t == MPI_GRAPH, "topo_test(graph) = %s", topo_name(t));
    int nn, ne;
    MPI_Graphdims_get(graph, &nn, &ne);
    mt_check(nn == 4 && ne == 8, "graphdims_get: %d nodes, %d edges", nn, ne);
    int gi[4], ge[8];
    MPI_Graph_get(graph, 4, 8, gi, ge);
    mt_check_ints("graph_get index", gi, index, 4);
    mt_check_ints("graph_get edges", ge, edges, 8);
    int cnt, nb[4];
    MPI_Graph_neighbors_count(graph, me, &cnt);
    MPI_Graph_neighbors(graph, me, 4, nb);
    int start = me == 0 ? 0 : index[me - 1];
    mt_check_int("graph_neighbors_count", cnt, index[me] - start);
    mt_check_ints("graph_neighbors", nb, edges + start, cnt);
    /* exchange with every neighbour; sum of received world ranks */
    int sum = 0;
    for (int k = 0; k < cnt; k++) {
      int v = -1;
      MPI_Sendrecv(&me, 1, MPI_INT, nb[k], 3, &v, 1, MPI_INT, nb[k], 3, graph, MPI_STATUS_IGNORE);
      sum += v;
    }
    int esum = 0;
    for (int k = 0; k < cnt; k++)
      esum += edges[start + k];
    mt_check_int("graph neighbour exchange sum", sum, esum);
  }

  /* ---- Dist graph, adjacent, weighted: ring r -> r+1 (weight r+1) and r -> r+2 (weight 10) */
  MPI_Comm dg;
  {
    int dst[2] = {(me + 1) % 4, (me + 2) % 4}, dw[2] = {me + 1, 10};
    int src[2] = {(me + 3) % 4, (me + 2) % 4}, sw[2] = {(me + 3) % 4 + 1, 10};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Topo_test(dg, &t);
    mt_check(t == MPI_DIST_GRAPH, "topo_test(dist graph) = %s", topo_name(t));
    int ind, outd, weighted;
    MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &weighted);
    mt_check(ind == 2 && outd == 2 && weighted == 1, "weighted adjacent: in %d out %d weighted %d",
             ind, outd, weighted);
    int gs[2], gsw[2], gd[2], gdw[2];
    MPI_Dist_graph_neighbors(dg, 2, gs, gsw, 2, gd, gdw);
    int got[8] = {gs[0], gs[1], gsw[0], gsw[1], gd[0], gd[1], gdw[0], gdw[1]};
    int exp[8] = {src[0], src[1], sw[0], sw[1], dst[0], dst[1], dw[0], dw[1]};
    mt_check_ints("weighted neighbours: sources, weights, dests, weights", got, exp, 8);
    int in[2] = {-1, -1};
    MPI_Request rq[4];
    for (int k = 0; k < 2; k++)
      MPI_Irecv(&in[k], 1, MPI_INT, gs[k], 4, dg, &rq[k]);
    for (int k = 0; k < 2; k++)
      MPI_Isend(&me, 1, MPI_INT, gd[k], 4, dg, &rq[2 + k]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    mt_check_ints("dist graph exchange", in, src, 2);
    MPI_Comm_free(&dg);
  }

  /* ---- Dist graph, adjacent, unweighted, with a rank that has no edges at all (rank 3) */
  {
    int src[3], dst[3], ni = 0, no = 0;
    /* edges: 0->1, 0->2, 1->2, 2->0 */
    if (me == 0) {
      dst[no++] = 1;
      dst[no++] = 2;
      src[ni++] = 2;
    }
    if (me == 1) {
      dst[no++] = 2;
      src[ni++] = 0;
    }
    if (me == 2) {
      dst[no++] = 0;
      src[ni++] = 0;
      src[ni++] = 1;
    }
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &dg);
    int ind, outd, weighted;
    MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &weighted);
    mt_check(ind == ni && outd == no && weighted == 0,
             "unweighted adjacent: in %d out %d weighted %d", ind, outd, weighted);
    int gs[3] = {-9, -9, -9}, gd[3] = {-9, -9, -9};
    /* pass the exact degrees: MPICH 4.0.2 copies max{in,out}degree entries whatever the
     * real degree is (it reads past its own arrays, and crashes for degree 0) */
    MPI_Dist_graph_neighbors(dg, ind, gs, MPI_UNWEIGHTED, outd, gd, MPI_UNWEIGHTED);
    mt_check_ints("unweighted sources", gs, src, ni);
    mt_check_ints("unweighted destinations", gd, dst, no);
    MPI_Comm_free(&dg);
  }

  /* ---- Dist_graph_create (non-adjacent): each rank declares the edges out of rank
   *      (me+1)%4, i.e. someone else's edges; the library has to redistribute them.
   *      Edges of source s: s -> (s+1)%4 and s -> (s+3)%4. Neighbour order is not specified
   *      by the standard, so the lists are sorted before comparing. */
  {
    int s = (me + 1) % 4, degrees[1] = {2}, targets[2] = {(s + 1) % 4, (s + 3) % 4};
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &s, degrees, targets, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                          &dg);
    int ind, outd, weighted;
    MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &weighted);
    mt_check(ind == 2 && outd == 2, "dist_graph_create: in %d out %d", ind, outd);
    int gs[2], gd[2];
    MPI_Dist_graph_neighbors(dg, 2, gs, MPI_UNWEIGHTED, 2, gd, MPI_UNWEIGHTED);
    qsort(gs, 2, sizeof(int), cmp_int);
    qsort(gd, 2, sizeof(int), cmp_int);
    int es[2] = {(me + 1) % 4, (me + 3) % 4}, ed[2] = {(me + 1) % 4, (me + 3) % 4};
    qsort(es, 2, sizeof(int), cmp_int);
    qsort(ed, 2, sizeof(int), cmp_int);
    mt_check_ints("dist_graph_create sources (sorted)", gs, es, 2);
    mt_check_ints("dist_graph_create destinations (sorted)", gd, ed, 2);
    MPI_Comm_free(&dg);
  }

  MPI_Comm_free(&cart);
  MPI_Comm_free(&graph);
  return mt_end();
}
