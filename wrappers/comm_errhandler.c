/* Which communicators abort on error.  MPICH 4.0.2 raises errors found while completing a
 * request (MPI_Test, MPI_Wait) on MPI_COMM_WORLD's handler, while the blocking calls raise them
 * on their own communicator's handler.  mana's blocking calls complete requests, so for a
 * communicator whose handler does not abort they complete with MPI_COMM_WORLD set to return
 * errors, then hand the error to the communicator's own handler, as the native call would. */
#include "records.h"
#include "stub_hooks.h"

static int world_returns, self_returns;

static int *predefined_flag(MPI_Comm comm)
{
  return comm == MPI_COMM_WORLD ? &world_returns : comm == MPI_COMM_SELF ? &self_returns : NULL;
}

static void set_returns(MPI_Comm comm, int returns)
{
  int *flag = predefined_flag(comm);
  struct mana_slot *s = flag ? NULL : mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  if (flag)
    *flag = returns;
  else if (s && returns)
    s->flags |= MANA_SLOT_ERRORS_RETURN;
  else if (s)
    s->flags &= ~MANA_SLOT_ERRORS_RETURN;
}

int mana_comm_errors_fatal(MPI_Comm comm)
{
  int *flag = predefined_flag(comm);
  if (flag)
    return !*flag;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_COMM, (uint32_t)comm);
  return !s || !(s->flags & MANA_SLOT_ERRORS_RETURN);
}

/* A new communicator's handler as MPI gave it (a constructor may name one:
 * MPI_Comm_create_from_group). */
void mana_comm_errors_from(MPI_Comm comm, MPI_Errhandler real_errhandler)
{
  set_returns(comm, real_errhandler != MPI_ERRORS_ARE_FATAL && real_errhandler != MPI_ERRORS_ABORT);
}

void mana_comm_inherit(MPI_Comm child, MPI_Comm parent)
{
  if (child != MPI_COMM_NULL)
    set_returns(child, !mana_comm_errors_fatal(parent));
}

static int set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler, int legacy)
{
  MPI_Comm real = MANA_REAL(COMM, MPI_Comm, comm);
  MPI_Errhandler real_eh = MANA_REAL(ERRHANDLER, MPI_Errhandler, errhandler);
  /* Parks only once the record agrees with MPI (a restart would bring the old handler back). */
  int rc = legacy ? MANA_LH_CALL_NOPARK(MPI_Errhandler_set, real, real_eh)
                  : MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, real, real_eh);
  if (rc == MPI_SUCCESS) {
    set_returns(comm, errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_ABORT);
    mana_comm_record_errhandler(comm, errhandler);
    if (comm == MPI_COMM_WORLD)
      mana_comm_follow_world(real_eh);
  }
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
  return set_errhandler(comm, errhandler, 0);
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
  return set_errhandler(comm, errhandler, 1);
}

/* MPICH answers MPI_ERRORS_ARE_FATAL for a communicator whose handler was never set, whatever
 * MPI_COMM_WORLD's is; MPI would now answer the handler the stub gave it (comm.c). */
int mana_local_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler, int *result)
{
  if (!errhandler || !mana_app_in_mpi || !mana_comm_follows_world(comm))
    return 0;
  *errhandler = MPI_ERRORS_ARE_FATAL;
  *result = MPI_SUCCESS;
  return 1;
}

int mana_local_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler, int *result)
{
  return mana_local_Comm_get_errhandler(comm, errhandler, result);
}

/* MPICH aborts in MPI_Comm_call_errhandler on a communicator whose handler was never set,
 * whatever MPI_COMM_WORLD's is; the one the stub gave it would not. */
int mana_before_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
  (void)errorcode;
  if (mana_comm_follows_world(comm))
    MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, MANA_REAL(COMM, MPI_Comm, comm),
                        MPI_ERRORS_ARE_FATAL);
  return MPI_SUCCESS;
}

/* Without MPI_Init the waits are MPI's blocking calls (wait_direct.c), which raise errors on
 * the communicator's own handler; MPI_COMM_WORLD could not be asked anyway. */
int mana_comm_errors_need_rerouting(MPI_Comm comm)
{
  return mana_world_model && (!mana_comm_errors_fatal(comm) || world_returns);
}

/* Threads between their "on" and their "off": a wait in between may park, and a restarted
 * lower half knows nothing of the rerouting, so the restart turns it on again for each. */
static volatile int rerouting;

int mana_reroute_errors(MPI_Comm comm, int on, int rc)
{
  if (on)
    __atomic_add_fetch(&rerouting, 1, __ATOMIC_RELAXED);
  /* No parking inside the switch itself: the count must say exactly what MPI has. */
  MANA_LH_SVC_NOPARK(world_errors_return, on);
  if (!on)
    __atomic_sub_fetch(&rerouting, 1, __ATOMIC_RELAXED);
  if (!on && rc != MPI_SUCCESS)
    MANA_LH_CALL(MPI_Comm_call_errhandler, MANA_REAL(COMM, MPI_Comm, comm), rc);
  return rc;
}

static int rerouted_at_restart = -1;

void mana_reroute_errors_after_restart(void)
{
  rerouted_at_restart = rerouting;
  for (int i = 0; i < rerouting; i++)
    MANA_LH_SVC_NOPARK(world_errors_return, 1);
}

/* Test entry point (dlsym): threads that were waiting with errors rerouted when the image this
 * process restarted from was taken; -1 in a process that was not restarted. */
int mana_test_rerouted_at_restart(void);
int mana_test_rerouted_at_restart(void)
{
  return rerouted_at_restart;
}

int mana_wait_real_on(MPI_Comm comm, MPI_Request *real, MPI_Status *status)
{
  if (!mana_comm_errors_need_rerouting(comm))
    return mana_wait_real(real, status); /* an error aborts, natively too */
  mana_reroute_errors(comm, 1, MPI_SUCCESS);
  return mana_reroute_errors(comm, 0, mana_wait_real(real, status));
}
