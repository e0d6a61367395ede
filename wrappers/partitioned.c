/* Partitioned point-to-point requests (MPI_Psend_init, MPI_Precv_init) across a checkpoint
 * (docs/checkpoint-protocol.md, "Partitioned requests").
 *
 * MPI matches a partitioned send with a partitioned receive once, at initialization, in the
 * order each side initialized them on the same communicator, sender, receiver and tag (their
 * signature).  Each MPI_Start begins a round; the sender marks partitions ready
 * (MPI_Pready*), and a round's data moves once every side has released it: the sender has
 * marked its partitions ready, the receiver has started the round.  Nothing else of a round
 * lives outside the two requests, so the stub records, in upper-half memory:
 *
 *  - the initialization's arguments, its place in this rank's order of initializations, and
 *    its ordinal among this rank's initializations of its signature and direction: both sides
 *    name a pair by signature and ordinal;
 *  - per signature and direction, how many requests this rank has made;
 *  - how many rounds were started, and which partitions the sender marked ready in the
 *    current one.
 *
 * In the drain each rank sends each peer those figures for what they share
 * (mana_part_records), and every rank decides for its own requests in progress
 * (mana_part_plan): one whose round both sides have released must complete before the image
 * is written, and the drain tests it until it does; any other has no data of the round on its
 * way that the restart cannot send again.  At restart the requests are made again in the
 * order they were made, those in progress are started again, and the sender marks ready
 * again the partitions it had marked; a receiver gets those partitions again, with the same
 * bytes.  A request whose partner the peer has freed is not made again, since it would match
 * the peer's next request of the same signature; a persistent request to MPI_PROC_NULL
 * stands in for it, so that freeing it stays valid. */
#include <stdlib.h>
#include <string.h>

#include "p2p.h"
#include "partitioned.h"
#include "records.h"
#include "stub_hooks.h"
#include "stub_lock.h"
#include "u64map.h"

struct part_rec {
  int send;
  int partitions;
  void *buf;
  MPI_Count count;
  struct mana_dt_arg type;
  int peer, peer_world, tag;
  MPI_Comm comm;    /* the application's handle */
  uint64_t base;    /* the signature: communicator id, sender, receiver, tag */
  uint64_t ordinal; /* earlier initializations of base in this direction on this rank */
  uint64_t seq;     /* this rank's order of partitioned initializations */
  uint64_t started; /* rounds started */
  uint32_t readied; /* partitions marked ready in the current round */
  uint8_t must_complete, orphan; /* the last drain's plan */
  uint64_t ready[];              /* a bit per partition marked ready in the current round */
};

/* How many requests this rank has made of each signature and direction; never decremented,
 * since MPI's matching order does not forget freed requests either. */
struct part_sig {
  uint64_t key; /* sig_key(base, send) */
  int peer_world;
  uint64_t made;
};
static struct part_sig *sigs;
static size_t nsigs, sigs_cap;
static struct mana_u64map sig_index; /* key -> index + 1 */
static uint64_t part_seq;

static uint64_t mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return h;
}

static uint64_t sig_key(uint64_t base, int send)
{
  return mix(base, 0x5349u + (uint64_t)(send != 0)) | 1;
}

/* The wire keys: bit 0 tells a request (1) from a signature (0). */
static uint64_t wire_request_key(uint64_t base, uint64_t ordinal, int send)
{
  return (mix(mix(base, ordinal + 1), (uint64_t)(send != 0)) << 1) | 1;
}

static uint64_t wire_sig_key(uint64_t base, int send)
{
  return sig_key(base, send) << 1;
}

static size_t bitmap_words(int partitions)
{
  return ((size_t)(partitions > 0 ? partitions : 0) + 63) / 64;
}

/* The next ordinal of key, counting this initialization; -1 when out of memory. */
static int64_t take_ordinal(uint64_t key, int peer_world)
{
  uint64_t at;
  if (mana_u64map_get(&sig_index, key, &at))
    return (int64_t)sigs[at - 1].made++;
  if (nsigs == sigs_cap) {
    size_t cap = sigs_cap ? 2 * sigs_cap : 16;
    struct part_sig *grown = realloc(sigs, cap * sizeof(*grown));
    if (!grown)
      return -1;
    sigs = grown;
    sigs_cap = cap;
  }
  if (mana_u64map_put(&sig_index, key, nsigs + 1, NULL) < 0)
    return -1;
  sigs[nsigs++] = (struct part_sig){key, peer_world, 1};
  return 0;
}

static void record(int send, const void *buf, int partitions, MPI_Count count,
                   MPI_Datatype datatype, int peer, int tag, MPI_Comm comm,
                   const MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  struct mana_req_extra *e = s ? mana_req_extra(mana_req_index((uint32_t)*request)) : NULL;
  int me = mana_p2p_my_world_rank, other = mana_p2p_world_rank(comm, peer);
  uint64_t base =
      mix(mix(mix(mix(0x50415254u, mana_comm_cc_id(comm)), (uint64_t)(send ? me : other)),
              (uint64_t)(send ? other : me)),
          (uint64_t)(uint32_t)tag);
  /* Counted even when the record cannot be made: the peer's ordinals count this one. */
  int64_t ordinal = take_ordinal(sig_key(base, send), other);
  struct part_rec *r = e && ordinal >= 0
                           ? calloc(1, sizeof(*r) + bitmap_words(partitions) * sizeof(uint64_t))
                           : NULL;
  if (!r)
    return; /* a request without a record is refused at checkpoint */
  *r = (struct part_rec){.send = send,
                         .partitions = partitions,
                         .buf = (void *)buf,
                         .count = count,
                         .peer = peer,
                         .peer_world = other,
                         .tag = tag,
                         .comm = comm,
                         .base = base,
                         .ordinal = (uint64_t)ordinal,
                         .seq = ++part_seq};
  mana_dt_arg_get(datatype, &r->type);
  s->meta = r;
  s->flags |= MANA_SLOT_PERSISTENT;
  e->comm = comm; /* keeps a communicator the application frees (comm_freed.c) */
  e->peer = peer;
  e->tag = tag;
}

void mana_after_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                           int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
  (void)info; /* MPICH 4.0.2 reads no hint of a partitioned request */
  record(1, buf, partitions, count, datatype, dest, tag, comm, request);
}

void mana_after_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                           int source, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
  (void)info;
  record(0, buf, partitions, count, datatype, source, tag, comm, request);
}

static struct part_rec *rec_of(MPI_Request v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)v);
  return s && (s->flags & MANA_SLOT_REQ_PART) ? s->meta : NULL;
}

/* Threads of the application may mark partitions of one request at once. */
static void mark_ready(struct part_rec *r, int partition)
{
  if (!r || partition < 0 || partition >= r->partitions)
    return;
  uint64_t bit = 1ull << (partition % 64);
  if (!(__atomic_fetch_or(&r->ready[partition / 64], bit, __ATOMIC_RELAXED) & bit))
    __atomic_add_fetch(&r->readied, 1, __ATOMIC_RELAXED);
}

void mana_after_Pready(int partition, MPI_Request request)
{
  mark_ready(rec_of(request), partition);
}

void mana_after_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
  struct part_rec *r = rec_of(request);
  for (int p = partition_low; r && p <= partition_high; p++)
    mark_ready(r, p);
}

void mana_after_Pready_list(int length, int array_of_partitions[], MPI_Request request)
{
  struct part_rec *r = rec_of(request);
  for (int k = 0; r && k < length; k++)
    mark_ready(r, array_of_partitions[k]);
}

/* A request the drain completed reports every partition arrived: its real request is the
 * stand-in then, which MPI_Parrived does not accept. */
int MPI_Parrived(MPI_Request request, int partition, int *flag)
{
  const struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)request);
  int rc = MPI_SUCCESS;
  if (s && (s->flags & MANA_SLOT_REQ_PART) && (s->flags & MANA_SLOT_REQ_DONE))
    *flag = 1;
  else
    rc = MANA_LH_CALL(MPI_Parrived, MANA_REAL(REQUEST, MPI_Request, request), partition, flag);
  MANA_PARK_CHECK();
  return rc;
}

void mana_part_started(struct mana_slot *s)
{
  struct part_rec *r = s->meta;
  if (!r)
    return;
  r->started++;
  r->readied = 0;
  memset(r->ready, 0, bitmap_words(r->partitions) * sizeof(uint64_t));
}

void mana_part_release(struct mana_slot *s)
{
  struct part_rec *r = s->meta;
  if (!r)
    return;
  mana_dt_arg_put(&r->type);
  free(r);
}

const char *mana_part_refusal(const struct mana_slot *s)
{
  const struct part_rec *r = s->meta;
  if (!r)
    return "no record (out of memory) of the partitioned request";
  if (r->comm != MPI_COMM_WORLD && r->comm != MPI_COMM_SELF &&
      !mana_handle_slot(MANA_KIND_COMM, (uint32_t)r->comm))
    return "the communicator was freed under";
  return mana_dt_arg_ok(&r->type) ? NULL : "no usable datatype record for";
}

/* ---- the drain ---- */

static int in_progress(const struct mana_slot *s)
{
  return (s->flags & MANA_SLOT_ACTIVE) && !(s->flags & MANA_SLOT_REQ_DONE);
}

/* Rounds whose data this side has released: a sender's fully marked ones, a receiver's
 * started ones. */
static uint64_t released_rounds(const struct mana_slot *s, const struct part_rec *r)
{
  if (r->send && in_progress(s) && r->readied < (uint32_t)r->partitions)
    return r->started - 1;
  return r->started;
}

/* Visits every recorded partitioned request: slot s, its record r, its index (`continue`
 * goes on with the next one). */
#define EACH_PART(s, r, index)                                                                    \
  for (uint32_t index = 0; index < mana_tables[MANA_KIND_REQUEST].capacity; index++)              \
    for (struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_REQUEST], index); s; s = NULL) \
      for (struct part_rec *r =                                                                   \
               (s->flags & MANA_SLOT_USED) && (s->flags & MANA_SLOT_REQ_PART) ? s->meta : NULL;   \
           r; r = NULL)

static int peer_ok(int p)
{
  return (unsigned)p < (unsigned)mana_p2p_world_size;
}

void mana_part_count(int count[])
{
  for (size_t k = 0; k < nsigs; k++)
    if (peer_ok(sigs[k].peer_world))
      count[sigs[k].peer_world]++;
  EACH_PART(s, r, i)
  {
    if (peer_ok(r->peer_world))
      count[r->peer_world]++;
  }
}

void mana_part_fill(struct mana_part_wire *out, int next[])
{
  for (size_t k = 0; k < nsigs; k++)
    if (peer_ok(sigs[k].peer_world))
      out[next[sigs[k].peer_world]++] = (struct mana_part_wire){sigs[k].key << 1, sigs[k].made};
  EACH_PART(s, r, i)
  {
    if (peer_ok(r->peer_world))
      out[next[r->peer_world]++] = (struct mana_part_wire){
          wire_request_key(r->base, r->ordinal, r->send), released_rounds(s, r)};
  }
}

static int find(const struct mana_part_wire *w, size_t n, uint64_t key, uint64_t *value)
{
  for (size_t k = 0; k < n; k++)
    if (w[k].key == key) {
      *value = w[k].value;
      return 1;
    }
  return 0;
}

void mana_part_plan(struct mana_part_wire *const from[], const size_t n[])
{
  EACH_PART(s, r, i)
  {
    uint64_t partner_rounds, partner_made;
    r->must_complete = r->orphan = 0;
    if (!peer_ok(r->peer_world))
      continue;
    const struct mana_part_wire *w = from[r->peer_world];
    size_t nw = n[r->peer_world];
    if (!find(w, nw, wire_request_key(r->base, r->ordinal, !r->send), &partner_rounds)) {
      /* No partner: the peer has freed it, or has not made it yet. */
      r->orphan =
          find(w, nw, wire_sig_key(r->base, !r->send), &partner_made) && partner_made > r->ordinal;
      continue;
    }
    if (in_progress(s) && partner_rounds >= r->started)
      r->must_complete = !r->send || r->readied == (uint32_t)r->partitions;
  }
}

int mana_part_must_complete(const struct mana_slot *s)
{
  const struct part_rec *r = s->meta;
  return (s->flags & MANA_SLOT_USED) && (s->flags & MANA_SLOT_REQ_PART) && r && r->must_complete &&
         in_progress(s);
}

/* ---- restart ---- */

static int by_seq(const void *a, const void *b)
{
  const struct part_rec *x =
      mana_slot_at(&mana_tables[MANA_KIND_REQUEST], *(const uint32_t *)a)->meta;
  const struct part_rec *y =
      mana_slot_at(&mana_tables[MANA_KIND_REQUEST], *(const uint32_t *)b)->meta;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int make(const struct part_rec *r, MPI_Request *out)
{
  MPI_Datatype type = mana_dt_arg_real(&r->type);
  MPI_Comm comm = MANA_REAL(COMM, MPI_Comm, r->comm);
  if (r->orphan)
    return MANA_LH_CALL_NOPARK(MPI_Send_init, NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF,
                               out);
  return r->send ? MANA_LH_CALL_NOPARK(MPI_Psend_init, r->buf, r->partitions, r->count, type,
                                       r->peer, r->tag, comm, MPI_INFO_NULL, out)
                 : MANA_LH_CALL_NOPARK(MPI_Precv_init, r->buf, r->partitions, r->count, type,
                                       r->peer, r->tag, comm, MPI_INFO_NULL, out);
}

/* The round in progress, again: started, and the partitions the sender had marked ready. */
static int resume(const struct part_rec *r, MPI_Request *real)
{
  int rc = MANA_LH_CALL_NOPARK(MPI_Start, real);
  if (rc != MPI_SUCCESS || !r->send || r->readied == 0)
    return rc;
  int *list = malloc(r->readied * sizeof(int));
  if (!list)
    return MPI_ERR_NO_MEM;
  int n = 0;
  for (int p = 0; p < r->partitions; p++)
    if (r->ready[p / 64] & (1ull << (p % 64)))
      list[n++] = p;
  rc = MANA_LH_CALL_NOPARK(MPI_Pready_list, n, list, *real);
  free(list);
  return rc;
}

int mana_part_rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  uint32_t *order = malloc((t->in_use ? t->in_use : 1) * sizeof(*order));
  size_t n = 0;
  if (!order)
    return mana_rebuild_error("partitioned requests", 0, "malloc", MPI_ERR_NO_MEM);
  EACH_PART(s, r, i)
  {
    if (n < t->in_use)
      order[n++] = i;
  }
  qsort(order, n, sizeof(*order), by_seq);
  int rc = MPI_SUCCESS;
  for (size_t k = 0; k < n && rc == MPI_SUCCESS; k++) {
    uint32_t i = order[k], v = mana_handle_make(MANA_KIND_REQUEST, i);
    struct mana_slot *s = mana_slot_at(t, i);
    const struct part_rec *r = s->meta;
    struct mana_req_extra *e = mana_req_extra(i);
    MPI_Request real = MPI_REQUEST_NULL;
    if ((rc = make(r, &real)) != MPI_SUCCESS) {
      rc = mana_rebuild_error("partitioned request", v,
                              r->orphan ? "MPI_Send_init"
                              : r->send ? "MPI_Psend_init"
                                        : "MPI_Precv_init",
                              rc);
      break;
    }
    s->real = (uint32_t)real;
    if (s->flags & MANA_SLOT_REQ_DONE) {
      s->flags &= ~MANA_SLOT_REQ_DONE; /* made again: the stand-in saves the new request */
      if (!e || (rc = mana_req_make_done(i, &e->status)) != MPI_SUCCESS)
        rc = mana_rebuild_error("completed partitioned request", v, "MPI_Grequest_start",
                                e ? rc : MPI_ERR_NO_MEM);
    } else if ((s->flags & MANA_SLOT_ACTIVE) && !r->orphan) {
      rc = resume(r, &real);
      s->real = (uint32_t)real;
      if (rc != MPI_SUCCESS)
        rc = mana_rebuild_error("partitioned request in progress", v, "MPI_Start", rc);
    }
  }
  free(order);
  return rc;
}
