/*
 * std4_neighbor.c - distributed graph topologies and neighborhood collectives: blocking,
 * nonblocking and persistent neighbor allgather(v) and alltoall(v,w) on distributed graph and
 * Cartesian communicators, checked against the point-to-point code the standard gives as
 * their meaning.
 *
 * Source: MPI-4.1, chapter 9 (Virtual Topologies for MPI Processes):
 *   section 9.5.4 "Distributed Graph Constructor", its examples: (1) the adjacency matrix of
 *     four processes (0: 1,3; 1: 0; 2: 3; 3: 0,2) given three ways, each process its
 *     outgoing edges with MPI_Dist_graph_create, the whole graph on process 0 with
 *     MPI_Dist_graph_create, and MPI_Dist_graph_create_adjacent, all with unit weights;
 *     (2) the P x Q torus with diagonal edges, the edges along the dimensions of weight 2,
 *     the diagonals of weight 1, MPI_Dist_graph_create with n = 1 and reorder = 1;
 *   section 9.6.1 "Neighborhood Gather" and 9.6.2 "Neighborhood Alltoall": the
 *     MPI_Dist_graph_neighbors_count / MPI_Dist_graph_neighbors / MPI_Isend / MPI_Irecv /
 *     MPI_Waitall code given as the outcome of MPI_Neighbor_allgather(v) and
 *     MPI_Neighbor_alltoall(v) on a distributed graph (run here as the reference), and, for
 *     a Cartesian topology, the MPI_Cart_shift / MPI_Sendrecv code given as the outcome of
 *     MPI_Neighbor_alltoall (tags d*2 and d*2+1), on a 2 x 2 grid periodic in dimension 0
 *     (dims[0] = 2: the source and destination are the same process, the case of the advice
 *     to implementors) and not periodic in dimension 1 (MPI_PROC_NULL neighbors, whose
 *     blocks must be left alone);
 *   sections 9.7 and 9.8 (no example there): the same operations as MPI_Ineighbor_* and
 *     MPI_Neighbor_*_init requests.
 * The HTML edition's section numbers are used (one more than the PDF's chapter numbers); its
 * code is shown as images, read here from a Markdown rendering of the same standard text.
 * Adaptations: the torus runs with P = Q = 2 (four processes: the "x+1" and "x-1" partners
 * coincide, so every neighbor appears twice); it is exercised with MPI_Neighbor_allgather
 * (alltoall blocks would be ambiguous between duplicate edges), its received values and the
 * source weights (MPI_Dist_graph_neighbors) are checked as multisets against those computed
 * from the example's formulas on the new communicator's ranks (reorder may renumber).  The
 * "..." of the reference code (tags, communicator) is filled in; data, counts and the number
 * of rounds (ROUNDS, with an MPI_Allreduce on MPI_COMM_WORLD between rounds) are made up.
 * The Cartesian part also runs on a periodic ring of four processes (1 x 4).
 * Adapted because of Debian's MPICH 4.0.2: its MPI_Neighbor_alltoallv and _alltoallw (all
 * forms) exchange the two blocks of a periodic dimension of two processes (where the source
 * and the destination are the same process), against the standard's MPI_Sendrecv code and
 * MPI_Neighbor_alltoall: on the 2 x 2 grid only the alltoall and allgather forms run; the v
 * and w forms run on the graphs and on the ring.
 * Ranks: exactly 4.
 */
#include "../programs/mpitest.h"

#define ROUNDS 2
#define MAXN 8

static int cmp_int(const void *a, const void *b)
{
  return *(const int *)a - *(const int *)b;
}

/* the neighbors of a topology communicator, in the order neighborhood collectives use */
static void neighbors(MPI_Comm comm, int *indeg, int *srcs, int *outdeg, int *dsts)
{
  int status;
  MPI_Topo_test(comm, &status);
  if (status == MPI_CART) {
    int ndims;
    MPI_Cartdim_get(comm, &ndims);
    for (int d = 0; d < ndims; d++) {
      int s, t;
      MPI_Cart_shift(comm, d, 1, &s, &t);
      srcs[2 * d] = dsts[2 * d] = s;
      srcs[2 * d + 1] = dsts[2 * d + 1] = t;
    }
    *indeg = *outdeg = 2 * ndims;
  } else {
    int weighted;
    MPI_Dist_graph_neighbors_count(comm, indeg, outdeg, &weighted);
    MPI_Dist_graph_neighbors(comm, *indeg, srcs, MPI_UNWEIGHTED, *outdeg, dsts, MPI_UNWEIGHTED);
  }
}

/* One round of neighbor allgather and alltoall (blocking, nonblocking, persistent), checked
 * against the reference point-to-point code.  Returns the number of wrong elements. */
static int exchange(MPI_Comm comm, int round, int tagbase)
{
  int rank, indeg, outdeg, srcs[MAXN], dsts[MAXN], bad = 0;
  MPI_Comm_rank(comm, &rank);
  neighbors(comm, &indeg, srcs, &outdeg, dsts);
  int sendbuf[MAXN], recvbuf[MAXN], ref[MAXN];
  int one = rank * 100 + round;

  /* reference for allgather: Isend to each outgoing, Irecv from each incoming neighbor */
  {
    MPI_Request r[2 * MAXN];
    int n = 0;
    for (int k = 0; k < indeg; k++)
      ref[k] = -1;
    for (int k = 0; k < outdeg; k++)
      MPI_Isend(&one, 1, MPI_INT, dsts[k], tagbase, comm, &r[n++]);
    for (int k = 0; k < indeg; k++)
      MPI_Irecv(&ref[k], 1, MPI_INT, srcs[k], tagbase, comm, &r[n++]);
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
  }
  for (int form = 0; form < 3; form++) {
    for (int k = 0; k < indeg; k++)
      recvbuf[k] = -1;
    MPI_Request req;
    if (form == 0)
      MPI_Neighbor_allgather(&one, 1, MPI_INT, recvbuf, 1, MPI_INT, comm);
    else if (form == 1) {
      MPI_Ineighbor_allgather(&one, 1, MPI_INT, recvbuf, 1, MPI_INT, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Neighbor_allgather_init(&one, 1, MPI_INT, recvbuf, 1, MPI_INT, comm, MPI_INFO_NULL, &req);
      for (int again = 0; again < 2; again++) {
        for (int k = 0; k < indeg; k++)
          recvbuf[k] = -1;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }
      MPI_Request_free(&req);
    }
    for (int k = 0; k < indeg; k++) {
      bad += recvbuf[k] != ref[k];
      bad += srcs[k] != MPI_PROC_NULL && ref[k] != srcs[k] * 100 + round;
      bad += srcs[k] == MPI_PROC_NULL && ref[k] != -1;
    }
  }

  /* reference for alltoall (distributed graph): block k to dsts[k], block k from srcs[k] */
  int status;
  MPI_Topo_test(comm, &status);
  for (int k = 0; k < outdeg; k++)
    sendbuf[k] = rank * 1000 + k * 10 + round;
  for (int k = 0; k < indeg; k++)
    ref[k] = -1;
  if (status == MPI_CART) {
    /* the standard's code for a Cartesian communicator */
    int ndims, rank_source, rank_dest;
    MPI_Status st;
    MPI_Cartdim_get(comm, &ndims);
    for (int d = 0; d < ndims; d++) {
      MPI_Cart_shift(comm, d, 1, &rank_source, &rank_dest);
      MPI_Sendrecv(&sendbuf[d * 2 + 0], 1, MPI_INT, rank_source, d * 2, &ref[d * 2 + 1], 1, MPI_INT,
                   rank_dest, d * 2, comm, &st);
      /* communication in direction of displacement -1 */
      MPI_Sendrecv(&sendbuf[d * 2 + 1], 1, MPI_INT, rank_dest, d * 2 + 1, &ref[d * 2 + 0], 1,
                   MPI_INT, rank_source, d * 2 + 1, comm, &st);
      /* communication in direction of displacement +1 */
    }
  } else {
    MPI_Request r[2 * MAXN];
    int n = 0;
    for (int k = 0; k < outdeg; k++)
      MPI_Isend(&sendbuf[k], 1, MPI_INT, dsts[k], tagbase + 1, comm, &r[n++]);
    for (int k = 0; k < indeg; k++)
      MPI_Irecv(&ref[k], 1, MPI_INT, srcs[k], tagbase + 1, comm, &r[n++]);
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
  }
  int counts[MAXN], displs[MAXN], rcounts[MAXN], rdispls[MAXN], v_recv[2 * MAXN];
  MPI_Aint bdispls[MAXN], rbdispls[MAXN];
  MPI_Datatype types[MAXN];
  for (int k = 0; k < MAXN; k++) {
    counts[k] = rcounts[k] = 1;
    displs[k] = k;
    rdispls[k] = 2 * (MAXN - 1 - k); /* the v forms receive in reverse, every other slot */
    bdispls[k] = (MPI_Aint)(k * sizeof(int));
    rbdispls[k] = (MPI_Aint)(rdispls[k] * sizeof(int));
    types[k] = MPI_INT;
  }
  /* MPICH 4.0.2 swaps the two blocks of a periodic dimension of 2 processes in the v and w
   * forms (source == destination): they run on the other communicators only */
  int nforms = 5;
  if (status == MPI_CART)
    for (int k = 0; k + 1 < indeg; k += 2)
      if (srcs[k] == srcs[k + 1] && srcs[k] != MPI_PROC_NULL)
        nforms = 3;
  for (int form = 0; form < nforms; form++) {
    int *got = recvbuf;
    for (int k = 0; k < 2 * MAXN; k++)
      v_recv[k] = -1;
    for (int k = 0; k < indeg; k++)
      recvbuf[k] = -1;
    MPI_Request req;
    switch (form) {
    case 0:
      MPI_Neighbor_alltoall(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, comm);
      break;
    case 1:
      MPI_Ineighbor_alltoall(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    case 2:
      MPI_Neighbor_alltoall_init(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, comm, MPI_INFO_NULL,
                                 &req);
      MPI_Start(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      MPI_Request_free(&req);
      break;
    case 3:
      MPI_Neighbor_alltoallv_init(sendbuf, counts, displs, MPI_INT, v_recv, rcounts, rdispls,
                                  MPI_INT, comm, MPI_INFO_NULL, &req);
      MPI_Start(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      MPI_Request_free(&req);
      break;
    default:
      MPI_Ineighbor_alltoallw(sendbuf, counts, bdispls, types, v_recv, rcounts, rbdispls, types,
                              comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    int tmp[MAXN];
    if (form >= 3) {
      for (int k = 0; k < indeg; k++)
        tmp[k] = v_recv[rdispls[k]];
      for (int k = 0; k < 2 * MAXN; k++) {
        int used = 0;
        for (int l = 0; l < indeg; l++)
          used |= k == rdispls[l];
        bad += !used && v_recv[k] != -1;
      }
      got = tmp;
    }
    for (int k = 0; k < indeg; k++)
      bad += got[k] != ref[k];
  }
  /* the reference itself: the block a neighbor addressed to this process */
  for (int k = 0; k < indeg; k++) {
    if (srcs[k] == MPI_PROC_NULL) {
      bad += ref[k] != -1;
      continue;
    }
    int want = ref[k] - round - srcs[k] * 1000;
    bad += want < 0 || want % 10 != 0 || want / 10 >= MAXN;
  }
  return bad;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std4_neighbor");
  mt_require_size(4);
  int rank = mt_.rank;

  /* 9.5.4 example 1: three ways to give the same graph */
  static const int deg[4] = {2, 1, 1, 2};
  static const int adj[4][2] = {{1, 3}, {0, -1}, {3, -1}, {0, 2}};
  MPI_Comm g[3];
  {
    int sources[1] = {rank}, degrees[1] = {deg[rank]}, destinations[2], weights[2] = {1, 1};
    for (int k = 0; k < deg[rank]; k++)
      destinations[k] = adj[rank][k];
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources, degrees, destinations, weights, MPI_INFO_NULL,
                          0, &g[0]);
  }
  {
    int sources[4] = {0, 1, 2, 3}, degrees[4] = {2, 1, 1, 2}, destinations[6] = {1, 3, 0, 3, 0, 2};
    int n = rank == 0 ? 4 : 0;
    MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, destinations, MPI_UNWEIGHTED,
                          MPI_INFO_NULL, 0, &g[1]);
  }
  {
    int nb[2], w[2] = {1, 1};
    for (int k = 0; k < deg[rank]; k++)
      nb[k] = adj[rank][k];
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg[rank], nb, w, deg[rank], nb, w,
                                   MPI_INFO_NULL, 0, &g[2]);
  }
  const char *gname[3] = {"outgoing edges per process", "whole graph on process 0",
                          "create_adjacent"};
  for (int i = 0; i < 3; i++) {
    int indeg, outdeg, weighted, s[MAXN], d[MAXN], want[2];
    MPI_Dist_graph_neighbors_count(g[i], &indeg, &outdeg, &weighted);
    int ok = indeg == deg[rank] && outdeg == deg[rank];
    if (ok) {
      MPI_Dist_graph_neighbors(g[i], indeg, s, MPI_UNWEIGHTED, outdeg, d, MPI_UNWEIGHTED);
      qsort(s, (size_t)indeg, sizeof(int), cmp_int);
      qsort(d, (size_t)outdeg, sizeof(int), cmp_int);
      for (int k = 0; k < deg[rank]; k++)
        want[k] = adj[rank][k];
      qsort(want, (size_t)deg[rank], sizeof(int), cmp_int);
      for (int k = 0; k < deg[rank]; k++)
        ok &= s[k] == want[k] && d[k] == want[k];
    }
    int topo;
    MPI_Topo_test(g[i], &topo);
    mt_check(ok && topo == MPI_DIST_GRAPH, "9.5.4 example 1 (%s): the neighbors of the table",
             gname[i]);
  }

  /* the Cartesian grid: 2 x 2, periodic in dimension 0 only */
  MPI_Comm cart;
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_Dims_create(4, 2, dims);
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);

  /* and a periodic ring of four */
  MPI_Comm ring;
  int rdims[1] = {4}, rperiods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, rdims, rperiods, 0, &ring);

  int bad[5] = {0, 0, 0, 0, 0};
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < 3; i++)
      bad[i] += exchange(g[i], round, 10 * (i + 1));
    bad[3] += exchange(cart, round, 40);
    bad[4] += exchange(ring, round, 50);
    int v = 1, s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad[3] += s != 4;
  }
  for (int i = 0; i < 3; i++) {
    char what[160];
    snprintf(what, sizeof what, "9.6 neighbor collectives on the graph (%s): wrong", gname[i]);
    mt_check_int(what, bad[i], 0);
  }
  mt_check_int("9.6.2 neighbor collectives on the 2x2 grid (periodic, non-periodic): wrong", bad[3],
               0);
  mt_check_int("9.6.2 neighbor collectives on a periodic ring of 4: wrong", bad[4], 0);
  for (int i = 0; i < 3; i++)
    MPI_Comm_free(&g[i]);
  MPI_Comm_free(&cart);
  MPI_Comm_free(&ring);
  mt_allreduce_steps(2);

  /* 9.5.4 example 2: the P x Q torus with diagonals */
  {
    int P = 2, Q = 2;
    int x, y;
    int sources[1], degrees[1];
    int destinations[8], weights[8];
    MPI_Comm comm_dist_graph;

    /* get x and y dimension */
    y = rank / P;
    x = rank % P;

    /* get my communication partners along x dimension */
    destinations[0] = P * y + (x + 1) % P;
    weights[0] = 2;
    destinations[1] = P * y + (P + x - 1) % P;
    weights[1] = 2;

    /* get my communication partners along y dimension */
    destinations[2] = P * ((y + 1) % Q) + x;
    weights[2] = 2;
    destinations[3] = P * ((Q + y - 1) % Q) + x;
    weights[3] = 2;

    /* get my communication partners along diagonals */
    destinations[4] = P * ((y + 1) % Q) + (x + 1) % P;
    weights[4] = 1;
    destinations[5] = P * ((Q + y - 1) % Q) + (x + 1) % P;
    weights[5] = 1;
    destinations[6] = P * ((y + 1) % Q) + (P + x - 1) % P;
    weights[6] = 1;
    destinations[7] = P * ((Q + y - 1) % Q) + (P + x - 1) % P;
    weights[7] = 1;

    sources[0] = rank;
    degrees[0] = 8;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources, degrees, destinations, weights, MPI_INFO_NULL,
                          1, &comm_dist_graph);

    /* what the new communicator's rank r must see: the edges into node r */
    int r;
    MPI_Comm_rank(comm_dist_graph, &r);
    int want_src[8], want_w[8], nwant = 0;
    for (int node = 0; node < P * Q; node++) {
      int ny = node / P, nx = node % P;
      int d[8] = {P * ny + (nx + 1) % P,
                  P * ny + (P + nx - 1) % P,
                  P * ((ny + 1) % Q) + nx,
                  P * ((Q + ny - 1) % Q) + nx,
                  P * ((ny + 1) % Q) + (nx + 1) % P,
                  P * ((Q + ny - 1) % Q) + (nx + 1) % P,
                  P * ((ny + 1) % Q) + (P + nx - 1) % P,
                  P * ((Q + ny - 1) % Q) + (P + nx - 1) % P};
      for (int k = 0; k < 8; k++)
        if (d[k] == r) {
          want_src[nwant] = node;
          want_w[nwant++] = k < 4 ? 2 : 1;
        }
    }
    int indeg, outdeg, weighted, srcs[16], sw[16], dsts[16], dw[16];
    MPI_Dist_graph_neighbors_count(comm_dist_graph, &indeg, &outdeg, &weighted);
    int ok = indeg == nwant && outdeg == 8 && weighted;
    if (ok) {
      MPI_Dist_graph_neighbors(comm_dist_graph, indeg, srcs, sw, outdeg, dsts, dw);
      /* compare (source, weight) pairs as multisets */
      int a[16], b[16];
      for (int k = 0; k < indeg; k++) {
        a[k] = srcs[k] * 10 + sw[k];
        b[k] = want_src[k] * 10 + want_w[k];
      }
      qsort(a, (size_t)indeg, sizeof(int), cmp_int);
      qsort(b, (size_t)indeg, sizeof(int), cmp_int);
      for (int k = 0; k < indeg; k++)
        ok &= a[k] == b[k];
    }
    mt_check(ok, "9.5.4 example 2: the torus's incoming edges and weights");
    int badt = 0;
    for (int round = 0; round < ROUNDS && ok; round++) {
      int one = r * 100 + round, got[16];
      MPI_Request req;
      for (int form = 0; form < 3; form++) {
        for (int k = 0; k < indeg; k++)
          got[k] = -1;
        if (form == 0)
          MPI_Neighbor_allgather(&one, 1, MPI_INT, got, 1, MPI_INT, comm_dist_graph);
        else if (form == 1) {
          MPI_Ineighbor_allgather(&one, 1, MPI_INT, got, 1, MPI_INT, comm_dist_graph, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
          MPI_Neighbor_allgather_init(&one, 1, MPI_INT, got, 1, MPI_INT, comm_dist_graph,
                                      MPI_INFO_NULL, &req);
          MPI_Start(&req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          MPI_Request_free(&req);
        }
        for (int k = 0; k < indeg; k++)
          badt += got[k] != srcs[k] * 100 + round;
      }
      int v = 1, s = 0;
      MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      badt += s != 4;
    }
    mt_check_int("9.5.4 example 2: neighbor allgather on the torus: wrong", badt, 0);
    MPI_Comm_free(&comm_dist_graph);
  }

  mt_allreduce_steps(4);
  return mt_end();
}
