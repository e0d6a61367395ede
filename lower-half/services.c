/* Lower-half services for the stub (see mana/lh_services.h). */
#include "services.h"

#include "coordinator_link.h"
#include "lower_threads.h"
#include "mpi_threads.h"
#include "park.h"
#include "sigsys.h"
#include "test_trigger.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "mana/boundary.h"
#include "mana/raw_syscall.h"

static int park_requested(void)
{
  return MANA_BOUNDARY->park_requested != 0;
}

/* The application asked for `required`; mana needs at least SERIALIZED so its checkpoint thread
 * may drive MPI while the application's threads are parked.  MPICH takes no locks below
 * MPI_THREAD_MULTIPLE, so this costs nothing per call.  The application is told the level it
 * would have got natively (MPICH grants what is asked). */
static int mpi_thread_level = -1;

int mana_mpi_thread_level(void)
{
  return mpi_thread_level;
}

void mana_mpi_thread_level_restored(int level)
{
  mpi_thread_level = level;
}

static int init_thread(int required, int *provided)
{
  int level = required < MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED : required;
  int real_provided = MPI_THREAD_SINGLE;
  sigset_t app_mask;
  mana_sigsys_adopt_early_handlers(); /* before MPI_Init, the first long stay in the lower half */
  mana_lower_threads_mask_enter(&app_mask); /* for the threads MPICH and UCX make */
  int rc = PMPI_Init_thread(NULL, NULL, level, &real_provided);
  mana_lower_threads_mask_leave(&app_mask);
  *provided = real_provided < required ? real_provided : required;
  if (rc == MPI_SUCCESS) {
    mpi_thread_level = *provided;
    mana_coordinator_link_start();
  }
  return rc;
}

static int test_until(MPI_Request *req, int *flag, MPI_Status *status)
{
  int rc;
  do
    rc = PMPI_Test(req, flag, status);
  while (rc == MPI_SUCCESS && !*flag && !park_requested());
  return rc;
}

static int send_until(enum mana_send_mode mode, const void *buf, int count, MPI_Datatype type,
                      int dest, int tag, MPI_Comm comm, MPI_Request *req, int *flag)
{
  int rc;
  switch (mode) {
  case MANA_SEND_BUFFERED:
    rc = PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
    break;
  case MANA_SEND_SYNCHRONOUS:
    rc = PMPI_Issend(buf, count, type, dest, tag, comm, req);
    break;
  case MANA_SEND_READY:
    rc = PMPI_Irsend(buf, count, type, dest, tag, comm, req);
    break;
  case MANA_SEND_STANDARD:
  default:
    rc = PMPI_Isend(buf, count, type, dest, tag, comm, req);
    break;
  }
  *flag = -1; /* an error in starting was already raised on the communicator's handler */
  return rc == MPI_SUCCESS ? test_until(req, flag, MPI_STATUS_IGNORE) : rc;
}

static int recv_until(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      MPI_Request *req, int *flag, MPI_Status *status)
{
  *flag = -1; /* as in send_until */
  int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
  return rc == MPI_SUCCESS ? test_until(req, flag, status) : rc;
}

static int waitall_until(int n, MPI_Request reqs[], unsigned char done[], int *flag,
                         MPI_Status statuses[])
{
  int errors = 0;
  for (;;) {
    int pending = 0;
    for (int i = 0; i < n; i++) {
      if (done[i])
        continue;
      MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
      int complete = 0;
      int rc = PMPI_Test(&reqs[i], &complete, st);
      if (rc != MPI_SUCCESS) { /* only reached with MPI_ERRORS_RETURN */
        if (st != MPI_STATUS_IGNORE)
          st->MPI_ERROR = rc;
        errors++;
        done[i] = complete ? 2 : 3; /* MPI_Test sets the flag before the completion's error */
      } else if (complete) {
        done[i] = 1;
      } else {
        pending++;
      }
    }
    *flag = pending == 0;
    if (*flag || park_requested())
      break;
  }
  if (!errors)
    return MPI_SUCCESS;
  if (statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < n; i++)
      if (done[i] == 1)
        statuses[i].MPI_ERROR = MPI_SUCCESS;
  return MPI_ERR_IN_STATUS;
}

static int testany_until(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
  int rc;
  do
    rc = PMPI_Testany(n, reqs, index, flag, status);
  while (rc == MPI_SUCCESS && !*flag && !park_requested());
  return rc;
}

static int testsome_until(int n, MPI_Request reqs[], int *outcount, int indices[],
                          MPI_Status statuses[])
{
  int rc;
  do
    rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
  while (rc == MPI_SUCCESS && *outcount == 0 && !park_requested());
  return rc;
}

/* The application's MPI_Finalize, once counted on the collective clock (a checkpoint that
 * began before parked this thread at that count, and none can involve this rank after it): a
 * rank whose forked writer still writes waits for that generation's verdict, since finalizing
 * leads to the process's exit and the coordinator aborts a generation whose rank disconnects.
 * The writer needs nothing from MPI or from this thread, and no other checkpoint begins before
 * the verdict.  Then the testing aids report what they counted. */
static void app_finalizing(void)
{
  mana_coordinator_link_wait_verdict();
  mana_test_trigger_finalizing();
}

static int iprobe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  int rc;
  do
    rc = PMPI_Iprobe(source, tag, comm, flag, status);
  while (rc == MPI_SUCCESS && !*flag && !park_requested());
  return rc;
}

static int improbe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                         MPI_Status *status)
{
  int rc;
  do
    rc = PMPI_Improbe(source, tag, comm, flag, message, status);
  while (rc == MPI_SUCCESS && !*flag && !park_requested());
  return rc;
}

/* Several threads may wait with errors rerouted at once (MPI_THREAD_MULTIPLE): the first one
 * in saves MPI_COMM_WORLD's handler and sets MPI_ERRORS_RETURN, the last one out puts it back.
 * An "off" with nothing "on" is ignored: a fresh lower half after a restart has no saved
 * handler (the stub turns rerouting on again for each thread that was waiting rerouted when
 * the checkpoint was taken, after the restart has given MPI_COMM_WORLD its handler back). */
static MPI_Errhandler saved_world_errhandler = MPI_ERRHANDLER_NULL;
static unsigned world_errors_depth;
static pthread_mutex_t world_errors_lock = PTHREAD_MUTEX_INITIALIZER;

static int world_errors_return(int on)
{
  int rc = MPI_SUCCESS;
  pthread_mutex_lock(&world_errors_lock);
  if (on && world_errors_depth++ == 0) {
    rc = PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved_world_errhandler);
    if (rc == MPI_SUCCESS)
      rc = PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else if (!on && world_errors_depth > 0 && --world_errors_depth == 0 &&
             saved_world_errhandler != MPI_ERRHANDLER_NULL) {
    rc = PMPI_Comm_set_errhandler(MPI_COMM_WORLD, saved_world_errhandler);
    PMPI_Errhandler_free(&saved_world_errhandler);
  }
  pthread_mutex_unlock(&world_errors_lock);
  return rc;
}

/* Runs on the upper half's thread pointer (no TLS, no errno): the system call is made here,
 * in lower-half code, where the seccomp filter does not trap it. */
static long sigprocmask_raw(int how, const uint64_t *set, uint64_t *old)
{
  return mana_raw_syscall4(SYS_rt_sigprocmask, how, (long)set, (long)old, 8);
}

/* MPICH-internal, exported for its Fortran binding; not in mpi.h. */
typedef int mpir_attr_type;
void MPII_Keyval_set_proxy(int keyval, void *copy_proxy, void *delete_proxy);
void MPII_Errhandler_set_cxx(MPI_Errhandler errhandler, void (*dispatch)(void));
int MPII_Comm_get_attr(MPI_Comm, int, void *, int *, mpir_attr_type);
int MPII_Comm_set_attr(MPI_Comm, int, void *, mpir_attr_type);
int MPII_Type_get_attr(MPI_Datatype, int, void *, int *, mpir_attr_type);
int MPII_Type_set_attr(MPI_Datatype, int, void *, mpir_attr_type);
int MPII_Win_get_attr(MPI_Win, int, void *, int *, mpir_attr_type);
int MPII_Win_set_attr(MPI_Win, int, void *, mpir_attr_type);
int MPIR_Err_create_code(int, int, const char *, int, int, const char *, const char *, ...);
int MPIR_Err_return_comm(void *, const char *, int);
int MPIR_Err_return_win(void *, const char *, int);

void mana_lh_services_fill(struct mana_lh_services *s)
{
  s->init_thread = init_thread;
  s->test_until = test_until;
  s->waitall_until = waitall_until;
  s->testany_until = testany_until;
  s->testsome_until = testsome_until;
  s->send_until = send_until;
  s->recv_until = recv_until;
  s->iprobe_until = iprobe_until;
  s->improbe_until = improbe_until;
  s->world_errors_return = world_errors_return;
  s->park_self = mana_park_self;
  s->sigprocmask_raw = sigprocmask_raw;
  s->test_checkpoint_now = mana_test_checkpoint_now;
  s->mpi_thread_lower_fs = mana_mpi_thread_lower_fs;
  s->app_finalizing = app_finalizing;
  s->app_aborting = mana_test_trigger_finalizing;
  s->app_initialized = mana_test_trigger_initialized;
  s->app_finalize_gate = mana_test_trigger_finalize_gate;
  s->keyval_set_proxy = MPII_Keyval_set_proxy;
  s->errhandler_set_cxx = MPII_Errhandler_set_cxx;
  s->comm_get_attr = MPII_Comm_get_attr;
  s->comm_set_attr = MPII_Comm_set_attr;
  s->type_get_attr = MPII_Type_get_attr;
  s->type_set_attr = MPII_Type_set_attr;
  s->win_get_attr = MPII_Win_get_attr;
  s->win_set_attr = MPII_Win_set_attr;
  s->err_create_code = MPIR_Err_create_code;
  s->err_return_comm = MPIR_Err_return_comm;
  s->err_return_win = MPIR_Err_return_win;
  s->pvar_all_handles = MPI_T_PVAR_ALL_HANDLES;
  s->unweighted = MPI_UNWEIGHTED;
  s->weights_empty = MPI_WEIGHTS_EMPTY;
  s->f_status_ignore = MPI_F_STATUS_IGNORE;
  s->f_statuses_ignore = MPI_F_STATUSES_IGNORE;
}
