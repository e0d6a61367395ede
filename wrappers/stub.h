/* What every file of the stub MPI library (the upper half's libmpich.so.12) shares: crossing
 * into the lower half, and the handle translation macros the generated wrappers use. */
#ifndef MANA_STUB_H
#define MANA_STUB_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

#include "handles.h"
#include "lh_table.h"
#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/mpi_threads.h"
#include "stub_lock.h"

#define MANA_STACK_HANDLES 32

/* This thread's MPI slot (mpi_thread.c), claimed at its first MPI call.  Read through the
 * upper half's thread pointer: code that may run on a lower-half thread (the checkpoint
 * thread) must not use the crossing macros below (see MANA_LH_ANY in p2p.h). */
extern __thread struct mana_mpi_thread *mana_self_thread __attribute__((tls_model("initial-exec")));
struct mana_mpi_thread *mana_thread_attach(void);
void mana_thread_attach_main(void);

/* Calls the real MPI function `fn` in the lower half: switch FS to this thread's lower-half
 * thread pointer (by loading its selector where the lower half gave one), call through the
 * lower half's table, switch back.  The slot counts the
 * crossing, so the checkpoint machinery knows the thread is inside MPI.
 * The arguments are evaluated after the switch: they must not call into the upper half's libc
 * (atoi, strlen, malloc ... use its thread-local state); compute such values first. */
#define MANA_LH_ENTER()                                                    \
  struct mana_boundary *b_ = MANA_BOUNDARY;                                \
  struct mana_mpi_thread *t_ = mana_self_thread;                           \
  if (__builtin_expect(!t_, 0))                                            \
    t_ = mana_thread_attach();                                             \
  int fsgs_ = b_->have_fsgsbase;                                           \
  uint64_t ufs_ = t_->upper_fs;                                            \
  uint32_t sel_ = t_->lower_sel;                                           \
  t_->in_lower++;                                                          \
  if (sel_)                                                                \
    mana_load_fs_selector(sel_);                                           \
  else                                                                     \
    mana_set_fs(fsgs_, t_->lower_fs);                                      \
  if (__builtin_expect(++b_->mpi_calls == b_->test_checkpoint_at_call, 0)) \
  b_->lh->svc.test_checkpoint_now()
#define MANA_LH_LEAVE()                        \
  mana_set_fs(fsgs_, ufs_);                    \
  t_->in_lower--;                              \
  if (__builtin_expect(b_->park_requested, 0)) \
  mana_park_point()
#define MANA_LH_CALL(fn, ...)                                         \
  ({                                                                  \
    MANA_LH_ENTER();                                                  \
    __typeof__(b_->lh->fn(__VA_ARGS__)) r_ = b_->lh->fn(__VA_ARGS__); \
    MANA_LH_LEAVE();                                                  \
    r_;                                                               \
  })
#define MANA_LH_CALL_VOID(fn, ...) \
  do {                             \
    MANA_LH_ENTER();               \
    b_->lh->fn(__VA_ARGS__);       \
    MANA_LH_LEAVE();               \
  } while (0)
#define MANA_LH_SVC(fn, ...) MANA_LH_CALL(svc.fn, __VA_ARGS__)
#define MANA_LH_SVC_VOID(fn, ...) MANA_LH_CALL_VOID(svc.fn, __VA_ARGS__)

/* The same without parking on the way out, for calls that make, free or complete objects: the
 * wrapper first brings its handle tables and records in line with what MPI did (a new virtual
 * handle, a retired one, the record hooks), and only then lets the thread park
 * (MANA_PARK_CHECK).  A checkpoint thus never finds a real object without its slot, nor a
 * slot whose real object MPI has already freed.  Same cost as the parking forms. */
#define MANA_LH_LEAVE_NOPARK() \
  mana_set_fs(fsgs_, ufs_);    \
  t_->in_lower--
#define MANA_LH_CALL_NOPARK(fn, ...)                                  \
  ({                                                                  \
    MANA_LH_ENTER();                                                  \
    __typeof__(b_->lh->fn(__VA_ARGS__)) r_ = b_->lh->fn(__VA_ARGS__); \
    MANA_LH_LEAVE_NOPARK();                                           \
    r_;                                                               \
  })
#define MANA_LH_CALL_VOID_NOPARK(fn, ...) \
  do {                                    \
    MANA_LH_ENTER();                      \
    b_->lh->fn(__VA_ARGS__);              \
    MANA_LH_LEAVE_NOPARK();               \
  } while (0)
#define MANA_LH_SVC_NOPARK(fn, ...) MANA_LH_CALL_NOPARK(svc.fn, __VA_ARGS__)
#define MANA_LH_SVC_VOID_NOPARK(fn, ...) MANA_LH_CALL_VOID_NOPARK(svc.fn, __VA_ARGS__)

/* MANA_LH_CALL_NOPARK, with the stub's bookkeeping of the common case done before the switch
 * back: once the call returned MPI_SUCCESS in a program that is not MPI_THREAD_MULTIPLE,
 * `settled` is assigned `settle`, nonzero if it did the work; else the caller does it after.
 * Why: on AMD EPYC VMs writing FS (either way, mana_set_fs or a selector) waits like mfence
 * until the stores MPI just made, a message into the peer's shared-memory queue for instance,
 * have reached the other core; work placed before the switch runs during that wait instead
 * of after it (benchmarks/README.md, "The switch back waits for MPI's stores").
 * `settle` runs on the lower half's thread pointer: it must not read the upper half's TLS
 * (mana_self_thread is t_), call the upper half's libc nor take the stub lock; it only
 * touches the stub's tables and the application's handle, through pointers and globals. */
#define MANA_LH_CALL_SETTLE(settled, settle, fn, ...)                       \
  ({                                                                        \
    MANA_LH_ENTER();                                                        \
    __typeof__(b_->lh->fn(__VA_ARGS__)) r_ = b_->lh->fn(__VA_ARGS__);       \
    if (r_ == MPI_SUCCESS && __builtin_expect(!mana_threads_concurrent, 1)) \
      (settled) = (settle);                                                 \
    MANA_LH_LEAVE_NOPARK();                                                 \
    r_;                                                                     \
  })
/* Between MPI_Init and MPI_Finalize (init.c), the application's or the one mana makes for a
 * program that uses sessions alone.  Only then is MPI_COMM_WORLD usable and can a checkpoint
 * ask threads to park. */
extern int mana_world_model;
/* Initializes the world model for mana at `level` unless it is up or was finalized (the first
 * MPI_Session_init of a program that did not call MPI_Init; init.c).  Returns MPI's code. */
int mana_world_for_sessions(int level);
/* Between the application's own MPI_Init and its MPI_Finalize (init.c): MPI_COMM_WORLD and
 * MPI_COMM_SELF are the application's to use. */
extern int mana_app_in_mpi;

/* The wait of a blocking call: the lower half's polling loop (svc.<fn>), or while nothing can
 * park MPI's own blocking call (wait_direct.c, mana_direct_<fn>). */
#define MANA_UNTIL(fn, ...)                                             \
  (__builtin_expect(mana_world_model, 1) ? MANA_LH_SVC(fn, __VA_ARGS__) \
                                         : mana_direct_##fn(__VA_ARGS__))
#define MANA_UNTIL_NOPARK(fn, ...)                                             \
  (__builtin_expect(mana_world_model, 1) ? MANA_LH_SVC_NOPARK(fn, __VA_ARGS__) \
                                         : mana_direct_##fn(__VA_ARGS__))
int mana_direct_test_until(MPI_Request *req, int *flag, MPI_Status *status);
int mana_direct_send_until(enum mana_send_mode mode, const void *buf, int count, MPI_Datatype type,
                           int dest, int tag, MPI_Comm comm, MPI_Request *req, int *flag);
int mana_direct_recv_until(void *buf, int count, MPI_Datatype type, int source, int tag,
                           MPI_Comm comm, MPI_Request *req, int *flag, MPI_Status *status);
int mana_direct_waitall_until(int n, MPI_Request reqs[], unsigned char done[], int *flag,
                              MPI_Status statuses[]);
int mana_direct_testany_until(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status);
int mana_direct_testsome_until(int n, MPI_Request reqs[], int *outcount, int indices[],
                               MPI_Status statuses[]);
int mana_direct_iprobe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int mana_direct_improbe_until(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                              MPI_Status *status);

#define MANA_PARK_CHECK()                                   \
  do {                                                      \
    if (__builtin_expect(MANA_BOUNDARY->park_requested, 0)) \
      mana_park_point();                                    \
  } while (0)

/* Real handles MPICH hands out for created objects have bits 31-30 = 10 or 11; anything else is
 * a predefined or null handle, valid unchanged in every process.  The pair types
 * (MPI_FLOAT_INT ...) are the exception: predefined, with the bits of created ones. */
static inline int mana_real_is_created(uint32_t real)
{
  return (real & 0x80000000u) != 0 && !mana_handle_is_pair_type(real);
}

/* A new request, inline while the table has a free slot: every non-blocking call makes one,
 * and mana_handle_new's call, generic table and growth path cost it a third of its time. */
static inline uint32_t mana_new_request(uint32_t real)
{
  if (!mana_real_is_created(real))
    return real;
  mana_stub_lock_take();
  uint32_t index = mana_slot_take(&mana_tables[MANA_KIND_REQUEST], real);
  mana_stub_lock_give();
  return __builtin_expect(index != UINT32_MAX, 1) ? mana_handle_make(MANA_KIND_REQUEST, index)
                                                  : mana_handle_new(MANA_KIND_REQUEST, real);
}

/* The request of a call that succeeded, made and marked with `flags` into *out while the
 * thread is still on the lower half's thread pointer (MANA_LH_CALL_SETTLE): 1 if done, 0 when
 * the caller must use MANA_NEW after the switch (a predefined request, a full table). */
static inline __attribute__((always_inline)) int
mana_new_request_lower(uint32_t real, MPI_Request *out, uint32_t flags)
{
  if (!mana_real_is_created(real))
    return 0;
  struct mana_table *t = &mana_tables[MANA_KIND_REQUEST];
  uint32_t index = mana_slot_take(t, real);
  if (__builtin_expect(index == UINT32_MAX, 0))
    return 0;
  mana_slot_at(t, index)->flags |= flags;
  *out = (MPI_Request)mana_handle_make(MANA_KIND_REQUEST, index);
  return 1;
}

static inline uint32_t mana_new32(enum mana_kind kind, uint32_t real)
{
  if (kind == MANA_KIND_REQUEST) /* a constant at every call site (MANA_NEW) */
    return mana_new_request(real);
  return mana_real_is_created(real) ? mana_handle_new(kind, real) : real;
}

/* A request slot whose retirement is only putting it back on the free list: nothing to release
 * and no kind waits for requests to go (the common case of every completed request). */
static inline int mana_request_slot_plain(const struct mana_slot *s)
{
  return !s->meta && !mana_request_retiring && !mana_slot_retain[MANA_KIND_REQUEST];
}

/* mana_handle_retire_slot for a request, inline in the plain case. */
static inline void mana_retire_request_slot(struct mana_slot *s, uint32_t virt)
{
  mana_stub_lock_take();
  if (__builtin_expect(mana_request_slot_plain(s), 1))
    mana_slot_put(&mana_tables[MANA_KIND_REQUEST], s, virt & MANA_HANDLE_INDEX_MASK);
  else
    mana_handle_retire_slot(MANA_KIND_REQUEST, s, virt);
  mana_stub_lock_give();
}

/* An object MPI hands out again (mpi_api.txt, `shared`; shared_handles.c): the handle the
 * application already holds for `real`, or a new one (*made = 1).  `origin` names the call and
 * the object it asked (MANA_SHARE_ORIGIN), 0 if none.  The caller holds the stub lock.
 * mana_unshare: 1 if freeing `virt` only counts it down. */
uint32_t mana_share32(enum mana_kind kind, uint32_t real, uint64_t origin, int *made);
int mana_unshare(enum mana_kind kind, uint32_t virt);
#define MANA_SHARE_ORIGIN(call, source) ((uint64_t)(call) << 32 | (uint32_t)(uintptr_t)(source))
/* After a restart rebuilt the groups: those got from an object stand in for its group. */
void mana_group_standins_mark(void);

static inline void *mana_new_ptr(enum mana_kind kind, void *real)
{
  return real ? (void *)(uintptr_t)mana_handle_new(kind, (uint64_t)(uintptr_t)real) : NULL;
}

/* Translation.  MPI_File is a pointer in MPICH (ROMIO); the generator picks the _PTR forms for
 * it and the 32-bit forms for every other handle type. */
#define MANA_REAL(K, T, v) ((T)(uint32_t)mana_handle_real(MANA_KIND_##K, (uint32_t)(v)))
#define MANA_NEW(K, T, r) ((T)mana_new32(MANA_KIND_##K, (uint32_t)(r)))
#define MANA_RETIRE(K, T, v) mana_handle_retire(MANA_KIND_##K, (uint32_t)(v))
#define MANA_UPDATE(K, T, v, r) mana_handle_update(MANA_KIND_##K, (uint32_t)(v), (uint32_t)(r))
#define MANA_REAL_PTR(K, T, v) \
  ((T)(uintptr_t)mana_handle_real(MANA_KIND_##K, (uint32_t)(uintptr_t)(v)))
#define MANA_NEW_PTR(K, T, r) ((T)mana_new_ptr(MANA_KIND_##K, (void *)(r)))
#define MANA_RETIRE_PTR(K, T, v) mana_handle_retire(MANA_KIND_##K, (uint32_t)(uintptr_t)(v))
#define MANA_UPDATE_PTR(K, T, v, r) \
  mana_handle_update(MANA_KIND_##K, (uint32_t)(uintptr_t)(v), (uint64_t)(uintptr_t)(r))

/* After a failed call that was to make an object: the application sees what MPI left in the
 * handle, its null handle for instance (MPI_Comm_dup must give MPI_COMM_NULL when a copy
 * callback fails), unless that is a real object.  `r` started as the application's value. */
#define MANA_FAILED_OUT(app, r)                        \
  do {                                                 \
    if ((app) && !mana_real_is_created((uint32_t)(r))) \
      *(app) = (r);                                    \
  } while (0)
#define MANA_FAILED_OUT_PTR(app, r) \
  do {                              \
    if ((app) && (r) == NULL)       \
      *(app) = (r);                 \
  } while (0)

#define MANA_DECLARE_REAL_ARRAY(kind_lc, T) \
  T *mana_real_array_##kind_lc(const T *virt, size_t n, T *stack_buf);
MANA_DECLARE_REAL_ARRAY(datatype, MPI_Datatype)
MANA_DECLARE_REAL_ARRAY(request, MPI_Request)
MANA_DECLARE_REAL_ARRAY(info, MPI_Info)
MANA_DECLARE_REAL_ARRAY(comm, MPI_Comm)

/* Lengths of the handle arrays of the alltoallw family. */
size_t mana_comm_size(MPI_Comm comm);
size_t mana_local_size(MPI_Comm comm);
size_t mana_neighbor_in(MPI_Comm comm);
size_t mana_neighbor_out(MPI_Comm comm);

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY of the stub, translated to the real library's. */
int *mana_weights(const int *weights);
MPI_T_pvar_handle mana_pvar_handle(MPI_T_pvar_handle handle);
/* The real session behind the stub's record (mpi_t.c). */
MPI_T_pvar_session mana_pvar_session(MPI_T_pvar_session session);

/* Error handlers of communicators, as far as the blocking wrappers need them. */
int mana_comm_errors_fatal(MPI_Comm comm);
void mana_comm_inherit(MPI_Comm child, MPI_Comm parent);
void mana_comm_errors_from(MPI_Comm comm, MPI_Errhandler real_errhandler);
int mana_wait_real_on(MPI_Comm comm, MPI_Request *real, MPI_Status *status);
/* For a communicator whose errors must reach its own handler: around completion calls, make
 * MPI_COMM_WORLD return errors (on=1), then restore it and hand `rc` to the handler (on=0). */
int mana_comm_errors_need_rerouting(MPI_Comm comm);
int mana_reroute_errors(MPI_Comm comm, int on, int rc);
/* After a restart: MPI_COMM_WORLD returns errors again for the threads that waited rerouted. */
void mana_reroute_errors_after_restart(void);

/* Where a blocking wrapper lets the checkpoint machinery park this thread. */
/* Set while the stub's restart hook runs (restart_hook.c): the objects are half rebuilt and the
 * application's other threads wait for the hook, so no thread parks before it is done. */
extern volatile int mana_in_restart_hook;
void mana_park_point(void);

/* Completes the real request `*real` the way MPI_Wait would, parking when asked. */
int mana_wait_real(MPI_Request *real, MPI_Status *status);

/* Callbacks from the real MPI into application code: switch to the application's thread
 * pointer for the duration of the call. */
uint64_t mana_callback_enter(void);
void mana_callback_leave(uint64_t saved_fs);

/* The application's signal handlers, run on its own thread pointer (signal_dispatch.c):
 * registered with the lower half once, by the stub's constructor. */
void mana_signal_dispatch_register(void);

/* The collective clock (collective_clock.c): around every collective call.  constructor: a
 * blocking communicator constructor; leave's kind adds 2 for a non-blocking one, whose new
 * communicator `child` joins the clock as it is recorded. */
void mana_cc_enter(MPI_Comm comm, int constructor);
void mana_cc_enter_file(MPI_File fh);
void mana_cc_enter_id(uint64_t id, int constructor);
/* Around the real MPI_Init: MPI_COMM_WORLD and MPI_COMM_SELF join the clock. */
void mana_cc_init_enter(void);
void mana_cc_init_leave(int initialized);
void mana_cc_enter_win(MPI_Win win);
/* The displacement MPI gets for an RMA operation (window_shm.c: shared windows). */
MPI_Aint mana_win_target_disp(MPI_Win win, int target_rank, MPI_Aint target_disp);
/* Around an MPI call that may wait for another rank's program and cannot be left to park
 * (MPICH's MPI_Win_lock, MPI_Win_unlock, MPI_Buffer_detach): entered through the clock on
 * MPI_COMM_SELF, so that during a checkpoint a rank whose targets are met waits before it,
 * parkable, and never done while inside it (docs/checkpoint-protocol.md 3.3). */
void mana_cc_peer_gate_enter(void);
void mana_cc_peer_gate_leave(void);
/* What a call the clock counted was, for mana_cc_leave. */
enum mana_cc_call {
  MANA_CC_COLLECTIVE,     /* no new communicator */
  MANA_CC_CONSTRUCTOR,    /* a blocking constructor: child is the new communicator */
  MANA_CC_NB_CONSTRUCTOR, /* a non-blocking one (MPI_Comm_idup): child is not usable yet */
};
void mana_cc_leave_made(enum mana_cc_call call, MPI_Comm child);
/* The same with the new group's clock id (0: none), for a group that is not a communicator. */
void mana_cc_leave_made_id(enum mana_cc_call call, uint64_t id);
/* A group no member will count on again leaves the clock's tables, unless a checkpoint is
 * pending (collective_clock.c; a freed persistent collective request, pcoll.c). */
void mana_cc_forget_id(uint64_t id);
/* Before mana_cc_leave of a collective that returned rc != MPI_SUCCESS: one MPI refused
 * before starting it (an argument error) is taken off the clock. */
void mana_cc_failed(int rc);
/* Inline: a collective that made no communicator only closes its window, and every
 * collective wrapper pays for the call. */
static inline void mana_cc_leave(enum mana_cc_call call, MPI_Comm child)
{
  if (call != MANA_CC_COLLECTIVE) {
    mana_cc_leave_made(call, child);
    return;
  }
  struct mana_mpi_thread *t = mana_self_thread;
  if (t)
    t->cc_window = 0;
}
void mana_cc_register(void);
void mana_cc_after_restart(void);

/* Entry checks shared by the hand-written wrappers. */
void mana_stub_init_tables(void);

#endif
