/* Point-to-point state the drain needs (docs/checkpoint-protocol.md, section 2).
 *
 * Counters: per world rank, how many messages this process has sent to it and how many it has
 * taken out of MPI from it.  Sends count when they start (every send wrapper, MPI_Start of a
 * persistent send); receives count when the stub first sees them complete (the blocking
 * receives, the Wait/Test family, the drain itself).  At a checkpoint, the drain exchanges the
 * sent counts and receives until every peer's count is matched.
 *
 * Request extras: a side table indexed like the request table (chunks that never move) with
 * what the drain and the restart need of a request: the arguments of a receive, to post it
 * again after a restart, and the status of a request the stub completed (MANA_SLOT_REQ_DONE).
 * No malloc per request: chunks are mapped once, by whichever thread first needs them.
 *
 * Buffered messages: messages the drain received for nobody, in arrival order, in upper-half
 * memory.  Every receive and probe looks there first; the test on the fast path is one load. */
#ifndef MANA_P2P_H
#define MANA_P2P_H

#include "records.h"
#include "stub_lock.h"

/* Calls the real MPI from code that runs on an application thread (upper half's thread
 * pointer: switch) or on the lower half's checkpoint thread (its own thread pointer: call as
 * is), never parking. */
static inline int mana_on_upper_fs(void)
{
  uint64_t fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  return fs >= MANA_WINDOW_BASE && fs < MANA_WINDOW_END;
}
#define MANA_LH_ANY(fn, ...) \
  (mana_on_upper_fs() ? MANA_LH_CALL_NOPARK(fn, ##__VA_ARGS__) : MANA_BOUNDARY->lh->fn(__VA_ARGS__))

/* mpiio.c: after a successful drain, on the checkpoint thread: records every open file's
 * individual (and, if used, shared) file pointer. */
void mana_files_capture_positions(void);

/* ---- counters (p2p_count.c) ---- */

extern uint64_t *mana_p2p_sent, *mana_p2p_recvd;
extern int mana_p2p_world_size, mana_p2p_my_world_rank;

/* After MPI_Init: sizes the counters (application thread; malloc allowed). */
void mana_p2p_init(void);

/* comm.c: world rank of rank `rank` of comm (its remote group for an intercommunicator). */
int mana_comm_world_rank(MPI_Comm v, int rank);
const void *mana_comm_identity(MPI_Comm v);

static inline int mana_p2p_world_rank(MPI_Comm comm, int rank)
{
  return comm == MPI_COMM_WORLD ? rank : mana_comm_world_rank(comm, rank);
}

/* A send to `dest` of comm has started (not counted: MPI_PROC_NULL, invalid ranks). */
static inline void mana_count_send(MPI_Comm comm, int dest)
{
  if (dest < 0)
    return;
  int w = mana_p2p_world_rank(comm, dest);
  if ((unsigned)w < (unsigned)mana_p2p_world_size)
    mana_counter_add(&mana_p2p_sent[w], 1);
}

static inline void mana_uncount_send(MPI_Comm comm, int dest)
{
  if (dest < 0)
    return;
  int w = mana_p2p_world_rank(comm, dest);
  if ((unsigned)w < (unsigned)mana_p2p_world_size)
    mana_counter_add(&mana_p2p_sent[w], -1);
}

/* MPICH keeps the cancelled flag in bit 0 of count_hi_and_cancelled. */
static inline int mana_status_cancelled(const MPI_Status *st)
{
  return st->count_hi_and_cancelled & 1;
}

/* A receive on comm completed with status st: a message left MPI (not for MPI_PROC_NULL or a
 * cancelled receive). */
static inline void mana_count_recv(MPI_Comm comm, const MPI_Status *st)
{
  if (st->MPI_SOURCE < 0 || mana_status_cancelled(st))
    return;
  int w = mana_p2p_world_rank(comm, st->MPI_SOURCE);
  if ((unsigned)w < (unsigned)mana_p2p_world_size)
    mana_counter_add(&mana_p2p_recvd[w], 1);
}

/* ---- request extras (p2p_requests.c) ---- */

struct mana_req_extra {
  /* Point-to-point requests: the peer (destination or source) and the communicator (the
   * application's handles).  A receive also keeps what posting it again takes. */
  MPI_Comm comm;
  int peer, tag;
  int large; /* posted with the _c form */
  void *buf;
  MPI_Count count;
  struct mana_dt_arg type; /* non-persistent receives only: persistent ones have a record */
  uint64_t seq;            /* order in which receives were posted, for posting them again */
  /* MANA_SLOT_REQ_DONE: the status the stand-in reports; for a persistent request, the real
   * persistent request behind the stand-in. */
  MPI_Status status;
  MPI_Request saved_real;
  /* MANA_SLOT_REQ_PAIR (sendrecv_pair.c): the halves of an MPI_Isendrecv(_replace), the
   * generalized request in front of them, whether it is complete, and the packed copy the
   * send half of a _replace sends from. */
  MPI_Request pair_send, pair_recv, pair_greq;
  int pair_done;
  void *pair_packed;
  /* MANA_SLOT_GREQUEST: the stub's record of the generalized request (grequest.c). */
  void *greq;
};

extern struct mana_req_extra *mana_req_extra_chunks[MANA_MAX_CHUNKS];
extern uint64_t mana_recv_seq;

/* The extras of request slot `index`, mapping its chunk if needed; NULL only when out of
 * memory.  Uses no TLS: callable from the checkpoint thread. */
struct mana_req_extra *mana_req_extra_map(uint32_t index);

static inline struct mana_req_extra *mana_req_extra(uint32_t index)
{
  struct mana_req_extra *chunk = mana_req_extra_chunks[index >> MANA_CHUNK_SHIFT];
  return __builtin_expect(chunk != NULL, 1) ? &chunk[index & (MANA_CHUNK_SLOTS - 1)]
                                            : mana_req_extra_map(index);
}

static inline uint32_t mana_req_index(uint32_t virt)
{
  return virt & MANA_HANDLE_INDEX_MASK;
}

/* A new non-blocking receive: records its arguments and marks its slot (which must exist). */
void mana_req_note_recv(MPI_Request virt, void *buf, MPI_Count count, MPI_Datatype type, int source,
                        int tag, MPI_Comm comm, int large);

/* What posting a receive again takes, but the datatype (shared by both paths below). */
static inline void mana_req_fill_recv(struct mana_slot *s, struct mana_req_extra *e, void *buf,
                                      MPI_Count count, int source, int tag, MPI_Comm comm,
                                      int large)
{
  s->flags |= MANA_SLOT_REQ_RECV;
  e->comm = comm;
  e->peer = source;
  e->tag = tag;
  e->large = large;
  e->buf = buf;
  e->count = count;
  e->seq = ++mana_recv_seq;
}

/* The same, inline for the common case (MPI_Irecv of a predefined datatype): a few stores. */
static inline void mana_req_note_recv_fast(MPI_Request virt, void *buf, MPI_Count count,
                                           MPI_Datatype type, int source, int tag, MPI_Comm comm,
                                           int large)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt);
  struct mana_req_extra *chunk =
      mana_req_extra_chunks[mana_req_index((uint32_t)virt) >> MANA_CHUNK_SHIFT];
  if (__builtin_expect(!s || !chunk || mana_handle_is_virtual((uint32_t)type, MANA_KIND_DATATYPE),
                       0)) {
    mana_req_note_recv(virt, buf, count, type, source, tag, comm, large);
    return;
  }
  struct mana_req_extra *e = &chunk[(uint32_t)virt & (MANA_CHUNK_SLOTS - 1)];
  mana_req_fill_recv(s, e, buf, count, source, tag, comm, large);
  e->type.predefined = type;
  e->type.rec = NULL;
}
/* A new send request (kind flag, and what MPI_Start counts for a persistent one). */
void mana_req_note_send(MPI_Request virt, int dest, MPI_Comm comm);
/* A send request that must report *st when it completes (MANA_SLOT_REQ_STATUS); the extras'
 * buf, if set, is freed then. */
void mana_req_note_status(MPI_Request virt, int dest, MPI_Comm comm, const MPI_Status *st);

/* The communicator whose record request slot `index` needs for as long as it lives: a
 * receive's (counted when it completes, posted again at restart) and a persistent request's
 * (made again at restart); MPI_COMM_NULL for others (a send is counted when it starts). */
MPI_Comm mana_req_pinned_comm(const struct mana_slot *s, uint32_t index);
/* How many live requests pin comm (a scan of the request table). */
uint32_t mana_requests_pinning(MPI_Comm comm);

/* Makes the real request of slot `index` a complete stand-in reporting *st (the drain, and
 * receives matched by buffered messages).  MPI calls only through the NOPARK forms, no
 * malloc: callable from the checkpoint thread.  Returns an MPI error code. */
int mana_req_make_done(uint32_t index, const MPI_Status *st);

/* 1 if every request in progress can be rebuilt without a drain (receives are re-posted);
 * else 0 with the first other one named in reason.  The in-place rebuild test mode asks it
 * before discarding anything. */
int mana_requests_rebuildable_undrained(char *reason, size_t len);

/* The stub saw a request complete (Wait/Test family): counts a receive, puts a persistent
 * request back behind its stand-in, releases what the extras hold.  *real is the real handle
 * MPI left (MPI_REQUEST_NULL or a persistent request); st its status. */
void mana_req_completed(struct mana_slot *s, uint32_t index, MPI_Request *real, MPI_Status *st);
/* freed_receives.c: MPI_Request_free of a pending receive keeps its slot (MANA_SLOT_FREED)
 * so that the message it takes is counted, drained and posted again at restart: 1 if adopted
 * (*request is then MPI_REQUEST_NULL).  Reaping retires the adopted receives MPI has
 * completed; finalizing, it frees the real requests of those still pending. */
int mana_freed_recv_adopt(MPI_Request *request);
void mana_freed_recv_reap(int finalizing);

#define MANA_REQ_SPECIAL \
  (MANA_SLOT_REQ_RECV | MANA_SLOT_REQ_DONE | MANA_SLOT_REQ_STATUS | MANA_SLOT_REQ_PAIR)

/* sendrecv_pair.c: MPI_Isendrecv(_replace) as an Isend and an Irecv behind one request
 * (replace: recvbuf is sendbuf, sent from a packed copy); at restart its receive posted
 * again; its receive cancelled, and the request completed and freed if free_front (rebuild
 * in place, end of the job). */
int mana_pair_post(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, int large, int replace,
                   MPI_Request *request);
int mana_pair_repost(uint32_t index);
void mana_pair_discard(uint32_t index, int free_front);

/* A blocking call must wait for a pending real request: it gets a virtual slot of the given
 * kind, so the drain sees it and a restart can replace it, and is waited on like MPI_Wait
 * (request.c).  For a receive, the arguments are recorded as MPI_Irecv's.  st: a status the
 * caller owns (never MPI_STATUS_IGNORE: the receive is counted from it). */
int mana_wait_blocking_recv(MPI_Request real, void *buf, MPI_Count count, MPI_Datatype type,
                            int source, int tag, MPI_Comm comm, int large, MPI_Status *st);
int mana_wait_blocking_send(MPI_Request real, int dest, MPI_Comm comm);
/* MPI_Wait's body on a virtual request, st never MPI_STATUS_IGNORE. */
int mana_request_wait(MPI_Request *virt, MPI_Status *st);

/* ---- buffered messages (drained.c, drained_recv.c) ---- */

struct mana_drained {
  struct mana_drained *next;
  uint64_t map_len;    /* the mapping holding this header and the data */
  MPI_Comm comm;       /* the application's handle */
  const void *comm_id; /* mana_comm_identity, to drop them when the communicator is freed */
  int source, tag;     /* source: rank in comm */
  MPI_Count bytes;
  unsigned char data[] __attribute__((aligned(16)));
};

/* Oldest first.  NULL almost always: the fast paths test only this. */
extern struct mana_drained *mana_drained_head;

/* A mapping for a message of `bytes` bytes (no TLS, no malloc); NULL if out of memory. */
struct mana_drained *mana_drained_new(MPI_Count bytes);
void mana_drained_append(struct mana_drained *m);
/* The oldest message on comm that a receive from `source` with `tag` matches (wildcards as
 * MPI), or NULL; *prev_out (may be NULL) gets its predecessor for mana_drained_unlink. */
struct mana_drained *mana_drained_match(MPI_Comm comm, int source, int tag,
                                        struct mana_drained **prev_out);
void mana_drained_unlink(struct mana_drained *m, struct mana_drained *prev);
/* Match and unlink in one: the message a receive takes, or NULL. */
struct mana_drained *mana_drained_take(MPI_Comm comm, int source, int tag);
void mana_drained_free(struct mana_drained *m);
void mana_drained_forget_comm(const void *comm_id);
size_t mana_drained_count(void);

/* Probe-style status of a buffered message (source, tag, count in bytes). */
void mana_drained_status(const struct mana_drained *m, MPI_Status *st);
/* A probe of the buffered messages: 1 and st filled (unless MPI_STATUS_IGNORE) if one on comm
 * matches source and tag, else 0.  Safe while other threads take messages. */
int mana_drained_probe(MPI_Comm comm, int source, int tag, MPI_Status *st);
/* Receives m (already unlinked) into the application's buffer as MPI would: unpacks it with
 * the receive's datatype, fills st, frees m.  MPI_ERR_TRUNCATE (raised on comm's error
 * handler) if it does not fit. */
int mana_drained_deliver(struct mana_drained *m, void *buf, MPI_Count count, MPI_Datatype type,
                         MPI_Comm comm, MPI_Status *st);
/* The same with MPI's own datatype (a persistent receive's, from its record). */
int mana_drained_deliver_real(struct mana_drained *m, void *buf, MPI_Count count,
                              MPI_Datatype real_type, MPI_Status *st);
/* Takes the oldest buffered message matching a receive, if any, and delivers it: 1 if one was
 * delivered (*rc its outcome), 0 if MPI must be asked. */
int mana_drained_recv(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                      MPI_Comm comm, MPI_Status *status, int *rc);

/* Message handles (message.c): MPI's, remembering their communicator and what the probe
 * reported (st), or a buffered message's; take: the buffered message behind a handle
 * (retiring it), or NULL and MPI's real handle and communicator. */
MPI_Message mana_message_new(MPI_Message real, MPI_Comm comm, const MPI_Status *st);
MPI_Message mana_message_buffered(struct mana_drained *m, MPI_Comm comm, MPI_Status *status);
struct mana_drained *mana_message_take(MPI_Message *message, MPI_Comm *comm, MPI_Message *real);
/* The drain: the next handle, from slot *cursor on, whose message MPI still holds (its real
 * handle and size), 0 when there is none; then the message received into m, which the handle
 * names from now on (counted as received). */
int mana_message_next_matched(uint32_t *cursor, MPI_Message *real, MPI_Count *bytes);
void mana_message_drained(uint32_t index, struct mana_drained *m);

/* ---- the drain (drain.c) ---- */

int mana_stub_drain(char *reason, size_t len);
void mana_stub_cancel_receives(void);
int mana_stub_settle_own_waits(char *reason, size_t len);
/* grequest.c: a generalized request at restart (request slot index), in test mode the old
 * real request that goes, and whether one is still incomplete (freed then, its slot stays
 * until the application completes it). */
int mana_greq_remake(uint32_t index);
void mana_greq_discard(uint32_t index, MPI_Request real);
int mana_greq_incomplete(MPI_Request request);
/* exit_receives.c: before a --kill checkpoint ends the job, completes the receives still posted
 * with empty messages from their sources (collective over the drain's communicator). */
void mana_exit_complete_receives(MPI_Comm private_comm);
/* window_sync.c: the drain's window phase; window.c: frees the real windows before a --kill
 * checkpoint ends the job (collective, on every rank at the same point). */
int mana_windows_drain(const char **why, int *rc_out);
void mana_windows_free_for_exit(void);
/* mpiio.c: gives open files the default view before a --kill checkpoint ends the job
 * (collective, on every rank at the same point). */
void mana_files_release_views_for_exit(void);
/* datatype.c: frees the real datatypes before a --kill checkpoint ends the job. */
void mana_datatypes_free_for_exit(void);
/* session.c: finalizes the open sessions before a --kill checkpoint ends the job. */
void mana_sessions_finalize_for_exit(void);
/* The drain's private communicator: made at MPI_Init and when objects are rebuilt (collective,
 * on an application thread), freed before a rebuild in place, forgotten at a restart. */
void mana_drain_comm_make(void);
void mana_drain_comm_discard(void);
void mana_drain_comm_forget(void);

#endif
