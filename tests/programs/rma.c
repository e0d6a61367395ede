/*
 * rma.c - one-sided communication:
 *   - Win_create on user memory; fence epochs with Put, Get and Accumulate (SUM, and
 *     MPI_REPLACE), a Put with a strided target datatype;
 *   - Win_allocate; lock/unlock epochs, exclusive with Put and shared with Get;
 *   - Fetch_and_op (both ranks increment a counter on rank 0: the fetched values are a
 *     permutation of 0..2K-1), Compare_and_swap (exactly one of the racing ranks wins),
 *     Get_accumulate, lock_all/flush/unlock_all, Rput/Rget with request completion;
 *   - post/start/complete/wait (PSCW) generalized active target;
 *   - Win_create_dynamic + Win_attach/Win_detach with addresses exchanged via Allgather;
 *   - Win_get_group, Win_set_name/Win_get_name, Win_free.
 * Race outcomes are reported only as properties (never who won), so output is deterministic.
 * Ranks: 2.
 */
#include "mpitest.h"

#define K 5

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  MPI_Comm w = MPI_COMM_WORLD;

  /* 1. Win_create + fence epochs */
  {
    int mem[16];
    for (int i = 0; i < 16; i++)
      mem[i] = me * 100 + i;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, w, &win);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Win_set_name(win, "fence-window");
    MPI_Win_get_name(win, name, &len);
    mt_check(strcmp(name, "fence-window") == 0, "win set/get name: %s", name);
    MPI_Group g;
    int gs;
    MPI_Win_get_group(win, &g);
    MPI_Group_size(g, &gs);
    mt_check_int("win group size", gs, 2);
    MPI_Group_free(&g);

    int put[2] = {-1 - me, -2 - me}, got[3] = {0, 0, 0}, acc[2] = {1000, 2000};
    MPI_Win_fence(0, win);
    MPI_Put(put, 2, MPI_INT, peer, 0, 2, MPI_INT, win);                  /* peer's mem[0..1] */
    MPI_Get(got, 3, MPI_INT, peer, 5, 3, MPI_INT, win);                  /* peer's mem[5..7] */
    MPI_Accumulate(acc, 2, MPI_INT, peer, 10, 2, MPI_INT, MPI_SUM, win); /* peer's mem[10..11] */
    MPI_Win_fence(0, win);
    int eg[3] = {peer * 100 + 5, peer * 100 + 6, peer * 100 + 7};
    mt_check_ints("fence get", got, eg, 3);
    int e[16];
    for (int i = 0; i < 16; i++)
      e[i] = me * 100 + i;
    e[0] = -1 - peer;
    e[1] = -2 - peer;
    e[10] += 1000;
    e[11] += 2000;
    mt_check_ints("window after fence put+accumulate", mem, e, 16);

    /* both ranks accumulate into the same element of rank 0: order-independent SUM */
    int one = me + 1;
    MPI_Win_fence(0, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, 15, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (me == 0)
      mt_check_int("concurrent accumulate SUM into rank 0", mem[15], 15 + 1 + 2);

    /* strided target: put 4 ints into every other element of the peer's mem[2..9] */
    MPI_Datatype stride2;
    MPI_Type_vector(4, 1, 2, MPI_INT, &stride2);
    MPI_Type_commit(&stride2);
    int four[4] = {7, 8, 9, 10};
    MPI_Win_fence(0, win);
    MPI_Put(four, 4, MPI_INT, peer, 2, 1, stride2, win);
    MPI_Win_fence(0, win);
    int es[8] = {7, me * 100 + 3, 8, me * 100 + 5, 9, me * 100 + 7, 10, me * 100 + 9};
    mt_check_ints("put with strided target type (mem[2..9])", mem + 2, es, 8);
    /* MPI_REPLACE accumulate */
    int rep = 4242;
    MPI_Win_fence(0, win);
    MPI_Accumulate(&rep, 1, MPI_INT, peer, 12, 1, MPI_INT, MPI_REPLACE, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    mt_check_int("accumulate MPI_REPLACE", mem[12], 4242);
    MPI_Type_free(&stride2);
    MPI_Win_free(&win);
    mt_check(win == MPI_WIN_NULL, "win_free sets MPI_WIN_NULL");
  }

  /* 2. Win_allocate + passive target lock/unlock */
  {
    double *base;
    MPI_Win win;
    MPI_Win_allocate(8 * sizeof(double), sizeof(double), MPI_INFO_NULL, w, &base, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    for (int i = 0; i < 8; i++)
      base[i] = me + i * 0.5;
    MPI_Win_unlock(me, win);
    MPI_Barrier(w);
    /* exclusive lock on the peer, put two values */
    double pv[2] = {-(me + 1.0), -(me + 2.0)};
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
    MPI_Put(pv, 2, MPI_DOUBLE, peer, 6, 2, MPI_DOUBLE, win);
    MPI_Win_unlock(peer, win);
    MPI_Barrier(w);
    /* shared lock, read the peer's whole window */
    double rd[8];
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Get(rd, 8, MPI_DOUBLE, peer, 0, 8, MPI_DOUBLE, win);
    MPI_Win_unlock(peer, win);
    double e[8];
    for (int i = 0; i < 8; i++)
      e[i] = peer + i * 0.5;
    e[6] = -(me + 1.0); /* what I put there */
    e[7] = -(me + 2.0);
    mt_check_dbls("lock shared get of the peer's window (after my exclusive put)", rd, e, 8);
    MPI_Barrier(w);
    MPI_Win_free(&win);
  }

  /* 3. atomics on a counter at rank 0 */
  {
    long long *ctr;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, w, &ctr, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    ctr[0] = 0;
    ctr[1] = -1;
    MPI_Win_unlock(me, win);
    MPI_Barrier(w);

    long long one = 1, fetched[K];
    for (int k = 0; k < K; k++) {
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
      MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG_LONG, 0, 0, MPI_SUM, win);
      MPI_Win_unlock(0, win);
    }
    /* everyone's fetched values together must be exactly 0..2K-1 */
    long long all[2 * K];
    MPI_Gather(fetched, K, MPI_LONG_LONG, all, K, MPI_LONG_LONG, 0, w);
    if (me == 0) {
      int seen[2 * K] = {0}, ok = 1;
      for (int i = 0; i < 2 * K; i++) {
        if (all[i] < 0 || all[i] >= 2 * K)
          ok = 0;
        else
          seen[all[i]]++;
      }
      for (int i = 0; i < 2 * K; i++)
        if (seen[i] != 1)
          ok = 0;
      mt_check(ok, "fetch_and_op: fetched values are a permutation of 0..%d", 2 * K - 1);
    }
    int inc = 1;
    for (int k = 1; k < K; k++)
      if (fetched[k] <= fetched[k - 1])
        inc = 0;
    mt_check(inc, "fetch_and_op: my fetched values increase");

    /* compare-and-swap race: both try to replace -1 by their rank */
    long long cmp = -1, mine = me, old = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Compare_and_swap(&mine, &cmp, &old, MPI_LONG_LONG, 0, 1, win);
    MPI_Win_unlock(0, win);
    int won = old == -1, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, w);
    mt_check_int("compare_and_swap: number of winners", winners, 1);

    MPI_Barrier(w);
    if (me == 0) {
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
      long long c0 = ctr[0], c1 = ctr[1];
      MPI_Win_unlock(0, win);
      mt_check_int("counter after 2x5 fetch_and_op", c0, 2 * K);
      mt_check(c1 == 0 || c1 == 1, "CAS target holds one of the ranks");
    }
    MPI_Barrier(w);

    /* get_accumulate with lock_all / flush / unlock_all: fetch the counter and add 100 */
    long long add = 100, prev = -5;
    MPI_Win_lock_all(0, win);
    MPI_Get_accumulate(&add, 1, MPI_LONG_LONG, &prev, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG,
                       MPI_SUM, win);
    MPI_Win_flush(0, win);
    int ok = prev == 2 * K || prev == 2 * K + 100;
    MPI_Win_unlock_all(win);
    mt_check(ok, "get_accumulate fetched the counter before or after the other rank's add");
    MPI_Barrier(w);
    if (me == 0) {
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
      long long c0 = ctr[0];
      MPI_Win_unlock(0, win);
      mt_check_int("counter after two get_accumulate(+100)", c0, 2 * K + 200);
    }
    MPI_Barrier(w);
    MPI_Win_free(&win);
  }

  /* 4. request-based RMA: Rput / Rget inside lock_all */
  {
    int *base;
    MPI_Win win;
    MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, w, &base, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    for (int i = 0; i < 4; i++)
      base[i] = 0;
    MPI_Win_unlock(me, win);
    MPI_Barrier(w);
    int v[2] = {me * 10 + 1, me * 10 + 2}, r[2] = {0, 0};
    MPI_Request rq[2];
    MPI_Win_lock_all(0, win);
    MPI_Rput(v, 2, MPI_INT, peer, me * 2, 2, MPI_INT, win, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Win_flush(peer, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(w);
    MPI_Win_lock_all(0, win);
    MPI_Rget(r, 2, MPI_INT, peer, me * 2, 2, MPI_INT, win, &rq[1]);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(win);
    mt_check_ints("rget reads back what my rput wrote into the peer's window", r, v, 2);
    MPI_Barrier(w);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
    int local[4];
    memcpy(local, base, sizeof local);
    MPI_Win_unlock(me, win);
    int el[4] = {0, 0, 0, 0};
    el[peer * 2] = peer * 10 + 1;
    el[peer * 2 + 1] = peer * 10 + 2;
    mt_check_ints("my window after the peer's rput", local, el, 4);
    MPI_Barrier(w);
    MPI_Win_free(&win);
  }

  /* 5. PSCW: rank 0 exposes, rank 1 accesses */
  {
    int mem[4] = {0, 0, 0, 0};
    MPI_Win win;
    MPI_Group wg, pg;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, w, &win);
    MPI_Comm_group(w, &wg);
    MPI_Group_incl(wg, 1, &peer, &pg);
    if (me == 0) {
      MPI_Win_post(pg, 0, win);
      MPI_Win_wait(win);
      mt_check_ints("PSCW: exposure epoch received", mem, (int[]){5, 6, 7, 8}, 4);
    } else {
      int v[4] = {5, 6, 7, 8};
      MPI_Win_start(pg, 0, win);
      MPI_Put(v, 4, MPI_INT, 0, 0, 4, MPI_INT, win);
      MPI_Win_complete(win);
      mt_log("PSCW: access epoch completed");
    }
    MPI_Group_free(&pg);
    MPI_Group_free(&wg);
    MPI_Win_free(&win);
  }

  /* 6. dynamic window */
  {
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, w, &win);
    int *region = mt_alloc(6 * sizeof(int));
    for (int i = 0; i < 6; i++)
      region[i] = me * 1000 + i;
    MPI_Win_attach(win, region, 6 * sizeof(int));
    MPI_Aint addr, addrs[2];
    MPI_Get_address(region, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, w);
    int got[3] = {0, 0, 0};
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Get(got, 3, MPI_INT, peer, MPI_Aint_add(addrs[peer], 2 * sizeof(int)), 3, MPI_INT, win);
    MPI_Win_unlock(peer, win);
    mt_check_ints("get from the peer's attached region", got,
                  (int[]){peer * 1000 + 2, peer * 1000 + 3, peer * 1000 + 4}, 3);
    MPI_Barrier(w);
    MPI_Win_detach(win, region);
    free(region);
    MPI_Win_free(&win);
  }

  return mt_end();
}
