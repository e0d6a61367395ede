/*
 * rma_epochs.c - RMA epochs that stay open across collectives, iteration after iteration, so
 * that a checkpoint (tests/restart/run_at_calls.sh puts one at many points) lands inside
 * every kind of epoch:
 *   - Win_create + fence epochs, with a Put and an Accumulate still in flight while both
 *     ranks are in an Allreduce;
 *   - Win_allocate + exclusive locks held across a Barrier (each rank locks its peer), and
 *     both ranks contending for an exclusive lock on rank 0 (a get-increment-put counter,
 *     with a collective on MPI_COMM_SELF inside the epoch, where the holder may park while
 *     its peer waits for the lock);
 *   - shared locks on rank 0 across a Bcast;
 *   - Win_allocate_shared + lock_all, Fetch_and_op, flush, direct loads of the peer's part;
 *   - post/start/complete/wait in both directions at once, with an Allreduce inside;
 *   - Win_create_dynamic with a region attached for good and one attached and detached
 *     every iteration, Put at addresses exchanged once;
 *   - Rput/Rget requests pending across an Allreduce;
 *   - window name, user attribute, error handler, hints and the predefined attributes,
 *     checked again at the end.
 * Ranks: 2.  Argument: iterations (default 6).
 */
#include "mpitest.h"

#define N 8

static int keyval_destroyed;
static int count_delete(MPI_Win w, int kv, void *val, void *extra)
{
  (void)w;
  (void)kv;
  (void)val;
  (void)extra;
  keyval_destroyed++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rma_epochs");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  const int iters = argc > 1 ? atoi(argv[1]) : 6;
  MPI_Comm w = MPI_COMM_WORLD;

  int fmem[N];
  MPI_Win fwin, lwin, swin, pwin, dwin;
  for (int i = 0; i < N; i++)
    fmem[i] = 0;
  MPI_Win_create(fmem, sizeof fmem, sizeof(int), MPI_INFO_NULL, w, &fwin);

  int *lmem;
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "accumulate_ordering", "none");
  MPI_Win_allocate(N * sizeof(int), sizeof(int), hints, w, &lmem, &lwin);
  MPI_Info_free(&hints);
  for (int i = 0; i < N; i++)
    lmem[i] = 0;

  MPI_Comm node;
  MPI_Comm_split_type(w, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int *smem;
  MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &smem, &swin);
  int *speer;
  {
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(swin, peer, &sz, &du, &speer);
  }
  for (int i = 0; i < N; i++)
    smem[i] = 0;

  int pmem[N];
  for (int i = 0; i < N; i++)
    pmem[i] = 0;
  MPI_Win_create(pmem, sizeof pmem, sizeof(int), MPI_INFO_NULL, w, &pwin);

  int dmem[N], dtmp[N];
  for (int i = 0; i < N; i++)
    dmem[i] = dtmp[i] = 0;
  MPI_Win_create_dynamic(MPI_INFO_NULL, w, &dwin);
  MPI_Win_attach(dwin, dmem, sizeof dmem);
  MPI_Aint mine_addr, peer_addr;
  MPI_Get_address(dmem, &mine_addr);
  MPI_Sendrecv(&mine_addr, 1, MPI_AINT, peer, 0, &peer_addr, 1, MPI_AINT, peer, 0, w,
               MPI_STATUS_IGNORE);

  /* properties, checked at the end */
  int kv;
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &kv, NULL);
  static int attr_value = 4711;
  MPI_Win_set_attr(lwin, kv, &attr_value);
  MPI_Win_set_name(lwin, "locked-window");
  MPI_Win_set_errhandler(pwin, MPI_ERRORS_RETURN);
  MPI_Info later;
  MPI_Info_create(&later);
  MPI_Info_set(later, "no_locks", "false");
  MPI_Win_set_info(fwin, later);
  MPI_Info_free(&later);

  MPI_Win_fence(0, fwin);
  for (int it = 0; it < iters; it++) {
    int sum;
    /* fence epoch with operations in flight across an Allreduce */
    int v = 10 * it + me;
    MPI_Put(&v, 1, MPI_INT, peer, it % N, 1, MPI_INT, fwin);
    MPI_Accumulate(&v, 1, MPI_INT, peer, N - 1, 1, MPI_INT, MPI_SUM, fwin);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, w);
    MPI_Win_fence(0, fwin);
    mt_check(fmem[it % N] == 10 * it + peer && sum == 20 * it + 1,
             "it %d: fence put %d, allreduce %d", it, fmem[it % N], sum);

    /* exclusive lock on the peer, held across a Barrier */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, lwin);
    int a = it + 1;
    MPI_Accumulate(&a, 1, MPI_INT, peer, 1, 1, MPI_INT, MPI_SUM, lwin);
    MPI_Barrier(w);
    MPI_Put(&a, 1, MPI_INT, peer, 2, 1, MPI_INT, lwin);
    MPI_Win_unlock(peer, lwin);
    /* both ranks contend for rank 0's counter */
    for (int k = 0; k < 2; k++) {
      int c;
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, lwin);
      MPI_Get(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, lwin);
      MPI_Win_flush(0, lwin);
      /* a collective inside the epoch that the waiting rank is not part of: the holder may
       * park here while its peer waits for the lock */
      MPI_Barrier(MPI_COMM_SELF);
      c++;
      MPI_Put(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, lwin);
      MPI_Win_unlock(0, lwin);
    }
    MPI_Barrier(w);
    /* shared locks on rank 0 across a Bcast */
    int got[3];
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, lwin);
    MPI_Get(got, 3, MPI_INT, 0, 0, 3, MPI_INT, lwin);
    int token = it;
    MPI_Bcast(&token, 1, MPI_INT, 0, w);
    MPI_Win_unlock(0, lwin);
    int tri = (it + 1) * (it + 2) / 2;
    mt_check(got[0] == 4 * (it + 1) && got[1] == tri && got[2] == it + 1,
             "it %d: counter %d, accumulated %d, put %d", it, got[0], got[1], got[2]);
    MPI_Barrier(w);

    /* shared memory: lock_all, fetch_and_op on rank 0, direct loads */
    MPI_Win_lock_all(0, swin);
    int one = 1, old;
    MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, swin);
    smem[1 + me] = 100 * it + me; /* my own part */
    MPI_Win_flush_all(swin);
    MPI_Win_sync(swin);
    MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, w);
    MPI_Win_sync(swin);
    int seen = speer[1 + peer];
    MPI_Win_unlock_all(swin);
    MPI_Barrier(w);
    mt_check(seen == 100 * it + peer && old >= 2 * it && old < 2 * it + 2,
             "it %d: peer's shared element %d, fetch_and_op in range", it, seen);

    /* PSCW both ways, an Allreduce inside the epochs */
    MPI_Group wg, pg;
    MPI_Comm_group(w, &wg);
    MPI_Group_incl(wg, 1, &peer, &pg);
    MPI_Win_post(pg, 0, pwin);
    MPI_Win_start(pg, 0, pwin);
    int pv = 1000 * it + me;
    MPI_Put(&pv, 1, MPI_INT, peer, it % N, 1, MPI_INT, pwin);
    MPI_Allreduce(MPI_IN_PLACE, &pv, 1, MPI_INT, MPI_MAX, w);
    MPI_Win_complete(pwin);
    if (it % 2) {
      int flag = 0;
      while (!flag)
        MPI_Win_test(pwin, &flag);
    } else {
      MPI_Win_wait(pwin);
    }
    MPI_Group_free(&pg);
    MPI_Group_free(&wg);
    mt_check(pmem[it % N] == 1000 * it + peer && pv == 1000 * it + 1, "it %d: pscw put %d", it,
             pmem[it % N]);

    /* dynamic window: a region for good and one for this iteration */
    MPI_Win_attach(dwin, dtmp, sizeof dtmp);
    MPI_Win_lock_all(0, dwin);
    int dv = 7 * it + me;
    MPI_Put(&dv, 1, MPI_INT, peer, peer_addr + (MPI_Aint)((it % N) * sizeof(int)), 1, MPI_INT,
            dwin);
    MPI_Win_flush(peer, dwin);
    /* requests pending across a collective */
    MPI_Request rq[2];
    int rv = 3 * it + me, rg = -1;
    MPI_Rput(&rv, 1, MPI_INT, peer, peer_addr + (MPI_Aint)((N - 1) * sizeof(int)), 1, MPI_INT, dwin,
             &rq[0]);
    MPI_Rget(&rg, 1, MPI_INT, peer, peer_addr + (MPI_Aint)((it % N) * sizeof(int)), 1, MPI_INT,
             dwin, &rq[1]);
    MPI_Allreduce(MPI_IN_PLACE, &dv, 1, MPI_INT, MPI_MAX, w);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_unlock_all(dwin);
    MPI_Barrier(w);
    MPI_Win_detach(dwin, dtmp);
    mt_check(dmem[it % N] == 7 * it + peer && dmem[N - 1] == 3 * it + peer && rg == 7 * it + me,
             "it %d: dynamic put %d, rput %d, rget %d", it, dmem[it % N], dmem[N - 1], rg);
  }
  MPI_Win_fence(MPI_MODE_NOSUCCEED, fwin);

  /* properties survive */
  {
    char name[MPI_MAX_OBJECT_NAME];
    int len, flag, *val;
    MPI_Win_get_name(lwin, name, &len);
    MPI_Win_get_attr(lwin, kv, &val, &flag);
    mt_check(strcmp(name, "locked-window") == 0 && flag && *val == 4711,
             "name %s, user attribute %d", name, flag ? *val : -1);
    int *flavor, *model, *du;
    MPI_Aint *size;
    void *base;
    MPI_Win_get_attr(lwin, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    MPI_Win_get_attr(lwin, MPI_WIN_MODEL, &model, &flag);
    MPI_Win_get_attr(lwin, MPI_WIN_SIZE, &size, &flag);
    MPI_Win_get_attr(lwin, MPI_WIN_DISP_UNIT, &du, &flag);
    MPI_Win_get_attr(lwin, MPI_WIN_BASE, &base, &flag);
    mt_check(*flavor == MPI_WIN_FLAVOR_ALLOCATE && *model == MPI_WIN_UNIFIED &&
                 *size == N * (MPI_Aint)sizeof(int) && *du == (int)sizeof(int) && base == lmem,
             "allocate window: flavor %d model %d size %ld disp_unit %d", *flavor, *model,
             (long)*size, *du);
    MPI_Win_get_attr(swin, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    MPI_Win_get_attr(dwin, MPI_WIN_CREATE_FLAVOR, &model, &flag);
    mt_check(*flavor == MPI_WIN_FLAVOR_SHARED && *model == MPI_WIN_FLAVOR_DYNAMIC,
             "flavors: shared %d dynamic %d", *flavor, *model);
    MPI_Errhandler eh;
    MPI_Win_get_errhandler(pwin, &eh);
    mt_check(eh == MPI_ERRORS_RETURN, "pscw window returns errors");
    MPI_Errhandler_free(&eh);
    MPI_Info info;
    char v1[64] = "", v2[64] = "";
    int f1, f2;
    MPI_Win_get_info(lwin, &info);
    MPI_Info_get(info, "accumulate_ordering", 63, v1, &f1);
    MPI_Info_get(info, "alloc_shm", 63, v2, &f2);
    MPI_Info_free(&info);
    mt_check(f1 && strcmp(v1, "none") == 0 && f2 && strcmp(v2, "true") == 0,
             "allocate window hints: accumulate_ordering=%s alloc_shm=%s", v1, v2);
    int total = 0;
    for (int i = 0; i < N; i++)
      total += smem[i] + speer[i];
    mt_check_int("shared segment total", total, 2 * iters + 100 * (iters - 1) * 2 + 1);
  }

  MPI_Win_detach(dwin, dmem);
  MPI_Win_free(&dwin);
  MPI_Win_free(&pwin);
  MPI_Win_free(&swin);
  MPI_Win_free(&lwin);
  MPI_Win_free(&fwin);
  MPI_Comm_free(&node);
  mt_check_int("attribute delete callbacks", keyval_destroyed, 1);
  MPI_Win_free_keyval(&kv);
  return mt_end();
}
