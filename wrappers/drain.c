/* The drain (docs/checkpoint-protocol.md, section 2): with every application thread parked at
 * a collective-safe point, complete the network state through MPI itself, so that nothing of
 * the application is left inside MPI but receives nobody has sent to yet.
 *
 *  1. Non-blocking collectives every member has started (the safe point guarantees it) are
 *     tested to completion.
 *  2. The per-peer counts of messages sent (p2p.h) are exchanged with an all-to-all on a
 *     private communicator: each rank learns how many messages each peer sent it.  So are
 *     the rounds of the partitioned requests two ranks share (partitioned.c), which tell
 *     each rank which of its own must complete.  Messages the application matched with
 *     MPI_Mprobe/MPI_Improbe and has not received are received into buffers; their handles
 *     name the buffered messages from then on (message.c).
 *  3. Until every peer's count is matched by this rank's count of messages received: pending
 *     receives are tested (a message may be on its way to them), and every communicator is
 *     probed for messages no receive has claimed, which are received as bytes into upper-half
 *     memory and buffered in arrival order (drained.c).  Pending sends, and partitioned
 *     requests whose round both sides have released, are tested until they complete.
 *     Whatever completes stands behind a stand-in request reporting its status.
 *     Before the loop, every RMA operation the rank issued is completed (window_sync.c).
 *  4. The ranks check that they hold the same persistent collective requests (pcoll.c), and
 *     a barrier on the private communicator: no rank leaves while another may still need its
 *     progress.
 *
 * It runs on the lower half's checkpoint thread (or an application thread in the test entry
 * points below), so it uses neither malloc nor anything else that touches the upper half's
 * thread-local state, and calls MPI without ever parking.  Every wait has a deadline: a drain
 * that cannot finish fails with a reason, and the job goes on. */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"
#include "p2p.h"
#include "partitioned.h"
#include "pcoll.h"

#define DRAIN_TIMEOUT_S 30.0

static MPI_Comm private_comm = MPI_COMM_NULL;
static int private_broken; /* a failed drain left operations pending on it */
static uint64_t *owed;     /* owed[p]: messages p has sent to this rank (from the exchange) */
static double timeout_s = DRAIN_TIMEOUT_S;

/* Called on an application thread, collectively: at MPI_Init and when objects are rebuilt. */
void mana_drain_comm_make(void)
{
  MPI_Comm c = MPI_COMM_NULL;
  if (MANA_LH_CALL_NOPARK(MPI_Comm_dup, MPI_COMM_WORLD, &c) == MPI_SUCCESS) {
    MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, c, MPI_ERRORS_RETURN);
    private_comm = c;
    private_broken = 0;
  }
}

void mana_drain_comm_discard(void)
{
  if (private_comm != MPI_COMM_NULL)
    MANA_LH_CALL_NOPARK(MPI_Comm_free, &private_comm);
  private_comm = MPI_COMM_NULL;
}

void mana_drain_comm_forget(void)
{
  private_comm = MPI_COMM_NULL;
}

/* ---- failing with a reason, without libc's formatting ---- */

struct drain {
  double deadline;
  char *reason;
  size_t len, at;
  int failed;
};

static void put(struct drain *d, const char *s)
{
  while (*s && d->at + 1 < d->len)
    d->reason[d->at++] = *s++;
  if (d->len)
    d->reason[d->at] = '\0';
}

static void put_num(struct drain *d, uint64_t v)
{
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0 && n < 23);
  char out[24];
  for (int i = 0; i < n; i++)
    out[i] = digits[n - 1 - i];
  out[n] = '\0';
  put(d, out);
}

static int fail(struct drain *d, const char *what, int rc)
{
  if (!d->failed) {
    d->failed = 1;
    d->at = 0;
    put(d, "drain: ");
    put(d, what);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = "";
      int len = 0;
      MANA_LH_CALL_NOPARK(MPI_Error_string, rc, text, &len);
      put(d, " (MPI error ");
      put_num(d, (uint64_t)rc);
      if (len > 0) {
        put(d, ": ");
        put(d, text);
      }
      put(d, ")");
    }
  }
  return -1;
}

static double now(void)
{
  return MANA_LH_ANY(MPI_Wtime);
}

/* Between two polls that found nothing: a drain waits for a peer rank, which on a node with
 * as many busy threads as cores may be waiting for this very core; spinning would keep it
 * off for a whole time slice (milliseconds of every rank's pause). */
static void let_others_run(void)
{
  mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
}

/* Tests one operation of the drain's own until it completes. */
static int wait_own(struct drain *d, MPI_Request *req, const char *what)
{
  for (;;) {
    int flag = 0;
    int rc = MANA_LH_ANY(MPI_Test, req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return fail(d, what, rc);
    if (flag)
      return 0;
    if (now() > d->deadline) {
      private_broken = 1; /* the operation stays pending on it */
      fail(d, what, MPI_SUCCESS);
      put(d, " did not finish in time (a rank did not drain?)");
      return -1;
    }
    let_others_run();
  }
}

/* ---- the application's pending requests ---- */

/* A pending request of the application's that completed in the drain: counted if a receive,
 * and replaced by a stand-in that reports its status. */
static int settle(struct drain *d, uint32_t i, struct mana_slot *s, MPI_Request real, MPI_Status st)
{
  uint32_t f = s->flags;
  struct mana_req_extra *e = mana_req_extra(i);
  s->real = (uint32_t)real; /* a persistent request is inactive now, others are gone */
  if ((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_STATUS))
    mana_count_recv(e->comm, &st);
  if (f & MANA_SLOT_REQ_STATUS) { /* reports the receive served before (pt2pt_nonblocking.c) */
    s->flags &= ~MANA_SLOT_REQ_STATUS;
    st = e->status;
  }
  int rc = mana_req_make_done(i, &st);
  return rc == MPI_SUCCESS ? 0 : fail(d, "cannot make a completed request's stand-in", rc);
}

static int pending(const struct mana_slot *s)
{
  uint32_t f = s->flags;
  return (f & MANA_SLOT_USED) && !(f & MANA_SLOT_REQ_DONE) &&
         (f & (MANA_SLOT_REQ_SEND | MANA_SLOT_REQ_RECV | MANA_SLOT_REQ_COLL | MANA_SLOT_REQ_PCOLL |
               MANA_SLOT_REQ_FILE | MANA_SLOT_REQ_RMA | MANA_SLOT_REQ_PAIR)) &&
         !(s->meta && !(f & MANA_SLOT_ACTIVE));
}

/* Requests only MPI's own wait may complete (MANA_SLOT_REQ_MPIWAIT: ROMIO's non-blocking
 * collective file operations), one at a time in the order this rank started them.  Every
 * member started the same ones (they are counted on the file's clock) in the same order, and
 * every rank comes here first in its drain, so each wait finds its partners waiting for the
 * same operation; MPI progresses only the operation a rank waits for.  MPI_Wait cannot time
 * out: a member that never started one would hang here, which the clock rules out. */
static int wait_mpi_own(struct drain *d)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (;;) {
    uint32_t first = UINT32_MAX;
    uint64_t first_seq = UINT64_MAX;
    for (uint32_t i = 0; i < t->capacity; i++) {
      struct mana_slot *s = mana_slot_at(t, i);
      const struct mana_req_extra *e = mana_req_extra(i);
      if (!e)
        return fail(d, "out of memory for request extras", MPI_ERR_NO_MEM);
      if (pending(s) && (s->flags & MANA_SLOT_REQ_MPIWAIT) && e->seq < first_seq) {
        first = i;
        first_seq = e->seq;
      }
    }
    if (first == UINT32_MAX)
      return 0;
    struct mana_slot *s = mana_slot_at(t, first);
    MPI_Request real = (MPI_Request)(uint32_t)s->real;
    MPI_Status st;
    st.MPI_ERROR = MPI_SUCCESS;
    int rc = MANA_LH_ANY(MPI_Wait, &real, &st);
    if (rc != MPI_SUCCESS) /* completed with an error: the application will see it */
      st.MPI_ERROR = rc;
    if (settle(d, first, s, real, st) != 0)
      return -1;
  }
}

/* Called on every rank once its threads are parked, before SUSPENDED (boundary.h).  Without
 * it, a rank whose thread waits in MPI's own wait for such an operation could not park: its
 * peers parked with theirs pending would wait for them only in the drain, after every rank
 * has parked.  The safe point has been reached, so every member has started the same
 * operations; the drain's wait_mpi_own then finds none left. */
int mana_stub_settle_own_waits(char *reason, size_t len)
{
  struct drain d = {0, reason, len, 0, 0};
  if (len)
    reason[0] = '\0';
  return mana_p2p_world_size == 0 ? 0 : wait_mpi_own(&d);
}

/* Tests every pending request the drain can finish; counts what is still pending. */
static int test_requests(struct drain *d, int *colls, int *sends)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  *colls = *sends = 0;
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    uint32_t f = s->flags;
    int partitioned = mana_part_must_complete(s);
    if (!pending(s) && !partitioned)
      continue;
    MPI_Request real = (MPI_Request)(uint32_t)s->real;
    MPI_Status st;
    int flag = 0;
    const struct mana_req_extra *e = mana_req_extra(i);
    if (!e)
      return fail(d, "out of memory for request extras", MPI_ERR_NO_MEM);
    st.MPI_ERROR = MPI_SUCCESS;
    int rc = MANA_LH_ANY(MPI_Test, &real, &flag, &st); /* a pair's halves: sendrecv_pair.c */
    if (rc != MPI_SUCCESS) { /* completed with an error: the application will see it */
      flag = 1;
      st.MPI_ERROR = rc;
    }
    if (!flag) {
      *colls += (f & (MANA_SLOT_REQ_COLL | MANA_SLOT_REQ_PCOLL)) != 0;
      /* Independent file operations complete locally, RMA requests once their window is
       * flushed (before this loop): they are waited for like sends. */
      *sends += (f & (MANA_SLOT_REQ_SEND | MANA_SLOT_REQ_FILE | MANA_SLOT_REQ_RMA)) != 0;
      /* An MPI_Isendrecv waits like a send until its send half is done; its receive half is
       * posted again at restart like any pending receive. */
      *sends += (f & MANA_SLOT_REQ_PAIR) && e->pair_send != MPI_REQUEST_NULL;
      *sends += partitioned; /* both sides released its round: its data is on its way */
      continue;
    }
    if (settle(d, i, s, real, st) != 0)
      return -1;
  }
  return 0;
}

/* ---- messages nobody has claimed ---- */

/* One message on real, buffered for the application's communicator v, or discarded (v is
 * MPI_COMM_NULL: real is a sink). */
static int take_message(struct drain *d, MPI_Comm v, MPI_Comm real, int *took)
{
  MPI_Message msg = MPI_MESSAGE_NULL;
  /* Zeroed: MPICH's probes leave the cancelled bit alone, and a stray 1 there would keep the
   * message from being counted (mana_count_recv). */
  MPI_Status st = {0};
  MPI_Count bytes = 0;
  int flag = 0;
  *took = 0;
  int rc = MANA_LH_ANY(MPI_Improbe, MPI_ANY_SOURCE, MPI_ANY_TAG, real, &flag, &msg, &st);
  if (rc != MPI_SUCCESS)
    return fail(d, "MPI_Improbe failed", rc);
  if (!flag)
    return 0;
  MANA_LH_ANY(MPI_Get_count_c, &st, MPI_BYTE, &bytes);
  struct mana_drained *m = mana_drained_new(bytes);
  if (!m)
    return fail(d, "out of memory for a drained message", MPI_ERR_NO_MEM);
  MPI_Request req = MPI_REQUEST_NULL;
  rc = MANA_LH_ANY(MPI_Imrecv_c, m->data, bytes, MPI_BYTE, &msg, &req);
  if (rc != MPI_SUCCESS || wait_own(d, &req, "receiving a drained message") != 0) {
    mana_drained_free(m);
    return fail(d, "receiving a drained message failed", rc);
  }
  *took = 1;
  if (v == MPI_COMM_NULL) {
    /* On a sink (comm_stranded.c): the application freed it, so no receive can take it. */
    mana_drained_free(m);
    mana_comm_sink_count(real, &st);
    return 0;
  }
  m->comm = v;
  m->comm_id = mana_comm_identity(v);
  m->source = st.MPI_SOURCE;
  m->tag = st.MPI_TAG;
  mana_drained_append(m);
  mana_count_recv(v, &st);
  return 0;
}

/* Messages the application matched (MPI_Mprobe, MPI_Improbe) and has not received: no probe
 * sees them, yet their senders counted them.  Each is received as bytes, and its handle names
 * the buffered message from then on (message.c). */
static int receive_matched(struct drain *d)
{
  MPI_Message real;
  MPI_Count bytes;
  for (uint32_t i = 0; mana_message_next_matched(&i, &real, &bytes); i++) {
    struct mana_drained *m = mana_drained_new(bytes);
    if (!m)
      return fail(d, "out of memory for a matched message", MPI_ERR_NO_MEM);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MANA_LH_ANY(MPI_Imrecv_c, m->data, bytes, MPI_BYTE, &real, &req);
    if (rc != MPI_SUCCESS || wait_own(d, &req, "receiving a matched message") != 0) {
      mana_drained_free(m);
      return fail(d, "receiving a matched message failed", rc);
    }
    mana_message_drained(i, m);
  }
  return 0;
}

/* Every communicator the application holds, in a stable order, then the sinks. */
static int probe_all(struct drain *d)
{
  struct mana_table *t = &mana_tables[MANA_KIND_COMM];
  int took;
  for (uint32_t i = 0; i <= t->capacity + 1; i++) {
    MPI_Comm v, real;
    if (i == t->capacity) {
      v = real = MPI_COMM_WORLD;
    } else if (i == t->capacity + 1) {
      v = real = MPI_COMM_SELF;
    } else {
      struct mana_slot *s = mana_slot_at(t, i);
      if (!(s->flags & MANA_SLOT_USED))
        continue;
      v = (MPI_Comm)mana_handle_make(MANA_KIND_COMM, i);
      /* One the application freed is probed while MPI keeps it: a persistent receive on it
       * not started yet takes its messages later. */
      if ((s->flags & MANA_SLOT_FREED) &&
          ((MPI_Comm)(uint32_t)s->real == MPI_COMM_NULL || !mana_comm_freed_alive(v)))
        continue;
      real = (MPI_Comm)(uint32_t)s->real;
    }
    do
      if (take_message(d, v, real, &took) != 0)
        return -1;
    while (took);
  }
  MPI_Comm sink;
  for (unsigned k = 0; mana_comm_sink_at(k, &sink) == 0; k++)
    for (took = sink != MPI_COMM_NULL; took;)
      if (take_message(d, MPI_COMM_NULL, sink, &took) != 0)
        return -1;
  return 0;
}

/* The first peer that has sent this rank more than it received, or -1. */
static int owing_peer(void)
{
  for (int p = 0; p < mana_p2p_world_size; p++)
    if (mana_p2p_recvd[p] < owed[p])
      return p;
  return -1;
}

/* Memory of the drain's own: the checkpoint thread must not use the upper half's malloc. */
static void *scratch(size_t bytes)
{
  long p = mana_raw_syscall6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p < 0 && p > -4096 ? NULL : (void *)p;
}

static int exchange_counts(struct drain *d)
{
  if (!owed && !(owed = scratch((size_t)mana_p2p_world_size * sizeof(uint64_t))))
    return fail(d, "out of memory for the counts", MPI_ERR_NO_MEM);
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MANA_LH_ANY(MPI_Ialltoall, mana_p2p_sent, 1, MPI_UINT64_T, owed, 1, MPI_UINT64_T,
                       private_comm, &req);
  if (rc != MPI_SUCCESS)
    return fail(d, "MPI_Ialltoall of the message counts failed", rc);
  return wait_own(d, &req, "the exchange of message counts");
}

/* Partitioned requests (partitioned.c): each rank sends each peer the rounds of the pairs
 * they share and how many requests of each signature it made, so that each knows which of its
 * requests in progress must complete before the image is written.  Every rank takes part,
 * with or without partitioned requests: both exchanges are collectives. */
static int plan_partitioned(struct drain *d)
{
  /* out, in, out displacements, in displacements, fill cursors: world size each */
  static int *counts;
  int n = mana_p2p_world_size;
  if (!counts && !(counts = scratch(5 * (size_t)n * sizeof(int))))
    return fail(d, "out of memory for the partitioned requests' counts", MPI_ERR_NO_MEM);
  int *out = counts, *in = out + n, *out_at = in + n, *in_at = out_at + n, *next = in_at + n;
  const int words = sizeof(struct mana_part_wire) / sizeof(uint64_t);
  for (int p = 0; p < n; p++)
    out[p] = 0;
  mana_part_count(out); /* records, then words below */
  for (int p = 0; p < n; p++)
    out[p] *= words;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MANA_LH_ANY(MPI_Ialltoall, out, 1, MPI_INT, in, 1, MPI_INT, private_comm, &req);
  if (rc != MPI_SUCCESS)
    return fail(d, "MPI_Ialltoall of the partitioned request counts failed", rc);
  if (wait_own(d, &req, "the exchange of partitioned request counts") != 0)
    return -1;
  size_t sent = 0, got = 0; /* in uint64_t */
  for (int p = 0; p < n; p++) {
    out_at[p] = (int)sent;
    in_at[p] = (int)got;
    next[p] = out_at[p] / words;
    sent += (size_t)out[p];
    got += (size_t)in[p];
  }
  size_t bytes = (sent + got) * sizeof(uint64_t) + (size_t)n * (sizeof(void *) + sizeof(size_t));
  uint64_t *buf = scratch(bytes);
  if (!buf)
    return fail(d, "out of memory for the partitioned request records", MPI_ERR_NO_MEM);
  uint64_t *recvd = buf + sent;
  struct mana_part_wire **from = (struct mana_part_wire **)(recvd + got);
  size_t *nfrom = (size_t *)(from + n);
  mana_part_fill((struct mana_part_wire *)buf, next);
  for (int p = 0; p < n; p++) {
    from[p] = (struct mana_part_wire *)(recvd + in_at[p]);
    nfrom[p] = (size_t)(in[p] / words);
  }
  rc = MANA_LH_ANY(MPI_Ialltoallv, buf, out, out_at, MPI_UINT64_T, recvd, in, in_at, MPI_UINT64_T,
                   private_comm, &req);
  if (rc != MPI_SUCCESS)
    fail(d, "MPI_Ialltoallv of the partitioned request records failed", rc);
  else if (wait_own(d, &req, "the exchange of partitioned request records") == 0)
    mana_part_plan((struct mana_part_wire *const *)from, nfrom);
  mana_raw_syscall4(SYS_munmap, (long)buf, (long)bytes, 0, 0);
  return d->failed ? -1 : 0;
}

/* The members of a communicator must hold the same persistent collective requests for a
 * restart to make them again alike (pcoll.c); a checkpoint where they do not fails here. */
static int agree_on_persistent_collectives(struct drain *d)
{
  static uint64_t sums[2];
  mana_pcoll_agreement(sums);
  MPI_Request req = MPI_REQUEST_NULL;
  int rc =
      MANA_LH_ANY(MPI_Iallreduce, MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM, private_comm, &req);
  if (rc != MPI_SUCCESS)
    return fail(d, "MPI_Iallreduce of the persistent collective requests failed", rc);
  if (wait_own(d, &req, "the agreement on persistent collective requests") != 0)
    return -1;
  if (sums[0] != sums[1])
    return fail(d,
                "the ranks do not hold the same persistent collective requests (one was "
                "freed by some members only)",
                MPI_SUCCESS);
  return 0;
}

static int run(struct drain *d)
{
  int colls, sends, peer;
  if (mana_p2p_world_size == 0)
    return 0; /* MPI was never initialized: nothing in flight */
  if (private_comm == MPI_COMM_NULL || private_broken)
    return fail(d,
                private_broken ? "an earlier drain failed; its communicator is unusable"
                               : "no private communicator",
                MPI_SUCCESS);
  d->deadline = now() + timeout_s;
  if (exchange_counts(d) != 0 || plan_partitioned(d) != 0 || receive_matched(d) != 0 ||
      wait_mpi_own(d) != 0)
    return -1;
  /* Every rank is in its drain now: the windows' fences and flushes cannot wait for one that
   * is not (window_sync.c). */
  const char *why = NULL;
  int wrc = MPI_SUCCESS;
  if (mana_windows_drain(&why, &wrc) != 0)
    return fail(d, why, wrc);
  for (;;) {
    if (test_requests(d, &colls, &sends) != 0)
      return -1;
    /* A communicator made by MPI_Comm_idup is unfinished until its request completes: the
     * probing waits for the collectives. */
    if (colls == 0 && probe_all(d) != 0)
      return -1;
    peer = owing_peer();
    if (colls == 0 && sends == 0 && peer < 0)
      break;
    if (now() > d->deadline) {
      private_broken = 1;
      fail(d, "not finished after ", MPI_SUCCESS);
      put_num(d, (uint64_t)timeout_s);
      put(d, " s: ");
      if (peer >= 0) {
        put(d, "rank ");
        put_num(d, (uint64_t)peer);
        put(d, " sent ");
        put_num(d, owed[peer] - mana_p2p_recvd[peer]);
        put(d, " message(s) not received yet");
      } else {
        put_num(d, (uint64_t)(colls + sends));
        put(d, " send(s), file operation(s) or collective(s) still pending");
      }
      return -1;
    }
    let_others_run();
  }
  if (agree_on_persistent_collectives(d) != 0)
    return -1;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MANA_LH_ANY(MPI_Ibarrier, private_comm, &req);
  if (rc != MPI_SUCCESS)
    return fail(d, "MPI_Ibarrier failed", rc);
  return wait_own(d, &req, "the final barrier");
}

/* The job ends right after this checkpoint: complete or cancel what the application still has
 * posted (MPI_Finalize would otherwise find those receives, and UCX reports each one on
 * stdout), and free its persistent requests, windows, file views and datatypes. */
void mana_stub_cancel_receives(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  if (!private_broken)
    mana_exit_complete_receives(private_comm);
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    uint32_t f = s->flags;
    MPI_Request real = (MPI_Request)(uint32_t)s->real;
    if (!(f & MANA_SLOT_USED) || !(f & MANA_SLOT_REQ_RECV) || (f & MANA_SLOT_REQ_DONE) ||
        real == MPI_REQUEST_NULL || ((f & MANA_SLOT_PERSISTENT) && !(f & MANA_SLOT_ACTIVE)))
      continue;
    if (MANA_LH_ANY(MPI_Cancel, &real) == MPI_SUCCESS)
      MANA_LH_ANY(MPI_Wait, &real, MPI_STATUS_IGNORE);
  }
  for (uint32_t i = 0; i < t->capacity; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && (s->flags & MANA_SLOT_REQ_PAIR) &&
        !(s->flags & MANA_SLOT_REQ_DONE))
      mana_pair_discard(i, 1);
  }
  /* Persistent requests, all inactive now, hold their datatypes inside MPI (reported at
   * MPI_Finalize like the datatypes below; MPICH's pt2pt/multi_psend_derived). */
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct mana_req_extra *e = mana_req_extra(i);
    if (!(s->flags & MANA_SLOT_USED) || !(s->flags & MANA_SLOT_PERSISTENT) || !e)
      continue;
    MPI_Request real =
        (s->flags & MANA_SLOT_REQ_DONE) ? e->saved_real : (MPI_Request)(uint32_t)s->real;
    if (real != MPI_REQUEST_NULL)
      MANA_LH_ANY(MPI_Request_free, &real);
  }
  mana_comm_sinks_release();
  /* MPICH 4.0.2 over UCX aborts in MPI_Finalize while a window exists. */
  mana_windows_free_for_exit();
  mana_files_release_views_for_exit();
  /* The datatypes the application still holds: MPICH's datatype engine reports each one left
   * at MPI_Finalize on stderr, which a native run of the same program never prints. */
  mana_datatypes_free_for_exit();
  /* MPICH's MPI_Finalize leaves the process manager's connection open while a session is:
   * the rank then exits as one that did not finalize, and the launcher kills its peers with
   * SIGKILL (MPICH's init/session_mult_init: the job exited 9 at most checkpoints). */
  mana_sessions_finalize_for_exit();
}

int mana_stub_drain(char *reason, size_t len)
{
  struct drain d = {0, reason, len, 0, 0};
  if (len)
    reason[0] = '\0';
  if (run(&d) != 0)
    return -1;
  /* Nothing is in flight any more: the files' pointers are what the restart must restore. */
  mana_files_capture_positions();
  return 0;
}

/* ---- test entry points (found with dlsym; tests/restart_objects/drain_*.c) ---- */

/* Drains in a running job, on every rank at a point the program chooses; the job goes on. */
int mana_test_drain_now(void);
int mana_test_drain_now(void)
{
  char reason[256];
  if (mana_stub_drain(reason, sizeof(reason)) == 0)
    return MPI_SUCCESS;
  fprintf(stderr, "mana: mana_test_drain_now: %s\n", reason);
  return MPI_ERR_OTHER;
}

/* How many messages the drains left buffered on this rank (tests print it). */
int mana_test_drained_count(void);
int mana_test_drained_count(void)
{
  return (int)mana_drained_count();
}
