/* The contract between the two halves of a mana process.
 *
 * The lower half (mana_lh) writes one `struct mana_boundary` at the very start of the upper-half
 * window before it starts the upper half; the stub MPI library finds it at that fixed address,
 * so no symbol lookup, environment variable or relocation is needed to cross over.  The page is
 * inside the window and therefore part of every checkpoint image, but a restarted lower half
 * rewrites every field that points into the lower half before the upper half runs again.
 *
 * Only fixed-size fields here: both halves are built from this header at once, but a restart
 * may map an image written by an earlier build, which MANA_BOUNDARY_VERSION detects. */
#ifndef MANA_BOUNDARY_H
#define MANA_BOUNDARY_H

#include <stddef.h>
#include <stdint.h>

#include "mana/app_clocks.h"
#include "mana/cc_status.h"

#define MANA_WINDOW_BASE 0x600000000000UL
#define MANA_WINDOW_SIZE 0x010000000000UL /* 1 TiB of address space, reserved not committed */
#define MANA_WINDOW_END (MANA_WINDOW_BASE + MANA_WINDOW_SIZE)
/* The start of the window that the allocator never hands out: this page, the thread records
 * (mana/park.h) and room for more fixed data. */
#define MANA_CONTROL_AREA_SIZE (2UL << 20)

#define MANA_BOUNDARY_MAGIC 0x6d616e61626e6479UL /* "manabndy" */
#define MANA_BOUNDARY_VERSION 13

/* The signal that parks threads: a real-time signal near the top of the range, where neither
 * glibc (which reserves the first two) nor typical applications look.  The stub blocks it
 * while it holds the collective clock's lock. */
#define MANA_PARK_SIGNAL 62

struct mana_lh_table; /* generated: one pointer per real MPI function plus lower-half services */

/* The kernel's struct sigaction (not glibc's): what rt_sigaction takes and gives back. */
struct mana_sigaction {
  uint64_t handler, flags, restorer, mask;
};

/* Extra ranges of upper-half memory outside the window (a non-PIE application's segments). */
#define MANA_MAX_EXTRA_RANGES 8
struct mana_range {
  uint64_t start, end;
};

struct mana_boundary {
  uint64_t magic;
  uint32_t version;
  uint32_t have_fsgsbase; /* 0: switch FS with arch_prctl */

  /* The lower half's main thread pointer: the application's main thread crosses with it
   * (every MPI-calling thread has its own: mana/mpi_threads.h). */
  uint64_t lower_fs;

  const struct mana_lh_table *lh;

  /* Set by the checkpoint machinery; blocking wrappers poll it between progress calls. */
  volatile uint32_t park_requested;
  uint32_t restarted; /* number of restarts this upper half has been through */

  uint32_t n_extra_ranges;
  struct mana_range extra_ranges[MANA_MAX_EXTRA_RANGES];

  /* Set by a restarting lower half: what a resumed thread does before it goes on (the main
   * thread runs the stub's restart hook, the others wait for it).  Argument: its record. */
  void (*restart_resume)(void *thread_record);
  /* Registered by the stub: rebuilds the MPI objects after a restart, on the main thread. */
  void (*stub_restart_hook)(void);

  /* Where the upper half was loaded, for tools and the checkpoint writer. */
  uint64_t app_base, ldso_base, stack_low, stack_high;

  /* Registered by the stub: 1 if every MPI object it holds can be rebuilt at restart, else 0
   * with a one-line reason in `reason` (a partitioned request, an MPI_T session, a
   * process outside MPI_COMM_WORLD, ...).  Called after the drain, while the application is
   * parked, from any thread: it reads the
   * stub's records only, makes no MPI call and uses no thread-local state. */
  int (*stub_can_checkpoint)(char *reason, size_t len);

  /* Registered by the stub: its side of the safe-point protocol, driven by the lower half's
   * checkpoint thread. */
  const struct mana_stub_cc *stub_cc;

  /* Registered by the stub: drains the network with every application thread parked
   * (docs/checkpoint-protocol.md section 2).  Runs on the checkpoint thread (lower half's
   * thread pointer, no upper-half TLS), calls MPI through the lower half's table and never
   * parks.  0, or -1 with a one-line reason; either way the job can go on afterwards. */
  int (*stub_drain)(char *reason, size_t len);

  /* The stub's code.  A thread interrupted there is not parked by the signal handler but at
   * its next return from the lower half: a wrapper may already hold real handles in locals,
   * which a restart would make stale. */
  uint64_t stub_text_lo, stub_text_hi;

  /* Registered by the stub: cancels the receives the application still has posted, so that a
   * process ending right after a checkpoint (--kill) finalizes MPI with nothing pending.  Same
   * rules as stub_drain. */
  void (*stub_cancel_receives)(void);

  /* Crossings into the lower half from the upper half so far (MANA_LH_ENTER), and the one at
   * which the testing aid MANA_TEST_CHECKPOINT_AT_CALL asks the coordinator for a checkpoint
   * (0: never).  Kept in the image: a restarted rank goes on counting and never fires twice. */
  uint64_t mpi_calls;
  uint64_t test_checkpoint_at_call;

  /* Application threads inside MPI's own blocking wait for a request no polling may complete
   * (ROMIO's non-blocking collective file operations, mpi_api.txt `mpiwait`): such a thread
   * cannot park until MPI returns.  A thread counts itself in, then enters only if no park
   * is requested (both sequentially consistent, so either it sees the request and parks
   * instead, or parking sees it here and says why it waits). */
  volatile uint32_t in_mpi_own_wait;

  /* Registered by the stub: completes, with MPI's own wait, the requests of that kind this
   * rank holds, once its threads are parked and before it reports SUSPENDED, so that a peer's
   * thread waiting for the same operation can return and park.  Same rules as stub_drain. */
  int (*stub_settle_own_waits)(char *reason, size_t len);

  /* The application's clocks (mana/app_clocks.h), read by mana's stand-in for the vDSO
   * (upper-half/vdso/): the kernel's vDSO entry points, filled by every lower half; the
   * offsets added to its readings, set by a restart (lower-half/state_clocks.c) and kept in
   * the image for the next; and where the stand-in's trampolines are (upper-half code, so
   * these stay valid across restarts), whose calls the seccomp filter lets through. */
  uint64_t vdso_entries[MANA_VDSO_N_ENTRIES];
  int64_t clock_offset_ns[MANA_CLOCK_N_OFFSETS];
  uint64_t vdso_reissue_start, vdso_reissue_end;
  uint64_t vdso_reissue_r10, vdso_sleep, vdso_sleep_resume;
  uint64_t vdso_sleep_rest, vdso_sleep_rest_resume;
  uint64_t vdso_masked_wait, vdso_poll_timed;

  /* The application's absolute path (the AT_EXECFN string on the upper half's stack), for
   * debuggers: ld.so names the main program "" in its list of objects (mana_gdb, below). */
  uint64_t app_path;

  uint64_t vdso_epoll_timed; /* the stand-in's trampoline for the epoll waits with a timeout */

  /* Registered by the stub (wrappers/signal_dispatch.c): the application's signal handlers run
   * on its own thread pointer, also when the signal comes while the thread is inside MPI.  The
   * kernel is given the dispatcher for every handler the application installs (the SIGSYS
   * handler, lower-half/sigsys.c, sees to it), and the application's own dispositions are kept
   * in the table, indexed by signal number (65 entries), which sigaction reports back.  A
   * thread interrupted in the dispatcher's code (between the lo and hi addresses) on its own
   * thread pointer is parked a moment later, not there (lower-half/park.c). */
  uint64_t stub_signal_dispatch;
  uint64_t stub_signal_dispatch_lo, stub_signal_dispatch_hi;
  struct mana_sigaction *stub_app_sigactions;

  /* The stand-in's trampoline that writes the rest of a blocking write a park cut short. */
  uint64_t vdso_write_rest;

  /* The stand-in's trampoline for sigtimedwait and semtimedop with a timeout, the round a park
   * sends a thread back to, and the address after its syscall instruction (mana/app_clocks.h,
   * lower-half/timed_waits.c; version 13). */
  uint64_t vdso_timed_wait, vdso_timed_round, vdso_timed_resume;
};

/* upper-half/debugger/mana_gdb.py reads these fields by their offsets, as a debugger may have
 * no debug information for mana_lh; it checks the magic and the version first. */
_Static_assert(offsetof(struct mana_boundary, version) == 8, "mana_gdb.py: version");
_Static_assert(offsetof(struct mana_boundary, app_base) == 192, "mana_gdb.py: app_base");
_Static_assert(offsetof(struct mana_boundary, app_path) == 432, "mana_gdb.py: app_path");

/* Why a checkpoint is refused when mana_stub_cc.spoiled says so. */
#define MANA_CC_SPOILED_REASON                                                              \
  "MPI refused a collective on this rank (an argument error) while the ranks looked for a " \
  "safe point that counted it, and no collective made up for it; ask again"

/* The stub's collective clock as the checkpoint thread sees it.  Every function takes the
 * stub's clock lock itself, uses no thread-local state and never calls MPI. */
struct mana_stub_cc {
  /* A checkpoint request: collectives now wait at their entry.  Returns when no thread is
   * between its window and its decision (membarrier handshake).  0, or -1 with a reason
   * (a checkpoint is already pending, or the clock's tables ran out of memory). */
  int (*begin)(char *reason, size_t len);
  /* The SEQ table, after begin: start with *cursor = 0; 0 at the end. */
  int (*next)(uint64_t *cursor, uint64_t *ggid, uint64_t *seq);
  /* One TARGETS entry; 0, or -1 when out of memory. */
  int (*set_target)(uint64_t ggid, uint64_t target);
  /* The TARGETS of `epoch` are all applied. */
  void (*targets_done)(uint64_t epoch);
  /* A RAISE an application thread queued (targets it counted past); 1 if one was popped. */
  int (*pop_raise)(uint64_t *ggid, uint64_t *target);
  /* The rank's status now (mana/cc_status.h); for CC_ST_PARKED, the collective entry it is
   * held at: group *ggid, with SEQ *seq there. */
  enum cc_status (*status)(uint64_t *ggid, uint64_t *seq);
  /* 1 if another rank already counted a collective on a group this rank has not joined yet
   * (the test trigger's hold must let this rank go on to it). */
  int (*awaited)(void);
  /* The checkpoint is over (written, aborted or restarted): collectives proceed again. */
  void (*end)(void);
  /* 1 once a collective MPI refused before starting it (an argument error) was taken off a
   * count a target may rest on, while this checkpoint was pending (wrappers/collective_clock.c,
   * mana_cc_failed): the collective that meets the target may never come, or the ranks may
   * have converged on the count.  The checkpoint goes on only if the targets are met by
   * collectives MPI started: then still_met says 1. */
  int (*spoiled)(void);
  int (*still_met)(void);
};

#define MANA_BOUNDARY ((struct mana_boundary *)MANA_WINDOW_BASE)

#endif
