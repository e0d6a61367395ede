/* Messages left on, or still coming to, a communicator the application frees.
 *
 * A message that reached this rank on a communicator and that no receive took is lost for good
 * once the application frees the communicator: no receive can name it any more (MPICH keeps it
 * in its unexpected queue until the process ends, and UCX lists it at MPI_Finalize).
 * OpenCoarrays' images do this at every program's end: each sends the others a notice that
 * nobody receives, then frees its communicator.  The sender counted the message, so a
 * checkpoint's drain, which waits until every rank has received what its peers sent it
 * (drain.c), would wait for it in vain and fail.  So before the free, the stub takes such
 * messages out of MPI, discards them and counts them received.
 *
 * Only messages already in MPI's unexpected queue are taken: none of them can match a receive
 * posted before the free (MPI would have matched them on arrival), and none posted later can
 * name the communicator, except a persistent receive started again: a communicator such a
 * request names is left alone (its messages are drained at checkpoint, comm_freed.c).
 *
 * A message can also arrive after the free: one still on its way from another node, or sent
 * by a member that had not freed the communicator yet.  MPICH would file it under a context
 * id no communicator has any more (or, once the id is reused, under a new communicator).  So
 * the stub keeps the last SINKS communicators this rank freed alive inside MPI, each held by
 * an inactive persistent receive from MPI_PROC_NULL (MPICH lets a communicator go only when
 * no request names it): these sinks are probed by the drain, which discards and counts what
 * arrived there (mana_comm_sinks_take).  A restart makes a sink of every communicator it
 * makes as a ghost (comm_orphans.c): its members that had not freed it may still send.  When
 * a newer sink needs its place, the oldest is emptied and let go; a message that comes later
 * on it is lost to the drain as before.  A communicator with attributes is not kept: MPICH
 * calls their delete callbacks only when it lets the communicator go, and they must run
 * within the application's free. */
#include <stdlib.h>

#include "comm_rec.h"
#include "p2p.h"
#include "records.h"

/* Receives the message and throws it away: 1 once done. */
static int discard_one(MPI_Message msg, const MPI_Status *probed)
{
  MPI_Count bytes = 0;
  MANA_LH_CALL_NOPARK(MPI_Get_count_c, probed, MPI_BYTE, &bytes);
  void *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
  MPI_Request req = MPI_REQUEST_NULL;
  if (!buf || MANA_LH_CALL_NOPARK(MPI_Imrecv_c, buf, bytes, MPI_BYTE, &msg, &req) != MPI_SUCCESS) {
    free(buf);
    return 0; /* left in MPI: as before, a drain will wait for it */
  }
  /* Matched already: completing it needs no receive of the application, only MPI's progress,
   * so this loop does not park (a parked thread here would hold a request no record knows). */
  int flag = 0;
  MPI_Status st;
  while (MANA_LH_CALL_NOPARK(MPI_Test, &req, &flag, &st) == MPI_SUCCESS && !flag)
    ;
  if (!flag)
    return 0; /* MPI failed to progress it: the buffer may still be written, so it stays */
  free(buf);
  return 1;
}

/* Takes every message MPI holds on real, counting each one by the application's handle v, or
 * through the sink's groups (v is MPI_COMM_NULL). */
static void take_all(MPI_Comm real, MPI_Comm v)
{
  for (;;) {
    int flag = 0;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st = {0}; /* MPICH's probes leave the cancelled bit alone (drain.c) */
    if (MANA_LH_CALL_NOPARK(MPI_Improbe, MPI_ANY_SOURCE, MPI_ANY_TAG, real, &flag, &msg, &st) !=
            MPI_SUCCESS ||
        !flag || !discard_one(msg, &st))
      return;
    if (v != MPI_COMM_NULL)
      mana_count_recv(v, &st);
    else
      mana_comm_sink_count(real, &st);
  }
}

/* ---- sinks ---- */

#define SINKS 16

struct sink {
  MPI_Comm real; /* 0 (no MPICH handle): an empty place */
  MPI_Request pin;
};
static struct sink sinks[SINKS];
static unsigned sink_next; /* a ring: the oldest sink, or an empty place */
/* MPI_COMM_WORLD's group, to count by world rank (group.c's: not freed here). */
static MPI_Group world = MPI_GROUP_NULL;

/* Runs on the checkpoint thread too: lower-half calls and the stub's static memory only. */
void mana_comm_sink_count(MPI_Comm real, const MPI_Status *st)
{
  if (st->MPI_SOURCE < 0 || mana_status_cancelled(st) || world == MPI_GROUP_NULL)
    return;
  int inter = 0, w = MPI_UNDEFINED;
  MPI_Group g = MPI_GROUP_NULL;
  MANA_LH_ANY(MPI_Comm_test_inter, real, &inter);
  int rc =
      inter ? MANA_LH_ANY(MPI_Comm_remote_group, real, &g) : MANA_LH_ANY(MPI_Comm_group, real, &g);
  if (rc == MPI_SUCCESS) {
    MANA_LH_ANY(MPI_Group_translate_ranks, g, 1, &st->MPI_SOURCE, world, &w);
    MANA_LH_ANY(MPI_Group_free, &g);
  }
  if ((unsigned)w < (unsigned)mana_p2p_world_size)
    mana_counter_add(&mana_p2p_recvd[w], 1);
}

static void let_go(struct sink *k)
{
  MANA_LH_ANY(MPI_Request_free, &k->pin);
  *k = (struct sink){0, MPI_REQUEST_NULL};
}

void mana_comm_sink_keep(MPI_Comm real)
{
  /* After MPI_Finalize the sessions left run without mana's drain (init.c). */
  if (!mana_world_model ||
      (world == MPI_GROUP_NULL && (world = mana_world_group()) == MPI_GROUP_NULL))
    return;
  MPI_Request pin = MPI_REQUEST_NULL;
  if (MANA_LH_CALL_NOPARK(MPI_Recv_init, NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, real, &pin) !=
      MPI_SUCCESS)
    return;
  /* The ring changes under the stub's lock; MPI is called outside it. */
  mana_stub_lock_take();
  struct sink *k = &sinks[sink_next], oldest = *k;
  *k = (struct sink){real, pin};
  sink_next = (sink_next + 1) % SINKS;
  mana_stub_lock_give();
  if (oldest.real) {
    take_all(oldest.real, MPI_COMM_NULL);
    let_go(&oldest);
  }
}

int mana_comm_sink_at(unsigned i, MPI_Comm *real)
{
  if (i >= SINKS)
    return -1;
  *real = sinks[i].real ? sinks[i].real : MPI_COMM_NULL;
  return 0;
}

/* MPI goes on without them (a rebuild in place) or ends. */
void mana_comm_sinks_release(void)
{
  for (unsigned i = 0; i < SINKS; i++)
    if (sinks[i].real)
      let_go(&sinks[i]);
  mana_comm_sinks_forget();
}

/* A restarted rank has a new MPI, where none of the handles means anything. */
void mana_comm_sinks_forget(void)
{
  for (unsigned i = 0; i < SINKS; i++)
    sinks[i] = (struct sink){0, MPI_REQUEST_NULL};
  sink_next = 0;
  world = MPI_GROUP_NULL;
}

/* ---- the application's free ---- */

static void take_stranded(MPI_Comm v)
{
  const struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  /* Predefined, null or invalid handles and double frees are MPI's to refuse. */
  if (!s || (s->flags & MANA_SLOT_FREED) || mana_comm_freed_alive(v))
    return;
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, v);
  take_all(real, v);
  const struct comm_rec *r = s->meta;
  if (r && !r->attrs && (r->inter || r->size > 1))
    mana_comm_sink_keep(real);
}

int mana_before_Comm_free(MPI_Comm *comm)
{
  if (comm)
    take_stranded(*comm);
  return MPI_SUCCESS;
}
