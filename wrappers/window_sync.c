/* RMA synchronization (docs/checkpoint-protocol.md, "RMA windows").
 *
 * Fence: MPICH's own, counted on the clock of the window's communicator (wcoll), so at a safe
 * point every member has made the same number of fences; whether the last one opened an epoch
 * (no MPI_MODE_NOSUCCEED, which MPI wants from all members or none) is the same everywhere.
 *
 * Passive target: MPICH's own lock/unlock/lock_all/unlock_all/flush*; the stub records the
 * epochs held.  MPICH 4.0.2's MPI_Win_lock and MPI_Win_lock_all wait for the grant, which
 * another rank's unlock gives: a rank inside one may wait for a peer's program and cannot be
 * parked.  They are therefore entered through the collective clock on MPI_COMM_SELF (a rank
 * whose targets are met waits before the lock, parkable, instead of inside it) and, while
 * inside, the rank is never "done" (collective_clock.c, peer_waits): no safe point is declared while a rank
 * waits for a grant, and a parked holder is released by the stall rule.  Unlock, unlock_all
 * and the flushes wait only for the targets' progress engines (their acknowledgements), which
 * a parked or suspended target drives (collective_clock.c, coordinator_link.c): they are plain
 * calls.  Gating the unlocks as well parked holders before their unlock, and with three ranks
 * taking one exclusive lock in turn some rank always waited for such a holder: the stall
 * rule's releases only passed the lock on and the checkpoint never converged (MPICH's
 * rma/lockcontention2 at 4 ranks).
 *
 * General active target (post/start/complete/wait/test) is the stub's: an exposure epoch
 * opened by MPICH cannot be made again once some of its origins have completed.  Post sends a
 * notice to each origin, start receives them and takes a shared MPI_MODE_NOCHECK lock (local,
 * no message) on each target, complete releases those locks (which waits for the operations to
 * be complete at the targets) and sends each target a notice, wait and test receive them.  The
 * notices are zero-byte messages on the window's hidden communicator, parkable, counted and
 * buffered by the drain like any message; the epochs are passive ones MPICH can flush.
 *
 * The drain's window phase (after the message counts are exchanged, so every rank is in its
 * drain) goes through the windows in the global order: a window whose last fence opened an
 * epoch gets a fence (collective over its members, who all do it, in the same order); one in
 * which this rank holds passive epochs gets MPI_Win_flush_all (with a fence, the passive
 * epochs are released around it and taken again).  Every operation this rank issued is then
 * complete at its target.  A rebuild makes the fence again where one was open and takes the
 * locks again once every window exists. */
#include "p2p.h"
#include "window.h"

#define NOTICE_POST 1
#define NOTICE_COMPLETE 2

/* ---- fence ---- */

void mana_after_Win_fence(int assert, MPI_Win win)
{
  struct win_rec *r = mana_win_rec(win);
  if (r) {
    r->fence_open = !(assert &MPI_MODE_NOSUCCEED);
    r->fence_ended = 0;
  }
}

/* A passive epoch began on r: it ends an open fence epoch in MPICH. */
static void passive_began(struct win_rec *r)
{
  if (r->fence_open)
    r->fence_ended = 1;
}

/* After a fence the drain or a rebuild made: ends the fence epoch again where a passive one
 * had ended it (win_rec.fence_ended), with a lock on this rank's own window that checks
 * nothing and an unlock, as the application's lock did.  Not needed while a passive epoch is
 * held: taking it again ends the fence epoch. */
static int end_fence_epoch(struct win_rec *r, int held)
{
  if (!r->fence_open || !r->fence_ended || held)
    return MPI_SUCCESS;
  MPI_Win w = mana_win_real(r);
  int me = 0;
  int rc = MANA_LH_ANY(MPI_Comm_rank, MANA_REAL(COMM, MPI_Comm, r->comm), &me);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_ANY(MPI_Win_lock, MPI_LOCK_SHARED, me, MPI_MODE_NOCHECK, w);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_ANY(MPI_Win_unlock, me, w);
  return rc;
}

/* ---- MPICH-level passive epochs: MANA_LH_ANY, so the drain's thread may use them too ---- */

static int release_passive(struct win_rec *r)
{
  MPI_Win w = mana_win_real(r);
  int rc = MPI_SUCCESS;
  for (int i = 0; i < r->naccess; i++)
    if (r->access_locked[i] && rc == MPI_SUCCESS)
      rc = MANA_LH_ANY(MPI_Win_unlock, r->access[i], w);
  for (int i = 0; i < r->nlocks && rc == MPI_SUCCESS; i++)
    rc = MANA_LH_ANY(MPI_Win_unlock, r->locks[i].rank, w);
  if (r->lock_all && rc == MPI_SUCCESS)
    rc = MANA_LH_ANY(MPI_Win_unlock_all, w);
  return rc;
}

static int acquire_passive(struct win_rec *r)
{
  MPI_Win w = mana_win_real(r);
  int rc = MPI_SUCCESS;
  if (r->lock_all)
    rc = MANA_LH_ANY(MPI_Win_lock_all, r->lock_all_assert, w);
  for (int i = 0; i < r->nlocks && rc == MPI_SUCCESS; i++)
    rc = MANA_LH_ANY(MPI_Win_lock, r->locks[i].type, r->locks[i].rank, r->locks[i].assert, w);
  for (int i = 0; i < r->naccess && rc == MPI_SUCCESS; i++)
    if (r->access_locked[i])
      rc = MANA_LH_ANY(MPI_Win_lock, MPI_LOCK_SHARED, r->access[i], MPI_MODE_NOCHECK, w);
  return rc;
}

static int holds_passive(const struct win_rec *r)
{
  int held = r->lock_all || r->nlocks;
  for (int i = 0; i < r->naccess; i++)
    held |= r->access_locked[i];
  return held;
}

void mana_win_sync_release(struct win_rec *r)
{
  release_passive(r);
}

int mana_win_refence(struct win_rec *r)
{
  int rc = r->fence_open ? MANA_LH_CALL_NOPARK(MPI_Win_fence, 0, mana_win_real(r)) : MPI_SUCCESS;
  if (rc != MPI_SUCCESS)
    return mana_rebuild_error("window", r->self, "MPI_Win_fence", rc);
  rc = end_fence_epoch(r, holds_passive(r));
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("window", r->self, "MPI_Win_lock", rc);
}

int mana_win_relock(struct win_rec *r)
{
  int rc = acquire_passive(r);
  return rc == MPI_SUCCESS ? rc : mana_rebuild_error("window", r->self, "MPI_Win_lock", rc);
}

/* ---- the drain's window phase (checkpoint thread: no TLS, no malloc) ---- */

static int drain_one(struct win_rec *r)
{
  MPI_Win w = mana_win_real(r);
  int held = holds_passive(r), rc = MPI_SUCCESS;
  if (r->fence_open) {
    if (held)
      rc = release_passive(r);
    if (rc == MPI_SUCCESS)
      rc = MANA_LH_ANY(MPI_Win_fence, 0, w);
    if (held && rc == MPI_SUCCESS)
      rc = acquire_passive(r);
    if (rc == MPI_SUCCESS)
      rc = end_fence_epoch(r, held);
  } else if (held) {
    rc = MANA_LH_ANY(MPI_Win_flush_all, w);
  }
  return rc;
}

int mana_windows_drain(const char **why, int *rc_out)
{
  for (struct win_rec *r = mana_win_first(); r; r = r->next) {
    MPI_Win w = mana_win_real(r);
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    /* A failure here must come back as a code, not reach an aborting handler of the
     * application's.  A window without a handler of its own raises on MPI_COMM_WORLD's, and
     * must keep none (window.h). */
    int have_eh = r->eh_set && MANA_LH_ANY(MPI_Win_get_errhandler, w, &eh) == MPI_SUCCESS;
    if (have_eh)
      MANA_LH_ANY(MPI_Win_set_errhandler, w, MPI_ERRORS_RETURN);
    else
      MANA_LH_ANY(svc.world_errors_return, 1);
    int rc = drain_one(r);
    if (have_eh) {
      MANA_LH_ANY(MPI_Win_set_errhandler, w, eh);
      if (mana_real_is_created((uint32_t)eh))
        MANA_LH_ANY(MPI_Errhandler_free, &eh);
    } else {
      MANA_LH_ANY(svc.world_errors_return, 0);
    }
    if (rc != MPI_SUCCESS) {
      *why = r->fence_open ? "completing a window's fence epoch failed"
                           : "flushing a window's passive-target epochs failed";
      *rc_out = rc;
      return -1;
    }
  }
  return 0;
}

/* ---- passive target ---- */

static int grow(void **array, int *cap, int need, size_t elem)
{
  if (need <= *cap)
    return 0;
  int n = *cap ? *cap * 2 : 4;
  while (n < need)
    n *= 2;
  void *more = realloc(*array, (size_t)n * elem);
  if (!more)
    return -1;
  *array = more;
  *cap = n;
  return 0;
}

/* A lock that may wait for another rank's unlock is entered like a collective on
 * MPI_COMM_SELF, and the rank is never done while inside (top of the file). */
static void peer_wait_enter(int assert)
{
  if (!(assert &MPI_MODE_NOCHECK)) /* else MPICH takes it locally */
    mana_cc_peer_gate_enter();
}

static void peer_wait_leave(int assert)
{
  if (!(assert &MPI_MODE_NOCHECK))
    mana_cc_peer_gate_leave();
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
  peer_wait_enter(assert);
  int rc = MANA_LH_CALL_NOPARK(MPI_Win_lock, lock_type, rank, assert, MANA_REAL(WIN, MPI_Win, win));
  struct win_rec *r = mana_win_rec(win);
  if (rc == MPI_SUCCESS && r) {
    passive_began(r);
    if (grow((void **)&r->locks, &r->cap_locks, r->nlocks + 1, sizeof(*r->locks)) != 0)
      r->incomplete = 1;
    else
      r->locks[r->nlocks++] = (struct win_lock){rank, lock_type, assert};
  }
  peer_wait_leave(assert);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
  int rc = MANA_LH_CALL_NOPARK(MPI_Win_unlock, rank, MANA_REAL(WIN, MPI_Win, win));
  struct win_rec *r = mana_win_rec(win);
  for (int i = 0; rc == MPI_SUCCESS && r && i < r->nlocks; i++)
    if (r->locks[i].rank == rank) {
      r->locks[i] = r->locks[--r->nlocks];
      break;
    }
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
  peer_wait_enter(assert);
  int rc = MANA_LH_CALL_NOPARK(MPI_Win_lock_all, assert, MANA_REAL(WIN, MPI_Win, win));
  struct win_rec *r = mana_win_rec(win);
  if (rc == MPI_SUCCESS && r) {
    passive_began(r);
    r->lock_all = 1;
    r->lock_all_assert = assert;
  }
  peer_wait_leave(assert);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Win_unlock_all(MPI_Win win)
{
  int rc = MANA_LH_CALL_NOPARK(MPI_Win_unlock_all, MANA_REAL(WIN, MPI_Win, win));
  struct win_rec *r = mana_win_rec(win);
  if (rc == MPI_SUCCESS && r)
    r->lock_all = 0;
  MANA_PARK_CHECK();
  return rc;
}

/* ---- general active target, the stub's ---- */

/* MPI's answer to a synchronization call out of place: the window's handler, then the code. */
static int sync_error(MPI_Win win)
{
  MANA_LH_CALL(MPI_Win_call_errhandler, MANA_REAL(WIN, MPI_Win, win), MPI_ERR_RMA_SYNC);
  return MPI_ERR_RMA_SYNC;
}

/* The ranks in the window's group of the members of `group`. */
static int group_ranks(const struct win_rec *r, MPI_Group group, int **out, int *n)
{
  MPI_Group real = MANA_REAL(GROUP, MPI_Group, group), wg = MPI_GROUP_NULL;
  int rc = MANA_LH_CALL_NOPARK(MPI_Group_size, real, n);
  int *ids = NULL;
  *out = NULL;
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Comm_group, MANA_REAL(COMM, MPI_Comm, r->comm), &wg);
  if (rc == MPI_SUCCESS) {
    ids = malloc((size_t)(*n > 0 ? *n : 1) * sizeof(int));
    *out = malloc((size_t)(*n > 0 ? *n : 1) * sizeof(int));
    if (!ids || !*out)
      rc = MPI_ERR_NO_MEM;
  }
  for (int i = 0; rc == MPI_SUCCESS && i < *n; i++)
    ids[i] = i;
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Group_translate_ranks, real, *n, ids, wg, *out);
  if (wg != MPI_GROUP_NULL)
    MANA_LH_CALL_NOPARK(MPI_Group_free, &wg);
  free(ids);
  if (rc != MPI_SUCCESS) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

static int notice(const struct win_rec *r, int rank, int kind)
{
  return PMPI_Send(NULL, 0, MPI_BYTE, rank, kind, r->comm);
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return MANA_LH_CALL(MPI_Win_post, MANA_REAL(GROUP, MPI_Group, group), assert,
                        MANA_REAL(WIN, MPI_Win, win));
  if (r->exposing)
    return sync_error(win);
  int *ranks, n, rc = group_ranks(r, group, &ranks, &n);
  unsigned char *done = rc == MPI_SUCCESS ? calloc((size_t)(n > 0 ? n : 1), 1) : NULL;
  if (rc != MPI_SUCCESS || !done) {
    free(ranks);
    return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
  }
  r->expose = ranks;
  r->expose_done = done;
  r->nexpose = n;
  r->exposing = 1;
  /* With MPI_MODE_NOCHECK the matching starts say the same and wait for nothing. */
  for (int i = 0; !(assert &MPI_MODE_NOCHECK) && i < n && rc == MPI_SUCCESS; i++)
    rc = notice(r, ranks[i], NOTICE_POST);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return MANA_LH_CALL(MPI_Win_start, MANA_REAL(GROUP, MPI_Group, group), assert,
                        MANA_REAL(WIN, MPI_Win, win));
  if (r->access)
    return sync_error(win);
  int *ranks, n, rc = group_ranks(r, group, &ranks, &n);
  unsigned char *locked = rc == MPI_SUCCESS ? calloc((size_t)(n > 0 ? n : 1), 1) : NULL;
  if (rc != MPI_SUCCESS || !locked) {
    free(ranks);
    return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
  }
  r->access = ranks;
  r->access_locked = locked;
  r->naccess = n;
  for (int i = 0; !(assert &MPI_MODE_NOCHECK) && i < n && rc == MPI_SUCCESS; i++)
    rc = PMPI_Recv(NULL, 0, MPI_BYTE, ranks[i], NOTICE_POST, r->comm, MPI_STATUS_IGNORE);
  for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
    /* Read again after every park point: a restart makes a new real window. */
    rc = MANA_LH_CALL_NOPARK(MPI_Win_lock, MPI_LOCK_SHARED, ranks[i], MPI_MODE_NOCHECK,
                             mana_win_real(r));
    if (rc == MPI_SUCCESS) {
      locked[i] = 1;
      passive_began(r);
    }
    MANA_PARK_CHECK();
  }
  return rc;
}

int MPI_Win_complete(MPI_Win win)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return MANA_LH_CALL(MPI_Win_complete, MANA_REAL(WIN, MPI_Win, win));
  if (!r->access)
    return sync_error(win);
  int rc = MPI_SUCCESS;
  /* Unlocking waits until the operations are complete at the target: only then may the
   * target learn that this origin is done. */
  for (int i = 0; i < r->naccess && rc == MPI_SUCCESS; i++) {
    if (r->access_locked[i]) {
      rc = MANA_LH_CALL_NOPARK(MPI_Win_unlock, r->access[i], mana_win_real(r));
      if (rc == MPI_SUCCESS)
        r->access_locked[i] = 0;
    }
    MANA_PARK_CHECK();
  }
  for (int i = 0; i < r->naccess && rc == MPI_SUCCESS; i++)
    rc = notice(r, r->access[i], NOTICE_COMPLETE);
  if (rc == MPI_SUCCESS) {
    free(r->access);
    free(r->access_locked);
    r->access = NULL;
    r->access_locked = NULL;
    r->naccess = 0;
  }
  return rc;
}

static void close_exposure(struct win_rec *r)
{
  free(r->expose);
  free(r->expose_done);
  r->expose = NULL;
  r->expose_done = NULL;
  r->nexpose = 0;
  r->exposing = 0;
}

int MPI_Win_wait(MPI_Win win)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return MANA_LH_CALL(MPI_Win_wait, MANA_REAL(WIN, MPI_Win, win));
  if (!r->exposing)
    return sync_error(win);
  int rc = MPI_SUCCESS;
  for (int i = 0; i < r->nexpose && rc == MPI_SUCCESS; i++)
    if (!r->expose_done[i]) {
      rc = PMPI_Recv(NULL, 0, MPI_BYTE, r->expose[i], NOTICE_COMPLETE, r->comm, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS)
        r->expose_done[i] = 1;
    }
  if (rc == MPI_SUCCESS)
    close_exposure(r);
  return rc;
}

int MPI_Win_test(MPI_Win win, int *flag)
{
  struct win_rec *r = mana_win_rec(win);
  if (!r)
    return MANA_LH_CALL(MPI_Win_test, MANA_REAL(WIN, MPI_Win, win), flag);
  if (!r->exposing)
    return sync_error(win);
  int rc = MPI_SUCCESS, all = 1;
  for (int i = 0; i < r->nexpose && rc == MPI_SUCCESS; i++) {
    int arrived = 0;
    if (r->expose_done[i])
      continue;
    rc = PMPI_Iprobe(r->expose[i], NOTICE_COMPLETE, r->comm, &arrived, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && arrived)
      rc = PMPI_Recv(NULL, 0, MPI_BYTE, r->expose[i], NOTICE_COMPLETE, r->comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && arrived)
      r->expose_done[i] = 1;
    else
      all = 0;
  }
  *flag = rc == MPI_SUCCESS && all;
  if (*flag)
    close_exposure(r);
  return rc;
}
