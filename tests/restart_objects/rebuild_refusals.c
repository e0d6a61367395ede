/*
 * rebuild_refusals.c - what mana cannot rebuild yet makes it refuse a checkpoint, with a
 * reason, and only while it exists: a split collective in progress on
 * an MPI file that no drain has ended (a drain gives it a stand-in: then it is allowed, and
 * its _end reports the real status).  An MPI session is initialized again
 * (a group made from it outlives it and is rebuilt like any other), and an MPI_T performance
 * variable session (without handles) is made again.  Pending receives, active persistent ones and non-blocking collective file
 * operations are allowed: the drain completes or re-posts them; so are open files (they are
 * reopened), intercommunicators, matched messages (drained), persistent collective requests
 * (made again), partitioned requests (made again; rebuilt in place while inactive),
 * generalized requests (started again; rebuilt in place while pending, their
 * free_fn still runs once) and windows.  The in-place rebuild, which has no drain,
 * refuses a request only a drain can complete before discarding anything.
 * Asks the stub directly (mana_stub_can_checkpoint, the function the lower half calls through
 * the boundary page), so it runs under mana only; the rebuild itself must refuse too, and
 * succeed once everything is gone.
 * Ranks: 2.
 */
#include <string.h>
#include <unistd.h>

#include "rebuild.h"

static int (*can_checkpoint)(char *reason, size_t len);
static int (*rebuild_now)(void);
static int (*drain_now)(void);

/* Refused, for a reason that mentions `why`; and the rebuild refuses too. */
static void refused(const char *what, const char *why)
{
  char reason[256] = "";
  int can = can_checkpoint(reason, sizeof(reason));
  mt_check(!can && strstr(reason, why) != NULL, "%s: refused (%s)", what,
           can ? "but it was allowed" : reason);
  mt_check(rebuild_now() != MPI_SUCCESS, "%s: the rebuild refuses too", what);
}

static void allowed(const char *what)
{
  char reason[256] = "";
  int can = can_checkpoint(reason, sizeof(reason));
  mt_check(can, "%s: allowed again%s%s", what, can ? "" : ": ", reason);
}

static int query_fn(void *extra, MPI_Status *status)
{
  (void)extra;
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
static int free_fn(void *extra)
{
  if (extra)
    (*(int *)extra)++;
  return MPI_SUCCESS;
}
static int cancel_fn(void *extra, int complete)
{
  (void)extra;
  (void)complete;
  return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_refusals");
  mt_require_size(2);
  can_checkpoint = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "mana_stub_can_checkpoint");
  rebuild_now = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_rebuild_now");
  drain_now = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_drain_now");
  if (!can_checkpoint || !rebuild_now || !drain_now) {
    mt_check(0, "runs under mana only (mana_stub_can_checkpoint not found)");
    return mt_end();
  }
  int me = mt_.rank, peer = 1 - me, v = me, w = -1;
  allowed("at the start");

  /* a pending receive and an active persistent receive are drained: allowed */
  MPI_Request rq;
  MPI_Irecv(&w, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &rq);
  allowed("pending receive (the drain takes care of it)");
  MPI_Send(&v, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  allowed("receive completed");
  MPI_Recv_init(&w, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &rq);
  allowed("inactive persistent request");
  MPI_Start(&rq);
  allowed("active persistent receive (the drain takes care of it)");
  MPI_Send(&v, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  allowed("persistent request completed");
  MPI_Request_free(&rq);

  /* a persistent collective and a partitioned request are made again */
  MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
  allowed("persistent collective (made again at restart)");
  MPI_Request_free(&rq);
  MPI_Precv_init(&w, 1, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
  allowed("partitioned request (made again at restart)");
  mt_check(rebuild_now() == MPI_SUCCESS, "inactive partitioned request: rebuilt in place");
  MPI_Request_free(&rq);
  allowed("partitioned request freed");

  /* a generalized request */
  int greq_frees = 0;
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &greq_frees, &rq);
  allowed("generalized request pending");
  mt_check(rebuild_now() == MPI_SUCCESS, "generalized request pending: rebuilt in place");
  MPI_Grequest_complete(rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  mt_check_int("generalized request: free_fn calls", greq_frees, 1);
  allowed("generalized request done");

  /* an intercommunicator between the two ranks */
  MPI_Comm self_half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, me, 0, &self_half);
  MPI_Intercomm_create(self_half, 0, MPI_COMM_WORLD, peer, 3, &inter);
  allowed("intercommunicator (rebuilt through MPI_Intercomm_create)");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&self_half);

  /* a window is allowed (window.c rebuilds it): rebuilt in place, it still works.  Its base
   * is 16-byte aligned: MPICH 4.0.2 (ch4:ucx) puts at the base rounded down to 16 bytes, with
   * or without mana, so a put to a stack int that happens to be misaligned misses it. */
  _Alignas(16) int mem = 0;
  MPI_Win win;
  MPI_Win_create(&mem, sizeof(mem), sizeof(mem), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  allowed("window");
  mt_check(rebuild_now() == MPI_SUCCESS, "window: rebuilt in place");
  MPI_Win_fence(0, win);
  int put = 40 + me;
  MPI_Put(&put, 1, MPI_INT, peer, 0, 1, MPI_INT, win);
  MPI_Win_fence(0, win);
  mt_check_int("window after the rebuild: the peer's put", mem, 40 + peer);
  MPI_Win_free(&win);

  /* an open MPI file */
  char path[64];
  snprintf(path, sizeof(path), "/tmp/mana-refusal-%d-%d", (int)getpid(), me);
  MPI_File fh;
  MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                MPI_INFO_NULL, &fh);
  allowed("open file");
  int x = me;
  MPI_File_write_all_begin(fh, &x, 1, MPI_INT);
  refused("split collective on a file, no drain", "split collective");
  /* A checkpoint's drain ends MPI's split and puts an empty one in its place, and the
   * application's _end gets the real status.  (Not rebuilt in place here: that closes the
   * file, which MPI_MODE_DELETE_ON_CLOSE deletes; restart.trigger.file_split_coll restarts
   * inside splits.) */
  mt_check(drain_now() == MPI_SUCCESS, "split collective on a file: drained");
  allowed("split collective after a drain (its stand-in)");
  MPI_Status fst;
  int fcount = -1;
  mt_check(MPI_File_write_all_end(fh, &x, &fst) == MPI_SUCCESS,
           "split collective ended after the drain");
  MPI_Get_count(&fst, MPI_INT, &fcount);
  mt_check_int("split collective: count of its status after the drain", fcount, 1);
  allowed("split collective ended");
  MPI_Request frq;
  MPI_File_iwrite_at_all(fh, 0, &x, 1, MPI_INT, &frq);
  allowed("non-blocking collective file operation (the drain completes it)");
  mt_check(rebuild_now() != MPI_SUCCESS,
           "non-blocking collective file operation: the in-place rebuild, which has no drain, "
           "refuses");
  MPI_Wait(&frq, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  allowed("file closed");

  /* a matched message, on rank 1 only */
  if (me == 0) {
    MPI_Send(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
  } else {
    MPI_Message msg;
    MPI_Mprobe(0, 4, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
    allowed("matched message (the drain receives it)");
    MPI_Mrecv(&w, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
  }
  allowed("message received");

  /* a session: initialized again, and usable after the rebuild */
  MPI_Session session;
  MPI_Group from_session, world_group;
  MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session);
  allowed("session (initialized again)");
  rebuild_checked("with a session open");
  mt_check(MPI_Group_from_session_pset(session, "mpi://WORLD", &from_session) == MPI_SUCCESS,
           "session: its process set after the rebuild");
  MPI_Session_finalize(&session);
  allowed("session finalized");

  /* an MPI_T performance variable session */
  int provided;
  MPI_T_pvar_session pvar_session;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_T_pvar_session_create(&pvar_session);
  allowed("MPI_T performance variable session (made again)");
  rebuild_checked("with an MPI_T performance variable session");
  mt_check(MPI_T_pvar_start(pvar_session, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS &&
               MPI_T_pvar_stop(pvar_session, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS,
           "MPI_T performance variable session: usable after the rebuild");
  mt_check(MPI_T_pvar_session_free(&pvar_session) == MPI_SUCCESS,
           "MPI_T performance variable session: freed after the rebuild");
  MPI_T_finalize();

  /* a persistent collective request freed by one member only: each rank alone could be
   * checkpointed, but the members would make different requests again; the drain (run by
   * every rank, as before a checkpoint) fails with the reason instead */
  int (*drain_now)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_drain_now");
  MPI_Request prq;
  MPI_Allreduce_init(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &prq);
  if (me == 0)
    MPI_Request_free(&prq);
  mt_check(drain_now && drain_now() != MPI_SUCCESS,
           "persistent collective request freed by one member: the drain fails");
  if (me == 1)
    MPI_Request_free(&prq);
  rebuild_checked("once the other member freed it too");

  rebuild_checked("once nothing stands in the way");
  MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  mt_check_int("allreduce after the rebuild", w, 1);
  int cmp = MPI_UNEQUAL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_compare(from_session, world_group, &cmp);
  mt_check(cmp == MPI_IDENT, "the group made from the session's mpi://WORLD is the world's");
  MPI_Group_free(&world_group);
  MPI_Group_free(&from_session);
  return mt_end();
}
