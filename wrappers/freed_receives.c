/* Receives the application freed while they were still pending (MPI_Request_free on an
 * MPI_Irecv nothing has matched yet).  MPI completes such a receive later, into the
 * application's buffer, with no handle left to ask about it.  Freeing the real request at
 * once hid that message from mana: the sender counted it, no receive of the stub ever did,
 * and the drain waited for it until it gave up (MPICH's pt2pt/rqfreeb: three checkpoint
 * moments in eight).  So the stub keeps the slot of such a receive, marked MANA_SLOT_FREED:
 * the drain completes and counts it like any pending receive, a restart posts it again, and
 * it is retired once MPI has completed it. */
#include <pthread.h>

#include "handles.h"
#include "p2p.h"

/* Adopted receives not yet retired; most programs never have one, and then no call pays. */
static uint32_t adopted;
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;

int mana_freed_recv_adopt(MPI_Request *request)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)*request);
  const uint32_t not_plain = MANA_SLOT_PERSISTENT | MANA_SLOT_GREQUEST | MANA_SLOT_REQ_SEND |
                             MANA_SLOT_REQ_MPIWAIT | MANA_SLOT_FREED;
  if (!s || (s->flags & MANA_REQ_SPECIAL) != MANA_SLOT_REQ_RECV || (s->flags & not_plain) ||
      s->real == (uint64_t)(uint32_t)MPI_REQUEST_NULL)
    return 0;
  s->flags |= MANA_SLOT_FREED;
  __atomic_add_fetch(&adopted, 1, __ATOMIC_RELEASE);
  *request = MPI_REQUEST_NULL;
  return 1;
}

/* One adopted receive: 1 when it is retired.  Completed by MPI or by the drain (then its
 * stand-in is the real request, complete), it is counted and retired as a Wait would; still
 * pending at finalize, it is left to MPI_Finalize as the application asked. */
static int reap_one(struct mana_slot *s, uint32_t i, int finalizing)
{
  MPI_Request real = (MPI_Request)(uint32_t)s->real;
  MPI_Status st;
  int flag = 0;
  st.MPI_ERROR = MPI_SUCCESS;
  st.MPI_SOURCE = MPI_ANY_SOURCE; /* MPI may leave it unset on an error: then nothing counts */
  if (MANA_LH_CALL_NOPARK(MPI_Test, &real, &flag, &st) != MPI_SUCCESS)
    flag = 1; /* completed with an error nobody can see now */
  if (flag) {
    mana_req_completed(s, i, &real, &st);
  } else if (finalizing) {
    MANA_LH_CALL_NOPARK(MPI_Request_free, &real);
    mana_req_completed(s, i, &real, NULL);
    real = MPI_REQUEST_NULL;
  }
  if (real != MPI_REQUEST_NULL) {
    s->real = (uint64_t)(uint32_t)real;
    return 0;
  }
  mana_handle_retire(MANA_KIND_REQUEST, mana_handle_make(MANA_KIND_REQUEST, i));
  return 1;
}

void mana_freed_recv_reap(int finalizing)
{
  if (!__atomic_load_n(&adopted, __ATOMIC_ACQUIRE) || pthread_mutex_trylock(&reap_lock) != 0)
    return; /* none, or another thread is reaping */
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  for (uint32_t i = 0; i < t->capacity && __atomic_load_n(&adopted, __ATOMIC_ACQUIRE); i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & (MANA_SLOT_USED | MANA_SLOT_FREED)) == (MANA_SLOT_USED | MANA_SLOT_FREED) &&
        reap_one(s, i, finalizing))
      __atomic_sub_fetch(&adopted, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&reap_lock);
}
