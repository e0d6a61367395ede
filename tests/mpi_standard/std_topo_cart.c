/*
 * std_topo_cart.c - Cartesian process topologies: shifts, subgrids, and a Jacobi relaxation
 * with halo exchange by MPI_Neighbor_alltoall and by MPI_Isend/MPI_Irecv.
 *
 * Source: MPI-3.1, chapter 7 (Process Topologies):
 *   section 7.5.6 "Cartesian Shift Coordinates", its example: a 2D periodic grid holding one
 *     element per process, column i skewed by i steps (MPI_Cart_coords, MPI_Cart_shift,
 *     MPI_Sendrecv_replace);
 *   section 7.5.7 "Partitioning of Cartesian Structures", its example: MPI_Cart_sub of a 3D
 *     grid with remain_dims (true, false, true) and (false, false, true);
 *   section 7.8 "An Application Example" (Figures 18 and 19): a Poisson solver on a 2D
 *     process grid (MPI_Dims_create, MPI_Cart_create with reorder, MPI_Cart_get,
 *     MPI_Cart_shift for the four neighbours), relaxation steps each followed by the halo
 *     exchange of Figure 19 with MPI_Neighbor_alltoall, and the exchange the figure's comment
 *     gives instead (MPI_Irecv/MPI_Isend per neighbour, MPI_Waitall).
 * Adaptations: the grid is Dims_create(size, ...) instead of 2x3x4 (24 processes); the local
 * block is 8x8 instead of 100x100; "relax" is a Jacobi step u = (N+S+E+W - f)/4 with a fixed
 * f; the two exchanges alternate by step; the Poisson grid is periodic only in dimensions
 * with more than 2 processes, because with 1 or 2 processes in a periodic dimension both
 * neighbours are the same process and the two messages exchanged with it are not told apart
 * by MPI_Neighbor_alltoall (the Isend/Irecv exchange uses a tag per direction).  The skew is
 * repeated SKEWS times.  Every value is compared with a serial computation of the whole
 * grid done by every process with the same arithmetic.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"
#include <math.h>

#define NB 8 /* local block NB x NB */
#define ITERS 12
#define SKEWS 5

static double f_of(int gi, int gj)
{
  return (double)((gi * 7 + gj * 3) % 11) * 0.5;
}

__attribute__((noinline)) static double stencil(double n, double s, double w, double e, double f)
{
  return (n + s + w + e - f) * 0.25;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_topo_cart");
  int wrank = mt_.rank, size = mt_.size;

  /* --- 7.5.6: the skew --- */
  int bad_skew = 0;
  {
    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2], rank, source, dest;
    MPI_Comm comm;
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Cart_coords(comm, rank, 2, coords);
    MPI_Cart_shift(comm, 0, coords[1], &source, &dest);
    float A = (float)(coords[0] * 100 + coords[1]);
    for (int t = 1; t <= SKEWS; t++) {
      MPI_Status status;
      MPI_Sendrecv_replace(&A, 1, MPI_FLOAT, dest, 0, source, 0, comm, &status);
      int r0 = ((coords[0] - t * coords[1]) % dims[0] + dims[0] * SKEWS * 4) % dims[0];
      bad_skew += A != (float)(r0 * 100 + coords[1]);
    }
    MPI_Comm_free(&comm);
  }
  mt_check_int("skew by Cart_shift and Sendrecv_replace: wrong", bad_skew, 0);

  /* --- 7.5.7: Cart_sub --- */
  int bad_sub = 0;
  {
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3], rank;
    MPI_Comm comm, comm_new;
    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Cart_coords(comm, rank, 3, coords);
    int remains[2][3] = {{1, 0, 1}, {0, 0, 1}};
    for (int v = 0; v < 2; v++) {
      MPI_Cart_sub(comm, remains[v], &comm_new);
      int n, nd, sdims[3], speriods[3], scoords[3], status;
      MPI_Comm_size(comm_new, &n);
      MPI_Topo_test(comm_new, &status);
      MPI_Cartdim_get(comm_new, &nd);
      bad_sub += status != MPI_CART || nd != (v == 0 ? 2 : 1);
      bad_sub += n != (v == 0 ? dims[0] * dims[2] : dims[2]);
      MPI_Cart_get(comm_new, nd, sdims, speriods, scoords);
      if (v == 0)
        bad_sub += sdims[0] != dims[0] || sdims[1] != dims[2] || scoords[0] != coords[0] ||
                   scoords[1] != coords[2];
      else
        bad_sub += sdims[0] != dims[2] || scoords[0] != coords[2];
      /* the sum of the members' world ranks, from the grid coordinates */
      int s = 0, want = 0;
      MPI_Allreduce(&wrank, &s, 1, MPI_INT, MPI_SUM, comm_new);
      for (int a = 0; a < dims[0]; a++)
        for (int b = 0; b < dims[1]; b++)
          for (int c = 0; c < dims[2]; c++) {
            int cc[3] = {a, b, c}, r;
            if (b != coords[1] || (v == 1 && a != coords[0]))
              continue;
            MPI_Cart_rank(comm, cc, &r);
            want += r; /* reorder is false: the grid rank is the world rank */
          }
      bad_sub += s != want;
      MPI_Comm_free(&comm_new);
    }
    MPI_Comm_free(&comm);
  }
  mt_check_int("Cart_sub subgrids: wrong", bad_sub, 0);

  /* --- 7.8: the application example --- */
  int ndims = 2, num_neigh = 4, reorder = 1;
  int dims[2] = {0, 0}, periods[2], own_coords[2], neigh_rank[4], me;
  MPI_Comm comm = MPI_COMM_WORLD, comm_cart;
  MPI_Dims_create(size, ndims, dims);
  periods[0] = dims[0] > 2;
  periods[1] = dims[1] > 2;
  MPI_Cart_create(comm, ndims, dims, periods, reorder, &comm_cart);
  MPI_Cart_get(comm_cart, ndims, dims, periods, own_coords);
  MPI_Comm_rank(comm_cart, &me);
  MPI_Cart_shift(comm_cart, 0, 1, &neigh_rank[0], &neigh_rank[1]);
  MPI_Cart_shift(comm_cart, 1, 1, &neigh_rank[2], &neigh_rank[3]);

  int GX = dims[0] * NB, GY = dims[1] * NB;
  static double u[NB + 2][NB + 2], un[NB + 2][NB + 2], f[NB + 2][NB + 2];
  double *gu = mt_alloc(sizeof(double) * (size_t)(GX + 2) * (size_t)(GY + 2));
  double *gn = mt_alloc(sizeof(double) * (size_t)(GX + 2) * (size_t)(GY + 2));
#define G(a, i, j) (a)[(size_t)(i) * (size_t)(GY + 2) + (size_t)(j)]
  int i0 = own_coords[0] * NB, j0 = own_coords[1] * NB;
  for (int i = 1; i <= NB; i++)
    for (int j = 1; j <= NB; j++)
      f[i][j] = f_of(i0 + i - 1, j0 + j - 1);

  double sndbuf[4][NB], rcvbuf[4][NB];
  for (int it = 0; it < ITERS; it++) {
    /* relax */
    for (int i = 1; i <= NB; i++)
      for (int j = 1; j <= NB; j++)
        un[i][j] = stencil(u[i - 1][j], u[i + 1][j], u[i][j - 1], u[i][j + 1], f[i][j]);
    for (int i = 1; i <= NB; i++)
      for (int j = 1; j <= NB; j++)
        u[i][j] = un[i][j];
    /* exchange */
    for (int k = 0; k < NB; k++) {
      sndbuf[0][k] = u[1][k + 1];
      sndbuf[1][k] = u[NB][k + 1];
      sndbuf[2][k] = u[k + 1][1];
      sndbuf[3][k] = u[k + 1][NB];
    }
    for (int n = 0; n < 4; n++)
      for (int k = 0; k < NB; k++)
        rcvbuf[n][k] = 0.0; /* a missing neighbour (MPI_PROC_NULL) leaves a zero halo */
    if (it % 2 == 0)
      MPI_Neighbor_alltoall(sndbuf, NB, MPI_DOUBLE, rcvbuf, NB, MPI_DOUBLE, comm_cart);
    else {
      MPI_Request rq[8];
      MPI_Status sts[8];
      for (int n = 0; n < num_neigh; n++) {
        /* a message to the -1 neighbour travels "down" (tag 0), to +1 "up" (tag 1); from
         * the -1 neighbour comes one going up */
        int up = n % 2;
        MPI_Irecv(rcvbuf[n], NB, MPI_DOUBLE, neigh_rank[n], up ? 0 : 1, comm_cart, &rq[2 * n]);
        MPI_Isend(sndbuf[n], NB, MPI_DOUBLE, neigh_rank[n], up, comm_cart, &rq[2 * n + 1]);
      }
      MPI_Waitall(2 * num_neigh, rq, sts);
    }
    for (int k = 0; k < NB; k++) {
      u[0][k + 1] = rcvbuf[0][k];
      u[NB + 1][k + 1] = rcvbuf[1][k];
      u[k + 1][0] = rcvbuf[2][k];
      u[k + 1][NB + 1] = rcvbuf[3][k];
    }
  }
  /* the serial reference on the whole grid */
  for (int it = 0; it < ITERS; it++) {
    for (int i = 1; i <= GX; i++)
      for (int j = 1; j <= GY; j++)
        G(gn, i, j) = stencil(G(gu, i - 1, j), G(gu, i + 1, j), G(gu, i, j - 1), G(gu, i, j + 1),
                              f_of(i - 1, j - 1));
    for (int i = 1; i <= GX; i++)
      for (int j = 1; j <= GY; j++)
        G(gu, i, j) = G(gn, i, j);
    for (int j = 1; j <= GY; j++) {
      G(gu, 0, j) = periods[0] ? G(gu, GX, j) : 0.0;
      G(gu, GX + 1, j) = periods[0] ? G(gu, 1, j) : 0.0;
    }
    for (int i = 1; i <= GX; i++) {
      G(gu, i, 0) = periods[1] ? G(gu, i, GY) : 0.0;
      G(gu, i, GY + 1) = periods[1] ? G(gu, i, 1) : 0.0;
    }
  }
  int bad_relax = 0;
  for (int i = 0; i <= NB + 1; i++)
    for (int j = 0; j <= NB + 1; j++) {
      if ((i == 0 || i == NB + 1) && (j == 0 || j == NB + 1))
        continue; /* corners are not exchanged */
      bad_relax += u[i][j] != G(gu, i0 + i, j0 + j);
    }
  mt_check_int("Poisson relaxation with halo exchange: wrong values", bad_relax, 0);
  double sum = 0;
  for (int i = 1; i <= NB; i++)
    for (int j = 1; j <= NB; j++)
      sum += u[i][j];
  double total = 0, gtotal = 0;
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm_cart);
  for (int i = 1; i <= GX; i++)
    for (int j = 1; j <= GY; j++)
      gtotal += G(gu, i, j);
  if (me == 0)
    mt_check(fabs(total - gtotal) <= 1e-9 * fabs(gtotal),
             "sum of the solution agrees with the serial one");
  free(gu);
  free(gn);
  MPI_Comm_free(&comm_cart);
  mt_allreduce_steps(4);
  return mt_end();
}
