/* Receiving a buffered message (p2p.h) as MPI would have delivered it.
 *
 * The drain kept the message as the bytes MPI delivered for an MPI_BYTE receive.  MPICH's
 * representation of data in a message and in a packed buffer is the same on one machine, so
 * MPI_Unpack with the receive's own datatype and count puts the data where the receive would
 * have (any datatype, non-contiguous ones included), and no more than the message holds.  The
 * status says what MPI's would: source, tag, the size in bytes (MPI_Get_count and
 * MPI_Get_elements derive the rest from it), not cancelled; MPI_ERROR only on an error. */
#include "p2p.h"

void mana_drained_status(const struct mana_drained *m, MPI_Status *st)
{
  MANA_LH_CALL_NOPARK(MPI_Status_set_elements_x, st, MPI_BYTE, m->bytes);
  MANA_LH_CALL_NOPARK(MPI_Status_set_cancelled, st, 0);
  st->MPI_SOURCE = m->source;
  st->MPI_TAG = m->tag;
  /* MPI_ERROR is left alone: single-completion calls (MPI_Recv, MPI_Mprobe, MPI_Mrecv, ...)
   * never set it (MPI 4.0, 3.2.5; MPICH's pt2pt/mprobe checks it) */
}

/* The list is read under the lock and the header copied: another thread may take the message
 * and unmap it the moment the lock is given back (MPICH's threads/pt2pt/mt_probe_isendrecv
 * crashed in a probe after a restart that had left messages buffered). */
int mana_drained_probe(MPI_Comm comm, int source, int tag, MPI_Status *st)
{
  struct mana_drained seen;
  mana_stub_lock_take();
  const struct mana_drained *m = mana_drained_match(comm, source, tag, NULL);
  if (m)
    seen = *m;
  mana_stub_lock_give();
  if (!m)
    return 0;
  if (st != MPI_STATUS_IGNORE)
    mana_drained_status(&seen, st);
  return 1;
}

int mana_drained_deliver(struct mana_drained *m, void *buf, MPI_Count count, MPI_Datatype type,
                         MPI_Comm comm, MPI_Status *st)
{
  (void)comm; /* the caller raises an error on its handler */
  return mana_drained_deliver_real(m, buf, count, MANA_REAL(DATATYPE, MPI_Datatype, type), st);
}

/* MPICH's MPI_Unpack refuses MPI_BOTTOM as its output buffer (a null pointer), which a
 * receive into absolute addresses uses (MPICH's datatype/sendrecvt4): the data is unpacked
 * at address 1 through a type that places `count` elements of `type` one byte lower. */
static int unpack_at_bottom(const struct mana_drained *m, MPI_Count take, MPI_Count *position,
                            MPI_Count count, MPI_Datatype real_type, MPI_Comm real_comm)
{
  MPI_Count disp = -1;
  MPI_Datatype shifted;
  int rc = MANA_LH_CALL_NOPARK(MPI_Type_create_struct_c, 1, &count, &disp, &real_type, &shifted);
  if (rc != MPI_SUCCESS)
    return rc;
  rc = MANA_LH_CALL_NOPARK(MPI_Type_commit, &shifted);
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Unpack_c, m->data, take, position, (void *)1, 1, shifted,
                             real_comm);
  MANA_LH_CALL_NOPARK(MPI_Type_free, &shifted);
  return rc;
}

int mana_drained_deliver_real(struct mana_drained *m, void *buf, MPI_Count count,
                              MPI_Datatype real_type, MPI_Status *st)
{
  /* The bytes are this process's own, so MPI_Unpack needs no particular communicator; the
   * message's own may be freed, its real handle no longer valid (comm_freed.c). */
  MPI_Comm real_comm = MPI_COMM_SELF;
  MPI_Count size = 0, fits, position = 0;
  int rc = MANA_LH_CALL_NOPARK(MPI_Type_size_c, real_type, &size);
  if (rc == MPI_SUCCESS) {
    fits = size * count;
    MPI_Count take = m->bytes < fits ? m->bytes : fits;
    if (take > 0 && buf == MPI_BOTTOM)
      rc = unpack_at_bottom(m, take, &position, count, real_type, real_comm);
    else if (take > 0)
      rc = MANA_LH_CALL_NOPARK(MPI_Unpack_c, m->data, take, &position, buf, count, real_type,
                               real_comm);
    if (rc == MPI_SUCCESS && m->bytes > fits)
      rc = MPI_ERR_TRUNCATE; /* as MPI: what fits is delivered, the rest is lost */
  }
  mana_drained_status(m, st);
  if (m->bytes > position && rc != MPI_SUCCESS)
    MANA_LH_CALL_NOPARK(MPI_Status_set_elements_x, st, MPI_BYTE, position);
  if (rc != MPI_SUCCESS)
    st->MPI_ERROR = rc; /* for the request's stand-in, which reports it when completed */
  mana_drained_free(m);
  return rc;
}

int mana_drained_recv(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                      MPI_Comm comm, MPI_Status *status, int *rc)
{
  struct mana_drained *m = mana_drained_take(comm, source, tag);
  MPI_Status local;
  if (!m)
    return 0;
  *rc = mana_drained_deliver(m, buf, count, type, comm,
                             status == MPI_STATUS_IGNORE ? &local : status);
  if (*rc != MPI_SUCCESS) /* the communicator's handler decides, as for MPI's own errors */
    MANA_LH_CALL_NOPARK(MPI_Comm_call_errhandler, MANA_REAL(COMM, MPI_Comm, comm), *rc);
  return 1;
}
