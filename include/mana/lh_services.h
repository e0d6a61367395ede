/* Services the lower half offers the stub MPI library besides the real MPI functions.
 *
 * The *_until loops are how blocking MPI calls are made without ever blocking inside the lower
 * half: the stub starts a non-blocking operation and lets the lower half poll it, and the loop
 * gives control back to the upper half as soon as the checkpoint machinery asks the rank to
 * park (MANA_BOUNDARY->park_requested), with the operation still pending.  Each returns an MPI
 * error code; *flag (or *outcount != MPI_UNDEFINED ...) tells whether it completed. */
#ifndef MANA_LH_SERVICES_H
#define MANA_LH_SERVICES_H

#include <mpi.h>
#include <stdint.h>

/* Which of MPI's four blocking sends a send_until call stands for. */
enum mana_send_mode {
  MANA_SEND_STANDARD,
  MANA_SEND_BUFFERED,
  MANA_SEND_SYNCHRONOUS,
  MANA_SEND_READY
};

struct mana_lh_services {
  /* Initializes the real MPI at the thread level mana needs for `required`. */
  int (*init_thread)(int required, int *provided);
  int (*test_until)(MPI_Request *req, int *flag, MPI_Status *status);
  /* Completes requests one by one (MPICH 4.0.2's MPI_Testall fails on persistent collective
   * requests, its MPI_Waitall does not); done[i] marks those finished, across calls: 1
   * completed, 2 completed with an error (a truncated receive has taken its message), 3 failed
   * without completing; an error is in the request's status and the call returns
   * MPI_ERR_IN_STATUS. */
  int (*waitall_until)(int n, MPI_Request reqs[], unsigned char done[], int *flag,
                       MPI_Status statuses[]);
  int (*testany_until)(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status);
  int (*testsome_until)(int n, MPI_Request reqs[], int *outcount, int indices[],
                        MPI_Status statuses[]);
  /* A blocking send/receive in one crossing: start it, then poll as test_until does.  On
   * return *flag tells whether it completed; if not, *req is the pending request; -1 means
   * starting failed (and the error went to the communicator's handler already). */
  int (*send_until)(enum mana_send_mode mode, const void *buf, int count, MPI_Datatype type,
                    int dest, int tag, MPI_Comm comm, MPI_Request *req, int *flag);
  int (*recv_until)(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    MPI_Request *req, int *flag, MPI_Status *status);
  int (*iprobe_until)(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
  int (*improbe_until)(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                       MPI_Status *status);
  /* on=1: make MPI_COMM_WORLD return errors, remembering its handler; on=0: restore it. */
  int (*world_errors_return)(int on);
  /* Called WITHOUT switching FS, on the upper half's thread pointer (it uses no TLS): parks
   * the calling thread until the checkpoint machinery releases it. */
  void (*park_self)(int in_signal_handler);
  /* Called WITHOUT switching FS: rt_sigprocmask for mana's own code in the stub.  The seccomp
   * filter traps the system call when upper-half code makes it (mana/signals.h); this one is
   * made from lower-half code and is not trapped.  0 or -errno. */
  long (*sigprocmask_raw)(int how, const uint64_t *set, uint64_t *old);
  /* The testing aid MANA_TEST_CHECKPOINT_AT_CALL (lower-half/test_trigger.c): called on the
   * lower half's thread pointer at the crossing it names; asks the coordinator for a
   * checkpoint and returns once this rank has begun it. */
  void (*test_checkpoint_now)(void);
  /* Called WITHOUT switching FS (the caller has no lower-half thread pointer yet): a
   * lower-half thread pointer for MPI thread slot `slot` (mana/mpi_threads.h), 0 if none
   * could be made. */
  uint64_t (*mpi_thread_lower_fs)(uint32_t slot);
  /* The application calls MPI_Finalize, counted on the collective clock: a rank whose image a
   * forked writer still writes waits there for the generation's verdict (and testing aids
   * report what they counted). */
  void (*app_finalizing)(void);
  /* The application's MPI_Init returns: from here a rank can park (testing aids). */
  void (*app_initialized)(void);
  /* The application calls MPI_Abort: testing aids report what they counted now, as the
   * launcher may kill this process before its exit handlers run. */
  void (*app_aborting)(void);
  /* The application is about to finalize MPI, before the rank counts it (testing aids: a
   * rank waits there for the checkpoint it is to take part in).  1: a checkpoint needs this
   * thread parked first; the stub parks it and calls again.  0: go on. */
  int (*app_finalize_gate)(void);
  /* MPICH-internal entry points the real Fortran binding (loaded in the upper half) calls. */
  void (*keyval_set_proxy)(int keyval, void *copy_proxy, void *delete_proxy);
  void (*errhandler_set_cxx)(MPI_Errhandler errhandler, void (*dispatch)(void));
  int (*comm_get_attr)(MPI_Comm, int, void *, int *, int attr_type);
  int (*comm_set_attr)(MPI_Comm, int, void *, int attr_type);
  int (*type_get_attr)(MPI_Datatype, int, void *, int *, int attr_type);
  int (*type_set_attr)(MPI_Datatype, int, void *, int attr_type);
  int (*win_get_attr)(MPI_Win, int, void *, int *, int attr_type);
  int (*win_set_attr)(MPI_Win, int, void *, int attr_type);
  int (*err_create_code)(int, int, const char *, int, int, const char *, const char *, ...);
  int (*err_return_comm)(void *, const char *, int);
  int (*err_return_win)(void *, const char *, int);
  /* Real addresses of MPICH's sentinel objects, which the upper half holds as its own. */
  int *unweighted, *weights_empty;
  MPI_Fint *f_status_ignore, *f_statuses_ignore;
  MPI_T_pvar_handle pvar_all_handles;
};

#endif
