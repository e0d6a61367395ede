/* Virtual MPI handles.
 *
 * The application never holds a real MPICH handle for an object it created: it holds a virtual
 * handle that stays valid across checkpoint and restart, when the real objects are rebuilt with
 * new real handles.  Predefined handles (MPI_COMM_WORLD, MPI_INT, MPI_SUM, ...) and null handles
 * are compiled into the application; they mean the same in every MPICH process, so they are their
 * own virtual handle and translation passes them through.
 *
 * A virtual handle looks like an MPICH "direct" handle:  10 kkkk iiiiiiiiiiiiiiiiiiiiiiiiii
 * (bits 31-30 = 10, bits 29-26 = kind, bits 25-0 = slot index), so code that inspects MPICH
 * handle bits still sees the right kind.  MPI_File is a pointer in MPICH (ROMIO); its virtual
 * handle is the same 32-bit pattern stored in the pointer.
 *
 * Tables are two-level (chunks of slots that never move), so translation is a shift, a mask and
 * two loads, and a slot freed by MPI_Wait is reused by the next MPI_Isend without malloc. */
#ifndef MANA_HANDLES_H
#define MANA_HANDLES_H

#include <stddef.h>
#include <stdint.h>

enum mana_kind {
  MANA_KIND_COMM = 0x1,
  MANA_KIND_GROUP = 0x2,
  MANA_KIND_DATATYPE = 0x3,
  MANA_KIND_FILE = 0x4,
  MANA_KIND_ERRHANDLER = 0x5,
  MANA_KIND_OP = 0x6,
  MANA_KIND_INFO = 0x7,
  MANA_KIND_WIN = 0x8,
  MANA_KIND_KEYVAL = 0x9,
  MANA_KIND_REQUEST = 0xb,
  MANA_KIND_GREQ_CLASS = 0xd,
  MANA_KIND_MESSAGE = 0xe,
  MANA_KIND_SESSION = 0xf,
  MANA_KIND_COUNT = 0x10,
};

#define MANA_HANDLE_TAG 0x80000000u
#define MANA_HANDLE_TAG_MASK 0xc0000000u
#define MANA_HANDLE_KIND_SHIFT 26
#define MANA_HANDLE_INDEX_MASK 0x03ffffffu
#define MANA_CHUNK_SHIFT 10
#define MANA_CHUNK_SLOTS (1u << MANA_CHUNK_SHIFT)
#define MANA_MAX_CHUNKS ((MANA_HANDLE_INDEX_MASK + 1) >> MANA_CHUNK_SHIFT)

enum mana_slot_flags {
  MANA_SLOT_USED = 1u << 0,
  MANA_SLOT_PERSISTENT = 1u << 1, /* request survives completion (MPI_*_init) */
  MANA_SLOT_GREQUEST = 1u << 2,
  MANA_SLOT_ERRORS_RETURN = 1u << 3, /* communicator whose error handler does not abort */
  MANA_SLOT_ACTIVE = 1u << 4,        /* persistent request started and not yet completed */
  /* What a request is, set when it is made: the drain (drain.c) completes sends, receives and
   * non-blocking collectives, and refuses the kinds it cannot drain. */
  MANA_SLOT_REQ_SEND = 1u << 5,
  MANA_SLOT_REQ_RECV = 1u << 6,
  MANA_SLOT_REQ_COLL = 1u << 7,  /* non-blocking collective, MPI_Comm_idup */
  MANA_SLOT_REQ_PCOLL = 1u << 8, /* persistent collective (MPI_*_init) */
  MANA_SLOT_REQ_PART = 1u << 9,  /* partitioned (MPI_Psend_init, MPI_Precv_init) */
  /* The real request is a generalized request the stub made, already complete, standing in for
   * an operation completed by the drain or by a buffered message (p2p.h).  On a message
   * handle: the message is a buffered one (slot meta), not MPI's. */
  MANA_SLOT_REQ_DONE = 1u << 10,
  /* Completes with a status the stub keeps (MPI_Isendrecv served by a buffered message). */
  MANA_SLOT_REQ_STATUS = 1u << 11,
  /* An independent non-blocking file operation (MPI_File_iread, _iwrite, _at, _shared): it
   * completes without the other ranks, so the drain waits for it like a send. */
  MANA_SLOT_REQ_FILE = 1u << 12,
  /* Completed by MPI's own wait, never by polling with MPI_Test: ROMIO's non-blocking
   * collective file operations (mpi_api.txt, `mpiwait`). */
  MANA_SLOT_REQ_MPIWAIT = 1u << 13,
  /* A request-based RMA operation (MPI_Rput ...): complete once the drain has flushed its
   * window, waited for like a send. */
  MANA_SLOT_REQ_RMA = 1u << 14,
  /* MPI_Isendrecv(_replace) made of an Isend and an Irecv the stub posted (sendrecv_pair.c):
   * drained like a send while its send half is pending, posted again like a receive. */
  MANA_SLOT_REQ_PAIR = 1u << 15,
  /* A communicator the application freed while requests still name it (comm_freed.c): the
   * slot and its record live on until the last of them is retired. */
  MANA_SLOT_FREED = 1u << 16,
  /* A group a restart rebuilt that the application got from a communicator, window or file
   * (its aux names which, shared_handles.c): it stands in for that object's own group until
   * the application asks for it again. */
  MANA_SLOT_STANDIN = 1u << 17,
};

/* What a slot knows about its object.  `aux` is per kind: the collective-clock sequence number
 * of a communicator, ... `meta` points to the per-kind record that restart needs (see
 * records.h); it is released with the slot. */
struct mana_slot {
  uint64_t real;
  uint64_t aux;
  void *meta;
  uint32_t flags;
  union {
    uint32_t next_free; /* a free slot: the next one on the free list */
    /* A live slot of a kind MPI hands out again (shared_handles.c): how many more times the
     * application got this handle back from MPI than it has freed it. */
    uint32_t shared_refs;
  };
};

/* Slots a kind's table never hands out, because their virtual handles would carry the bits of
 * predefined handles compiled into applications: MPICH's pair types MPI_FLOAT_INT ..
 * MPI_LONG_DOUBLE_INT are direct datatype handles, 0x8c000000 to 0x8c000004, not builtin ones
 * (datatype.c checks this against mpi.h).  Taking them would make an application's
 * MPI_FLOAT_INT mean one of its own types. */
#define MANA_DATATYPE_RESERVED_SLOTS 5u

static inline uint32_t mana_reserved_slots(uint32_t kind)
{
  return kind == MANA_KIND_DATATYPE ? MANA_DATATYPE_RESERVED_SLOTS : 0;
}

/* Whether v is one of those predefined direct handles (a pair type). */
static inline int mana_handle_is_pair_type(uint32_t v)
{
  return v - (MANA_HANDLE_TAG | ((uint32_t)MANA_KIND_DATATYPE << MANA_HANDLE_KIND_SHIFT)) <
         MANA_DATATYPE_RESERVED_SLOTS;
}

struct mana_table {
  struct mana_slot *chunks[MANA_MAX_CHUNKS];
  uint32_t capacity;  /* slots in allocated chunks */
  uint32_t free_head; /* UINT32_MAX: none */
  uint32_t in_use;
  uint32_t kind;
};

extern struct mana_table mana_tables[MANA_KIND_COUNT];

/* How a retired slot's `meta` is released, per kind (records may be shared or hold references
 * to other records); NULL means free().  Filled in once at load time. */
typedef void mana_release_fn(struct mana_slot *slot);
extern mana_release_fn *mana_slot_release[MANA_KIND_COUNT];
/* Whether a slot the application frees must stay (1: the kind keeps it and retires it later
 * itself), per kind; NULL: never.  Called with the stub lock held. */
typedef int mana_retain_fn(struct mana_slot *slot, uint32_t virt);
extern mana_retain_fn *mana_slot_retain[MANA_KIND_COUNT];
/* Told of every request slot about to be retired, while it is still intact; NULL (the
 * common case: one load) unless a kind waits for requests to go (comm_freed.c). */
extern void (*mana_request_retiring)(struct mana_slot *slot, uint32_t index);

void mana_handles_init(void);
uint32_t mana_handle_new(enum mana_kind kind, uint64_t real);
void mana_handle_retire(enum mana_kind kind, uint32_t virt);
/* The same for a caller that already holds the live slot `s` of `virt`. */
void mana_handle_retire_slot(enum mana_kind kind, struct mana_slot *s, uint32_t virt);
/* Real to virtual, for handles MPI passes to callbacks; slow path (scans the table). */
uint32_t mana_handle_virtual_of(enum mana_kind kind, uint64_t real);

static inline int mana_handle_is_virtual(uint32_t v, enum mana_kind kind)
{
  return (v & MANA_HANDLE_TAG_MASK) == MANA_HANDLE_TAG &&
         ((v >> MANA_HANDLE_KIND_SHIFT) & 0xf) == (uint32_t)kind;
}

/* The virtual handle of slot `index` of a kind's table. */
static inline uint32_t mana_handle_make(enum mana_kind kind, uint32_t index)
{
  return MANA_HANDLE_TAG | ((uint32_t)kind << MANA_HANDLE_KIND_SHIFT) | index;
}

static inline struct mana_slot *mana_slot_at(struct mana_table *t, uint32_t index)
{
  return &t->chunks[index >> MANA_CHUNK_SHIFT][index & (MANA_CHUNK_SLOTS - 1)];
}

/* The slot behind a virtual handle, or NULL for predefined, null and foreign values. */
static inline struct mana_slot *mana_handle_slot(enum mana_kind kind, uint32_t v)
{
  struct mana_table *t = &mana_tables[kind];
  uint32_t index = v & MANA_HANDLE_INDEX_MASK;
  if (!mana_handle_is_virtual(v, kind) || index >= t->capacity)
    return NULL;
  struct mana_slot *s = mana_slot_at(t, index);
  return (s->flags & MANA_SLOT_USED) ? s : NULL;
}

/* Virtual to real.  Predefined, null and foreign values pass through unchanged, so that MPI
 * itself reports an invalid handle exactly as it would without mana.  A virtual handle whose
 * slot is not live (an object the application freed, through a copy of its handle) becomes
 * MPI's invalid handle of the kind (bits 31-30 cleared): passed through, it has the bits of a
 * created MPICH handle and could name another live object (MPICH's errors/comm/cfree: a
 * barrier on a freed communicator succeeded).  Not for files, which ROMIO dereferences, nor
 * for the pair types, predefined handles with the bits of virtual ones. */
static inline uint64_t mana_handle_real(enum mana_kind kind, uint64_t v)
{
  if (!mana_handle_is_virtual((uint32_t)v, kind))
    return v; /* predefined and null handles: one test, as before */
  struct mana_table *t = &mana_tables[kind];
  uint32_t index = (uint32_t)v & MANA_HANDLE_INDEX_MASK;
  if (__builtin_expect(index < t->capacity, 1)) {
    const struct mana_slot *s = mana_slot_at(t, index);
    if (__builtin_expect(s->flags & MANA_SLOT_USED, 1))
      return s->real;
  }
  if (kind == MANA_KIND_FILE || mana_handle_is_pair_type((uint32_t)v))
    return v;
  return (uint32_t)v & ~MANA_HANDLE_TAG_MASK;
}

/* The free list of a kind's table; the caller holds the stub lock.  Take: the first free slot,
 * made live for `real`, or UINT32_MAX when the table must grow (mana_handle_new does that).
 * Put: a retired slot, its meta already released. */
static inline __attribute__((always_inline)) uint32_t mana_slot_take(struct mana_table *t,
                                                                     uint64_t real)
{
  uint32_t index = t->free_head;
  if (__builtin_expect(index == UINT32_MAX || t->capacity == 0, 0))
    return UINT32_MAX;
  struct mana_slot *s = mana_slot_at(t, index);
  t->free_head = s->next_free;
  s->real = real;
  s->aux = 0;
  s->meta = NULL;
  s->flags = MANA_SLOT_USED;
  t->in_use++;
  return index;
}

static inline void mana_slot_put(struct mana_table *t, struct mana_slot *s, uint32_t index)
{
  s->meta = NULL;
  s->flags = 0;
  s->next_free = t->free_head;
  t->free_head = index;
  t->in_use--;
}

/* Marks a new request with its kind (generated wrappers, MANA_SLOT_REQ_*). */
/* A request MPI's own wait must complete (MANA_SLOT_REQ_MPIWAIT): its place in the order of
 * initiation, in which the drain waits for such requests (every member started them in the
 * same order; MPI progresses only the one waited for). */
void mana_req_note_order(uint32_t virt);

static inline void mana_request_mark(uint32_t virt, uint32_t kind_flags)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, virt);
  if (s)
    s->flags |= kind_flags;
}

static inline void mana_handle_update(enum mana_kind kind, uint32_t virt, uint64_t real)
{
  struct mana_slot *s = mana_handle_slot(kind, virt);
  if (s)
    s->real = real;
}

#endif
