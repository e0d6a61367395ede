/*
 * std_rma_active.c - one-sided communication with active target synchronization: fences,
 * and post-start-complete-wait, including the double-buffered pattern with MPI_MODE_NOCHECK.
 *
 * Source: MPI-3.1, chapter 11 (One-Sided Communications):
 *   section 11.3.3 "Examples for Communication Calls", both examples: A1 MAPVALS, the
 *     indirect assignment A = B(map) for a block-distributed permutation, with origin and
 *     target types from MPI_Type_create_indexed_block, MPI_Get between two MPI_Win_fence;
 *     A2 the simpler MAPVALS with one MPI_Get per element;
 *   section 11.8 "Examples", the first five: A3 a loosely synchronous iteration with
 *     MPI_Win_fence(MPI_MODE_NOPRECEDE) / MPI_Put / MPI_Win_fence(MPI_MODE_NOSTORE |
 *     MPI_MODE_NOSUCCEED); A4 the same with gets and the update split into boundary and core
 *     (MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE, then MPI_MODE_NOSUCCEED); A5 A3 with
 *     post-start-complete-wait; A6 A4 with post-start-complete-wait (post with
 *     MPI_MODE_NOPUT); A7 the checkerboard / double buffer pattern on two windows, posts
 *     with MPI_MODE_NOCHECK | MPI_MODE_NOPUT, starts with MPI_MODE_NOCHECK, the barrier
 *     before the loop and the early post of the next round's window.
 * Adaptations: "converged" is a fixed number of steps; the arrays are a periodic 1D
 * distribution of M ints per process with a one-cell halo on each side, the neighbours are
 * the previous and next ranks, "update" is an integer Jacobi-like step (exact), the puts and
 * gets move one boundary cell into the neighbour's halo; in A7, update2(X, Y) mixes each cell
 * of X with its neighbours (the halo) and Y, update1(X) changes X alone, as the standard's
 * comments describe their dependences.  MAPVALS runs with four different permutations
 * (i -> (c*i + 3) mod p*m, c coprime with p*m).  Every result is compared with a serial
 * computation of the whole array.
 * Ranks: 2 to 4 (p*m must be coprime with 5, 7, 11 and 13).
 */
#include "../programs/mpitest.h"

#define M 8 /* cells per process */
#define STEPS 5
#define P 1000003

static int rank, size, left, right;

/* --- MAPVALS --- */
static void mapvals(float *A, float *B, const int *map, int m, MPI_Comm comm, int p, int simple)
{
  MPI_Win win;
  MPI_Aint lowerbound, realextent;
  MPI_Type_get_extent(MPI_FLOAT, &lowerbound, &realextent);
  int disp_int = (int)realextent;
  MPI_Aint wsize = m * realextent;
  MPI_Win_create(B, wsize, disp_int, MPI_INFO_NULL, comm, &win);
  if (simple) {
    MPI_Win_fence(0, win);
    for (int i = 0; i < m; i++) {
      int j = map[i] / m;
      MPI_Aint disp_aint = map[i] % m;
      MPI_Get(&A[i], 1, MPI_FLOAT, j, disp_aint, 1, MPI_FLOAT, win);
    }
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    return;
  }
  int *count = mt_alloc(sizeof(int) * (size_t)p), *total = mt_alloc(sizeof(int) * (size_t)p);
  int *oindex = mt_alloc(sizeof(int) * (size_t)m), *tindex = mt_alloc(sizeof(int) * (size_t)m);
  MPI_Datatype *otype = mt_alloc(sizeof(MPI_Datatype) * (size_t)p);
  MPI_Datatype *ttype = mt_alloc(sizeof(MPI_Datatype) * (size_t)p);
  for (int i = 0; i < p; i++)
    count[i] = 0;
  for (int i = 0; i < m; i++)
    count[map[i] / m]++;
  total[0] = 0;
  for (int i = 1; i < p; i++)
    total[i] = total[i - 1] + count[i - 1];
  for (int i = 0; i < p; i++)
    count[i] = 0;
  for (int i = 0; i < m; i++) {
    int j = map[i] / m, k = map[i] % m;
    oindex[total[j] + count[j]] = i;
    tindex[total[j] + count[j]] = k;
    count[j]++;
  }
  for (int i = 0; i < p; i++) {
    MPI_Type_create_indexed_block(count[i], 1, &oindex[total[i]], MPI_FLOAT, &otype[i]);
    MPI_Type_commit(&otype[i]);
    MPI_Type_create_indexed_block(count[i], 1, &tindex[total[i]], MPI_FLOAT, &ttype[i]);
    MPI_Type_commit(&ttype[i]);
  }
  MPI_Win_fence(0, win);
  for (int i = 0; i < p; i++)
    MPI_Get(A, 1, otype[i], i, 0, 1, ttype[i], win);
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
  for (int i = 0; i < p; i++) {
    MPI_Type_free(&otype[i]);
    MPI_Type_free(&ttype[i]);
  }
  free(count);
  free(total);
  free(oindex);
  free(tindex);
  free(otype);
  free(ttype);
}

/* --- the 1D halo arrays --- */
static int init_val(int g, int which)
{
  return (g * 37 + which * 11 + 5) % 101;
}
static int step_val(int l, int c, int r)
{
  return (int)(((long)l + 2L * c + 3L * r + 1) % P);
}

/* one Jacobi-like step on the interior of x[0..M+1] (halos used, not changed) */
static void update(int *x)
{
  int t[M + 2];
  for (int i = 1; i <= M; i++)
    t[i] = step_val(x[i - 1], x[i], x[i + 1]);
  for (int i = 1; i <= M; i++)
    x[i] = t[i];
}

/* serial reference on the global periodic array of n cells */
static void gstep(int *g, int n)
{
  int *t = mt_alloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    t[i] = step_val(g[(i + n - 1) % n], g[i], g[(i + 1) % n]);
  memcpy(g, t, sizeof(int) * (size_t)n);
  free(t);
}

static int compare(const int *x, const int *g)
{
  int bad = 0;
  int n = size * M;
  for (int i = 1; i <= M; i++)
    bad += x[i] != g[rank * M + i - 1];
  bad += x[0] != g[(rank * M - 1 + n) % n] || x[M + 1] != g[(rank * M + M) % n];
  return bad;
}

static MPI_Group neighbours(MPI_Comm comm)
{
  MPI_Group world, g;
  int r[2] = {left, right};
  MPI_Comm_group(comm, &world);
  MPI_Group_incl(world, left == right ? 1 : 2, r, &g);
  MPI_Group_free(&world);
  return g;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_rma_active");
  rank = mt_.rank;
  size = mt_.size;
  left = (rank + size - 1) % size;
  right = (rank + 1) % size;
  MPI_Comm comm = MPI_COMM_WORLD;
  int n = size * M;

  /* A1, A2: MAPVALS */
  int mult[4] = {5, 7, 11, 13}, bad_map[2] = {0, 0};
  for (int v = 0; v < 4; v++) {
    float A[M], B[M];
    int map[M];
    for (int i = 0; i < M; i++) {
      int g = rank * M + i;
      B[i] = (float)(1000 * v + g);
      map[i] = (mult[v] * g + 3) % n;
    }
    for (int simple = 0; simple < 2; simple++) {
      for (int i = 0; i < M; i++)
        A[i] = -1;
      mapvals(A, B, map, M, comm, size, simple);
      for (int i = 0; i < M; i++)
        bad_map[simple] += A[i] != (float)(1000 * v + map[i]);
    }
  }
  mt_check_int("A1 MAPVALS with indexed_block types: wrong", bad_map[0], 0);
  mt_check_int("A2 MAPVALS one get per element: wrong", bad_map[1], 0);

  int *g = mt_alloc(sizeof(int) * (size_t)n);
  static int A[M + 2];
  MPI_Win win;
  MPI_Win_create(A, sizeof A, sizeof(int), MPI_INFO_NULL, comm, &win);
  MPI_Group nbrs = neighbours(comm);

  for (int variant = 0; variant < 4; variant++) {
    /* start: the global array and the halos from the formula */
    for (int i = 0; i < n; i++)
      g[i] = init_val(i, variant);
    for (int i = 0; i <= M + 1; i++)
      A[i] = init_val((rank * M + i - 1 + n) % n, variant);
    MPI_Barrier(comm);
    int bad = 0;
    for (int s = 0; s < STEPS; s++) {
      if (variant == 0) { /* A3: fence and put */
        update(A);
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        MPI_Put(&A[1], 1, MPI_INT, left, M + 1, 1, MPI_INT, win);
        MPI_Put(&A[M], 1, MPI_INT, right, 0, 1, MPI_INT, win);
        MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED, win);
      } else if (variant == 1) { /* A4: fence and get, boundary then core */
        int old[M + 2];
        memcpy(old, A, sizeof old);
        A[1] = step_val(old[0], old[1], old[2]); /* update_boundary */
        A[M] = step_val(old[M - 1], old[M], old[M + 1]);
        MPI_Win_fence(MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE, win);
        MPI_Get(&A[0], 1, MPI_INT, left, M, 1, MPI_INT, win);
        MPI_Get(&A[M + 1], 1, MPI_INT, right, 1, 1, MPI_INT, win);
        for (int i = 2; i < M; i++) /* update_core */
          A[i] = step_val(old[i - 1], old[i], old[i + 1]);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
      } else if (variant == 2) { /* A5: post-start-complete-wait with put */
        update(A);
        MPI_Win_post(nbrs, 0, win);
        MPI_Win_start(nbrs, 0, win);
        MPI_Put(&A[1], 1, MPI_INT, left, M + 1, 1, MPI_INT, win);
        MPI_Put(&A[M], 1, MPI_INT, right, 0, 1, MPI_INT, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
      } else { /* A6: post-start-complete-wait with get, split update */
        int old[M + 2];
        memcpy(old, A, sizeof old);
        A[1] = step_val(old[0], old[1], old[2]);
        A[M] = step_val(old[M - 1], old[M], old[M + 1]);
        MPI_Win_post(nbrs, MPI_MODE_NOPUT, win);
        MPI_Win_start(nbrs, 0, win);
        MPI_Get(&A[0], 1, MPI_INT, left, M, 1, MPI_INT, win);
        MPI_Get(&A[M + 1], 1, MPI_INT, right, 1, 1, MPI_INT, win);
        for (int i = 2; i < M; i++)
          A[i] = step_val(old[i - 1], old[i], old[i + 1]);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
      }
      gstep(g, n);
      bad += compare(A, g);
    }
    char what[80];
    snprintf(what, sizeof what, "A%d %s: wrong cells over %d steps", 3 + variant,
             variant == 0   ? "fence with put"
             : variant == 1 ? "fence with get, split update"
             : variant == 2 ? "PSCW with put"
                            : "PSCW with get, split update",
             STEPS);
    mt_check_int(what, bad, 0);
  }
  MPI_Win_free(&win);

  /* A7: the checkerboard / double buffer pattern */
  {
    static int A0[M + 2], A1[M + 2];
    MPI_Win win0, win1;
    MPI_Win_create(A0, sizeof A0, sizeof(int), MPI_INFO_NULL, comm, &win0);
    MPI_Win_create(A1, sizeof A1, sizeof(int), MPI_INFO_NULL, comm, &win1);
    int *g0 = mt_alloc(sizeof(int) * (size_t)n), *g1 = mt_alloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
      g0[i] = init_val(i, 7);
      g1[i] = init_val(i, 8);
    }
    for (int i = 0; i <= M + 1; i++) {
      A0[i] = init_val((rank * M + i - 1 + n) % n, 7);
      A1[i] = init_val((rank * M + i - 1 + n) % n, 8);
    }
    int steps = 0, bad = 0;
#define CONVERGED() (steps >= STEPS)
/* update2(X, Y): each cell of X from its neighbours (X's halos) and Y; update1(X): X alone */
#define UPDATE2(X, Y)                                                               \
  do {                                                                              \
    int t_[M + 2];                                                                  \
    for (int i = 1; i <= M; i++)                                                    \
      t_[i] = (int)(((long)step_val((X)[i - 1], (X)[i], (X)[i + 1]) + (Y)[i]) % P); \
    for (int i = 1; i <= M; i++)                                                    \
      (X)[i] = t_[i];                                                               \
  } while (0)
#define UPDATE1(X)                                \
  do {                                            \
    for (int i = 1; i <= M; i++)                  \
      (X)[i] = (int)(((long)(X)[i] * 3 + i) % P); \
  } while (0)
    if (!CONVERGED())
      MPI_Win_post(nbrs, MPI_MODE_NOCHECK | MPI_MODE_NOPUT, win0);
    MPI_Barrier(comm);
    while (!CONVERGED()) {
      /* communication on A0 and computation on A1 */
      UPDATE2(A1, A0);
      MPI_Win_start(nbrs, MPI_MODE_NOCHECK, win0);
      MPI_Get(&A0[0], 1, MPI_INT, left, M, 1, MPI_INT, win0);
      MPI_Get(&A0[M + 1], 1, MPI_INT, right, 1, 1, MPI_INT, win0);
      UPDATE1(A1);
      MPI_Win_post(nbrs, MPI_MODE_NOCHECK | MPI_MODE_NOPUT, win1);
      MPI_Win_complete(win0);
      MPI_Win_wait(win0);
      /* communication on A1 and computation on A0 */
      UPDATE2(A0, A1);
      MPI_Win_start(nbrs, MPI_MODE_NOCHECK, win1);
      MPI_Get(&A1[0], 1, MPI_INT, left, M, 1, MPI_INT, win1);
      MPI_Get(&A1[M + 1], 1, MPI_INT, right, 1, 1, MPI_INT, win1);
      UPDATE1(A0);
      steps++;
      if (!CONVERGED())
        MPI_Win_post(nbrs, MPI_MODE_NOCHECK | MPI_MODE_NOPUT, win0);
      MPI_Win_complete(win1);
      MPI_Win_wait(win1);

      /* the serial reference of the same round */
      int *t = mt_alloc(sizeof(int) * (size_t)n);
      for (int i = 0; i < n; i++)
        t[i] = (int)(((long)step_val(g1[(i + n - 1) % n], g1[i], g1[(i + 1) % n]) + g0[i]) % P);
      for (int i = 0; i < n; i++)
        g1[i] = (int)(((long)t[i] * 3 + (i % M) + 1) % P);
      for (int i = 0; i < n; i++)
        t[i] = (int)(((long)step_val(g0[(i + n - 1) % n], g0[i], g0[(i + 1) % n]) + g1[i]) % P);
      for (int i = 0; i < n; i++)
        g0[i] = (int)(((long)t[i] * 3 + (i % M) + 1) % P);
      free(t);
      for (int i = 1; i <= M; i++)
        bad += A0[i] != g0[rank * M + i - 1] || A1[i] != g1[rank * M + i - 1];
      /* A1's halos now hold the neighbours' current A1; A0's those of the round's start */
      bad += A1[0] != g1[(rank * M - 1 + n) % n] || A1[M + 1] != g1[(rank * M + M) % n];
    }
    mt_check_int("A7 checkerboard double buffer with NOCHECK: wrong cells", bad, 0);
    MPI_Win_free(&win0);
    MPI_Win_free(&win1);
    free(g0);
    free(g1);
  }
  MPI_Group_free(&nbrs);
  free(g);
  mt_allreduce_steps(4);
  return mt_end();
}
