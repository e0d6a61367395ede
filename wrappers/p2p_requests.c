/* Request extras (p2p.h): the side table, the kinds of point-to-point requests, stand-ins for
 * requests the stub completed, and the virtual requests of blocking calls that must wait. */
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"
#include "p2p.h"

struct mana_req_extra *mana_req_extra_chunks[MANA_MAX_CHUNKS];
uint64_t mana_recv_seq;

/* mmap, not malloc: the drain may need a chunk on the checkpoint thread, where the upper
 * half's malloc (thread-local arenas, errno) must not run.  The system call is served inside
 * the window by the lower half's SIGSYS handler, from any thread. */
struct mana_req_extra *mana_req_extra_map(uint32_t index)
{
  uint32_t c = index >> MANA_CHUNK_SHIFT;
  if (c >= MANA_MAX_CHUNKS)
    return NULL;
  if (!__atomic_load_n(&mana_req_extra_chunks[c], __ATOMIC_ACQUIRE)) {
    size_t size = MANA_CHUNK_SLOTS * sizeof(struct mana_req_extra);
    long p = mana_raw_syscall6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p < 0 && p > -4096)
      return NULL;
    /* Two threads may map the chunk at once: the first one in keeps it. */
    struct mana_req_extra *none = NULL;
    if (!__atomic_compare_exchange_n(&mana_req_extra_chunks[c], &none, (struct mana_req_extra *)p,
                                     0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      mana_raw_syscall6(SYS_munmap, p, (long)size, 0, 0, 0, 0);
  }
  return &mana_req_extra_chunks[c][index & (MANA_CHUNK_SLOTS - 1)];
}

void mana_req_note_recv(MPI_Request virt, void *buf, MPI_Count count, MPI_Datatype type, int source,
                        int tag, MPI_Comm comm, int large)
{
  uint32_t index = mana_req_index((uint32_t)virt);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt);
  struct mana_req_extra *e = mana_req_extra(index);
  if (!s || !e)
    return; /* no record: the checkpoint is refused (request.c) */
  mana_req_fill_recv(s, e, buf, count, source, tag, comm, large);
  mana_dt_arg_get(type, &e->type);
}

void mana_req_note_send(MPI_Request virt, int dest, MPI_Comm comm)
{
  uint32_t index = mana_req_index((uint32_t)virt);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt);
  struct mana_req_extra *e = mana_req_extra(index);
  if (!s || !e)
    return;
  s->flags |= MANA_SLOT_REQ_SEND;
  e->comm = comm;
  e->peer = dest;
  e->type = (struct mana_dt_arg){MPI_DATATYPE_NULL, NULL};
  e->buf = NULL;
}

void mana_req_note_status(MPI_Request virt, int dest, MPI_Comm comm, const MPI_Status *st)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)virt);
  struct mana_req_extra *e = mana_req_extra(mana_req_index((uint32_t)virt));
  mana_req_note_send(virt, dest, comm);
  if (s && e) {
    s->flags |= MANA_SLOT_REQ_STATUS;
    e->status = *st;
  }
}

/* ---- stand-ins: complete generalized requests that report a saved status ----
 * MPICH calls these inside the lower half, on the lower half's thread pointer: no TLS, no
 * libc that could touch it. */

static int done_query(void *extra, MPI_Status *status)
{
  const struct mana_req_extra *e = extra;
  *status = e->status;
  return e->status.MPI_ERROR;
}

static int done_free(void *extra)
{
  (void)extra; /* the extras belong to the slot */
  return MPI_SUCCESS;
}

static int done_cancel(void *extra, int complete)
{
  (void)extra;
  (void)complete; /* always complete: nothing to cancel */
  return MPI_SUCCESS;
}

int mana_req_make_done(uint32_t index, const MPI_Status *st)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  struct mana_req_extra *e = mana_req_extra(index);
  if (index >= t->capacity || !e)
    return MPI_ERR_NO_MEM;
  struct mana_slot *s = mana_slot_at(t, index);
  MPI_Request greq = MPI_REQUEST_NULL;
  e->status = *st;
  int rc = MANA_LH_ANY(MPI_Grequest_start, done_query, done_free, done_cancel, e, &greq);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_ANY(MPI_Grequest_complete, greq);
  if (rc != MPI_SUCCESS)
    return rc;
  if (s->flags & MANA_SLOT_PERSISTENT)
    e->saved_real = (MPI_Request)(uint32_t)s->real;
  s->real = (uint32_t)greq;
  s->flags |= MANA_SLOT_REQ_DONE;
  return MPI_SUCCESS;
}

void mana_req_completed(struct mana_slot *s, uint32_t index, MPI_Request *real, MPI_Status *st)
{
  uint32_t f = s->flags;
  struct mana_req_extra *e = mana_req_extra(index);
  if (!e)
    return;
  if (f & MANA_SLOT_REQ_STATUS) { /* the receive's status, kept since it was served */
    s->flags &= ~MANA_SLOT_REQ_STATUS;
    if (st && !(f & MANA_SLOT_REQ_DONE))
      *st = e->status;
    free(e->buf);
    e->buf = NULL;
  }
  if (f & MANA_SLOT_REQ_PAIR) { /* the send half is done: its packed copy goes */
    free(e->pair_packed);
    e->pair_packed = NULL;
  }
  if (f & MANA_SLOT_REQ_DONE) { /* counted when it was completed for real */
    s->flags &= ~MANA_SLOT_REQ_DONE;
    if (f & MANA_SLOT_PERSISTENT)
      *real = e->saved_real; /* the stand-in is gone; the request is inactive again */
    else if ((f & (MANA_SLOT_REQ_RECV | MANA_SLOT_REQ_PAIR)) && e->type.rec)
      mana_dt_arg_put(&e->type);
    return;
  }
  if (f & MANA_SLOT_REQ_PAIR) { /* counted when its receive completed (sendrecv_pair.c) */
    if (e->type.rec)
      mana_dt_arg_put(&e->type);
    return;
  }
  if (!(f & MANA_SLOT_REQ_RECV))
    return;
  if (f & MANA_SLOT_PERSISTENT) {
    if (st && (f & MANA_SLOT_ACTIVE))
      mana_count_recv(e->comm, st);
    return;
  }
  if (st)
    mana_count_recv(e->comm, st);
  if (e->type.rec)
    mana_dt_arg_put(&e->type);
}

MPI_Comm mana_req_pinned_comm(const struct mana_slot *s, uint32_t index)
{
  uint32_t f = s->flags;
  int p2p_persistent = (f & MANA_SLOT_PERSISTENT) &&
                       (f & (MANA_SLOT_REQ_SEND | MANA_SLOT_REQ_RECV | MANA_SLOT_REQ_PART));
  int receive = (f & MANA_SLOT_REQ_PAIR) || ((f & MANA_SLOT_REQ_RECV) && !(f & MANA_SLOT_REQ_SEND));
  if (!(f & MANA_SLOT_USED) || !(p2p_persistent || receive))
    return MPI_COMM_NULL;
  const struct mana_req_extra *e = mana_req_extra(index);
  return e ? e->comm : MPI_COMM_NULL;
}

uint32_t mana_requests_pinning(MPI_Comm comm)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  uint32_t n = 0;
  for (uint32_t i = 0, seen = 0; i < t->capacity && seen < t->in_use; i++) {
    const struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    seen++;
    n += mana_req_pinned_comm(s, i) == comm;
  }
  return n;
}

/* ---- blocking calls that must wait ---- */

int mana_wait_blocking_recv(MPI_Request real, void *buf, MPI_Count count, MPI_Datatype type,
                            int source, int tag, MPI_Comm comm, int large, MPI_Status *st)
{
  MPI_Request v = (MPI_Request)mana_handle_new(MANA_KIND_REQUEST, (uint32_t)real);
  mana_req_note_recv(v, buf, count, type, source, tag, comm, large);
  return mana_request_wait(&v, st);
}

int mana_wait_blocking_send(MPI_Request real, int dest, MPI_Comm comm)
{
  MPI_Status st;
  MPI_Request v = (MPI_Request)mana_handle_new(MANA_KIND_REQUEST, (uint32_t)real);
  mana_req_note_send(v, dest, comm);
  return mana_request_wait(&v, &st);
}
