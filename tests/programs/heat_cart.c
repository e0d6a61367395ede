/*
 * heat_cart.c - a 2-D explicit heat equation on an MPI_Cart_create grid, a long-running
 * workload for checkpoint chains.
 *
 *   usage: heat_cart [ITERS [N [RESID_EVERY]]]   defaults 4000 256 10
 *
 * The grid communicator is named, returns errors (MPI_ERRORS_RETURN, and every call's code is
 * checked) and carries an attribute that the program reads back each residual step.  Each rank
 * owns an N x N block with a ghost frame; the halo exchange sends rows as contiguous runs and
 * columns with an MPI_Type_vector, using MPI_Cart_shift neighbours (non-periodic in x,
 * periodic in y).  Every RESID_EVERY iterations an MPI_Allreduce of the squared update.
 * All output comes from rank 0 at the end and depends only on the arguments and the rank
 * count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <math.h>

#define CHECK(call)                                             \
  do {                                                          \
    int rc_ = (call);                                           \
    if (rc_ != MPI_SUCCESS) {                                   \
      char s_[MPI_MAX_ERROR_STRING];                            \
      int l_;                                                   \
      MPI_Error_string(rc_, s_, &l_);                           \
      fprintf(stderr, "heat_cart: %s failed: %s\n", #call, s_); \
      MPI_Abort(MPI_COMM_WORLD, 3);                             \
    }                                                           \
  } while (0)

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("heat_cart");
  const long iters = mt_arg("heat_cart", argc, argv, 1, 4000);
  const int n = (int)mt_arg("heat_cart", argc, argv, 2, 256);
  const long resid_every = mt_arg("heat_cart", argc, argv, 3, 10);
  int dims[2] = {0, 0}, periods[2] = {0, 1};
  MPI_Dims_create(mt_.size, 2, dims);
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  CHECK(MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN));
  CHECK(MPI_Comm_set_name(grid, "heat grid"));
  int keyval;
  static int attr_value = 4242;
  CHECK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
  CHECK(MPI_Comm_set_attr(grid, keyval, &attr_value));
  int me, coords[2], up, down, left, right;
  CHECK(MPI_Comm_rank(grid, &me));
  CHECK(MPI_Cart_coords(grid, me, 2, coords));
  CHECK(MPI_Cart_shift(grid, 0, 1, &up, &down));
  CHECK(MPI_Cart_shift(grid, 1, 1, &left, &right));

  const int w = n + 2;
  MPI_Datatype column;
  CHECK(MPI_Type_vector(n, 1, w, MPI_DOUBLE, &column));
  CHECK(MPI_Type_commit(&column));
  double *u = mt_alloc(sizeof(double) * (size_t)w * (size_t)w);
  double *v = mt_alloc(sizeof(double) * (size_t)w * (size_t)w);
#define AT(a, i, j) (a)[(size_t)(i) * (size_t)w + (size_t)(j)]
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= n; j++) {
      long gi = (long)coords[0] * n + i, gj = (long)coords[1] * n + j;
      AT(u, i, j) = (double)((gi * 131 + gj * 71) % 1000) / 1000.0;
    }

  long n_resid = 0, attr_bad = 0;
  double last_resid = 0;
  uint64_t digest = 1469598103934665603ULL;
  for (long it = 1; it <= iters; it++) {
    MPI_Request rq[8];
    CHECK(MPI_Irecv(&AT(u, 0, 1), n, MPI_DOUBLE, up, 1, grid, &rq[0]));
    CHECK(MPI_Irecv(&AT(u, n + 1, 1), n, MPI_DOUBLE, down, 2, grid, &rq[1]));
    CHECK(MPI_Irecv(&AT(u, 1, 0), 1, column, left, 3, grid, &rq[2]));
    CHECK(MPI_Irecv(&AT(u, 1, n + 1), 1, column, right, 4, grid, &rq[3]));
    CHECK(MPI_Isend(&AT(u, n, 1), n, MPI_DOUBLE, down, 1, grid, &rq[4]));
    CHECK(MPI_Isend(&AT(u, 1, 1), n, MPI_DOUBLE, up, 2, grid, &rq[5]));
    CHECK(MPI_Isend(&AT(u, 1, n), 1, column, right, 3, grid, &rq[6]));
    CHECK(MPI_Isend(&AT(u, 1, 1), 1, column, left, 4, grid, &rq[7]));
    CHECK(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE));
    double local = 0;
    for (int i = 1; i <= n; i++)
      for (int j = 1; j <= n; j++) {
        double nv = AT(u, i, j) + 0.2 * (AT(u, i - 1, j) + AT(u, i + 1, j) + AT(u, i, j - 1) +
                                         AT(u, i, j + 1) - 4.0 * AT(u, i, j));
        local += (nv - AT(u, i, j)) * (nv - AT(u, i, j));
        AT(v, i, j) = nv;
      }
    double *t = u;
    u = v;
    v = t;
    if (it % resid_every == 0) {
      double global = 0;
      CHECK(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, grid));
      last_resid = sqrt(global);
      digest = mt_mix(digest ^ (uint64_t)(global * 1e12));
      n_resid++;
      int *val, flag;
      CHECK(MPI_Comm_get_attr(grid, keyval, &val, &flag));
      if (!flag || *val != 4242)
        attr_bad++;
    }
  }

  double part = 0;
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= n; j++)
      part += AT(u, i, j) * (double)((i * 7 + j) % 13 + 1);
  double total = 0;
  long total_bad = 0;
  CHECK(MPI_Reduce(&part, &total, 1, MPI_DOUBLE, MPI_SUM, 0, grid));
  CHECK(MPI_Reduce(&attr_bad, &total_bad, 1, MPI_LONG, MPI_SUM, 0, grid));
  char name[MPI_MAX_OBJECT_NAME];
  int len, eh_is_return;
  MPI_Errhandler eh;
  CHECK(MPI_Comm_get_name(grid, name, &len));
  CHECK(MPI_Comm_get_errhandler(grid, &eh));
  eh_is_return = eh == MPI_ERRORS_RETURN;
  if (eh != MPI_ERRORS_RETURN && eh != MPI_ERRHANDLER_NULL)
    MPI_Errhandler_free(&eh);
  if (me == 0) {
    mt_log("parameters: ranks %d (grid %d x %d), iterations %ld, block %d", mt_.size, dims[0],
           dims[1], iters, n);
    mt_log("residual checks %ld, last residual %.12e, digest %016llx", n_resid, last_resid,
           (unsigned long long)digest);
    mt_log("weighted sum %.12e", total);
    mt_check_int("attribute reads that were wrong", total_bad, 0);
  }
  mt_check(strcmp(name, "heat grid") == 0, "grid name '%s'", name);
  mt_check(eh_is_return, "grid error handler is MPI_ERRORS_RETURN");
  free(u);
  free(v);
  MPI_Type_free(&column);
  MPI_Comm_free(&grid);
  MPI_Comm_free_keyval(&keyval);
  return mt_end();
}
