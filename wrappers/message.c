/* Matched messages (MPI_Mprobe, MPI_Improbe): the message handles, and their fate at a
 * checkpoint.
 *
 * A message handle names a message MPI has matched and set aside for one MPI_Mrecv or
 * MPI_Imrecv.  The stub's handle remembers the communicator (slot aux: the receive that takes
 * it counts it, p2p.h) and, in its record, what the probe reported: size, source and tag.
 * Such a message is invisible to the drain's probes, yet its sender counted it; so the drain
 * receives it (MPI_Imrecv as bytes into a buffered message, drained.c) and the handle then
 * names that buffered message instead, as the handles of matched probes served from the
 * buffered messages always do.  MPI_Mrecv and MPI_Imrecv deliver a buffered message with the
 * receive's own datatype (drained_recv.c), and a restart finds it in upper-half memory: a
 * drained message handle needs no MPI object at all. */
#include <stdio.h>

#include "p2p.h"

struct message_rec {
  struct mana_drained *buffered; /* NULL: MPI still holds the message (slot real) */
  MPI_Count bytes;
  int source, tag;
};

static struct message_rec *new_rec(MPI_Comm comm, MPI_Message real, uint32_t *v)
{
  struct message_rec *r = calloc(1, sizeof(*r));
  *v = mana_handle_new(MANA_KIND_MESSAGE, (uint32_t)real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_MESSAGE, *v);
  if (s) {
    s->aux = (uint32_t)comm;
    s->meta = r; /* NULL when out of memory: the checkpoint is refused (check) */
  }
  return s ? r : NULL;
}

MPI_Message mana_message_buffered(struct mana_drained *m, MPI_Comm comm, MPI_Status *status)
{
  uint32_t v;
  struct message_rec *r = new_rec(comm, MPI_MESSAGE_NULL, &v);
  if (r) {
    r->buffered = m;
    r->bytes = m->bytes;
    r->source = m->source;
    r->tag = m->tag;
  }
  struct mana_slot *s = mana_handle_slot(MANA_KIND_MESSAGE, v);
  if (s)
    s->flags |= MANA_SLOT_REQ_DONE;
  if (status != MPI_STATUS_IGNORE)
    mana_drained_status(m, status);
  return (MPI_Message)v;
}

MPI_Message mana_message_new(MPI_Message real, MPI_Comm comm, const MPI_Status *st)
{
  if (!mana_real_is_created((uint32_t)real))
    return real; /* MPI_MESSAGE_NO_PROC: nothing behind it */
  uint32_t v;
  struct message_rec *r = new_rec(comm, real, &v);
  if (r) {
    MANA_LH_CALL_NOPARK(MPI_Get_count_c, st, MPI_BYTE, &r->bytes);
    r->source = st->MPI_SOURCE;
    r->tag = st->MPI_TAG;
  }
  return (MPI_Message)v;
}

struct mana_drained *mana_message_take(MPI_Message *message, MPI_Comm *comm, MPI_Message *real)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_MESSAGE, (uint32_t)*message);
  struct message_rec *r = s ? s->meta : NULL;
  *comm = s ? (MPI_Comm)(uint32_t)s->aux : MPI_COMM_NULL;
  *real = s ? (MPI_Message)(uint32_t)s->real : *message;
  if (!r || !r->buffered)
    return NULL;
  struct mana_drained *m = r->buffered;
  r->buffered = NULL;
  mana_handle_retire(MANA_KIND_MESSAGE, (uint32_t)*message);
  *message = MPI_MESSAGE_NULL;
  return m;
}

/* ---- at a checkpoint ---- */

int mana_message_next_matched(uint32_t *cursor, MPI_Message *real, MPI_Count *bytes)
{
  struct mana_table *t = &mana_tables[MANA_KIND_MESSAGE];
  for (; *cursor < t->capacity; (*cursor)++) {
    struct mana_slot *s = mana_slot_at(t, *cursor);
    const struct message_rec *r = s->meta;
    if ((s->flags & MANA_SLOT_USED) && r && !r->buffered) {
      *real = (MPI_Message)(uint32_t)s->real;
      *bytes = r->bytes;
      return 1;
    }
  }
  return 0;
}

void mana_message_drained(uint32_t index, struct mana_drained *m)
{
  struct mana_slot *s = mana_slot_at(&mana_tables[MANA_KIND_MESSAGE], index);
  struct message_rec *r = s->meta;
  MPI_Comm comm = (MPI_Comm)(uint32_t)s->aux;
  MPI_Status st = {0};
  m->comm = comm;
  m->comm_id = mana_comm_identity(comm);
  m->source = st.MPI_SOURCE = r->source;
  m->tag = r->tag;
  r->buffered = m;
  s->real = (uint32_t)MPI_MESSAGE_NULL;
  s->flags |= MANA_SLOT_REQ_DONE;
  mana_count_recv(comm, &st); /* out of MPI now, as any drained message */
}

static void release(struct mana_slot *s)
{
  struct message_rec *r = s->meta;
  if (r)
    mana_drained_free(r->buffered); /* never received: MPI_Mrecv and MPI_Imrecv take it first */
  free(r);
}

static int comm_live(MPI_Comm v)
{
  return v == MPI_COMM_WORLD || v == MPI_COMM_SELF ||
         mana_handle_slot(MANA_KIND_COMM, (uint32_t)v) != NULL;
}

/* A matched message is drained, but only with its record, and the drain counts it on its
 * communicator, which must still exist. */
static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_MESSAGE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct message_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || (r && r->buffered))
      continue;
    const char *why = !r                                       ? "no record of"
                      : !comm_live((MPI_Comm)(uint32_t)s->aux) ? "the communicator was freed under"
                                                               : NULL;
    if (why) {
      mana_reason(reason, len, why, "matched message", mana_handle_make(MANA_KIND_MESSAGE, i));
      return 0;
    }
  }
  return 1;
}

/* After a drain, every handle names a buffered message; one MPI still held was not drained
 * (the rebuild-in-place test mode without mana_test_drain_now). */
static int rebuild(void)
{
  uint32_t cursor = 0;
  MPI_Message real;
  MPI_Count bytes;
  if (!mana_message_next_matched(&cursor, &real, &bytes))
    return MPI_SUCCESS;
  fprintf(stderr, "mana: rebuilding MPI objects: matched message %#x was not drained\n",
          mana_handle_make(MANA_KIND_MESSAGE, cursor));
  return MPI_ERR_REQUEST;
}

const struct mana_kind_ops mana_message_ops = {
    .name = "matched message",
    .kind = MANA_KIND_MESSAGE,
    .release = release,
    .check = check,
    .rebuild = rebuild,
};
