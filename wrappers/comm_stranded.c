/* Messages left on a communicator the application frees.
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
 * request names is left alone (its messages are drained at checkpoint, comm_freed.c).  A
 * message that arrives after the free is still lost to the drain; it is sent after a free
 * the sender had no way to wait for, which the programs seen so far do not do. */
#include <stdlib.h>

#include "p2p.h"
#include "records.h"

static void discard_one(MPI_Comm v, MPI_Message msg, const MPI_Status *probed)
{
  MPI_Count bytes = 0;
  MANA_LH_CALL_NOPARK(MPI_Get_count_c, probed, MPI_BYTE, &bytes);
  void *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
  MPI_Request req = MPI_REQUEST_NULL;
  if (!buf || MANA_LH_CALL_NOPARK(MPI_Imrecv_c, buf, bytes, MPI_BYTE, &msg, &req) != MPI_SUCCESS) {
    free(buf);
    return; /* left in MPI: as before, a drain will wait for it */
  }
  /* Matched already: completing it needs no receive of the application, only MPI's progress,
   * so this loop does not park (a parked thread here would hold a request no record knows). */
  int flag = 0;
  MPI_Status st;
  while (MANA_LH_CALL_NOPARK(MPI_Test, &req, &flag, &st) == MPI_SUCCESS && !flag)
    ;
  if (!flag)
    return; /* MPI failed to progress it: the buffer may still be written, so it stays */
  free(buf);
  mana_count_recv(v, probed);
}

static void take_stranded(MPI_Comm v)
{
  const struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)v);
  /* Predefined, null or invalid handles and double frees are MPI's to refuse. */
  if (!s || (s->flags & MANA_SLOT_FREED) || mana_comm_freed_alive(v))
    return;
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, v);
  for (;;) {
    int flag = 0;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st = {0}; /* MPICH's probes leave the cancelled bit alone (drain.c) */
    if (MANA_LH_CALL_NOPARK(MPI_Improbe, MPI_ANY_SOURCE, MPI_ANY_TAG, real, &flag, &msg, &st) !=
            MPI_SUCCESS ||
        !flag)
      return;
    discard_one(v, msg, &st);
  }
}

int mana_before_Comm_free(MPI_Comm *comm)
{
  if (comm)
    take_stranded(*comm);
  return MPI_SUCCESS;
}
