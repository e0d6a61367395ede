/* Initialization and thread level.  The real MPI is initialized by the lower half when the
 * application asks (see lower-half/main.c for why then); the stub remembers the level the
 * application was given and which of its threads is the main one. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "job_env.h"
#include "mana/fault.h"
#include "libc_leaves.h"
#include "p2p.h"
#include "records.h"
#include "stub_lock.h"

static int app_thread_level = MPI_THREAD_SINGLE;
static pthread_t app_main_thread;
int mana_world_model; /* stub.h */
int mana_app_in_mpi;  /* stub.h */
/* The application called MPI_Init or MPI_Init_thread: what MPI_Initialized answers. */
static int app_initialized;
/* mana initialized the world model itself, at the application's first MPI_Session_init:
 * the program had not (see mana_world_for_sessions). */
static int world_for_sessions;
static int world_finalized;
/* The application's own MPI_Finalize returned: what MPI_Finalized answers. */
static int app_finalized;

/* The executable segment of this library, for the park signal handler (boundary.h). */
static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  uint64_t self = (uint64_t)(uintptr_t)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= lo && self < hi) {
      MANA_BOUNDARY->stub_text_lo = lo;
      MANA_BOUNDARY->stub_text_hi = hi;
      return 1;
    }
  }
  return 0;
}

static void record_stub_text(void)
{
  dl_iterate_phdr(find_text, (void *)(uintptr_t)&find_text);
}

__attribute__((constructor)) static void check_boundary(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  unsigned char resident;
  /* Outside mana nothing is mapped there: reading the magic would be a segmentation fault. */
  if (mincore(b, 4096, &resident) != 0 || b->magic != MANA_BOUNDARY_MAGIC ||
      b->version != MANA_BOUNDARY_VERSION) {
    /* Loaded without mana_lh, e.g. a stray LD_LIBRARY_PATH: there is no real MPI behind us. */
    static const char msg[] = "mana: this libmpich.so.12 is mana's stub and works only under "
                              "mana_launch (no lower half found)\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  mana_job_env_restore();
  mana_handles_init();
  mana_thread_attach_main();
  record_stub_text();
  mana_libc_leaves_publish();
  /* Record keeping for restart, and the entry points the lower half calls for it. */
  mana_records_init();
  MANA_BOUNDARY->stub_drain = mana_stub_drain;
  MANA_BOUNDARY->stub_cancel_receives = mana_stub_cancel_receives;
  MANA_BOUNDARY->stub_settle_own_waits = mana_stub_settle_own_waits;
  mana_signal_dispatch_register();
}

/* The real MPI_Init_thread, in the lower half, and what mana keeps from MPI_Init on: the
 * drain's counters, MPI_COMM_WORLD and MPI_COMM_SELF on the collective clock, the coordinator
 * link (services.c). */
static int init_world(int required, int *got)
{
  mana_cc_init_enter();
  int rc = MANA_LH_SVC_NOPARK(init_thread, required, got);
  if (rc == MPI_SUCCESS) {
    mana_world_model = 1;
    mana_p2p_init(); /* the drain's counters and communicator (p2p.h) */
    if (*got == MPI_THREAD_MULTIPLE)
      mana_threads_concurrent = 1;
  }
  mana_cc_init_leave(rc == MPI_SUCCESS);
  if (rc == MPI_SUCCESS)
    MANA_LH_SVC_VOID_NOPARK(app_initialized);
  return rc;
}

static int init(int required, int *provided)
{
  int got = MPI_THREAD_SINGLE, rc = MPI_SUCCESS;
  if (world_for_sessions && mana_world_model) /* up since a session: the level it got stands */
    MANA_LH_CALL_NOPARK(MPI_Query_thread, &got);
  else
    rc = init_world(required, &got);
  if (rc == MPI_SUCCESS) {
    app_initialized = 1;
    mana_app_in_mpi = 1;
    app_thread_level = got < required ? got : required;
    app_main_thread = pthread_self();
  }
  if (provided)
    *provided = rc == MPI_SUCCESS ? app_thread_level : got;
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Init(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  return init(MPI_THREAD_SINGLE, NULL);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  (void)argc;
  (void)argv;
  return init(required, provided);
}

/* Finalizing synchronizes the ranks in MPICH: counted like a collective on MPI_COMM_WORLD, so
 * a rank is held before it, not inside it, while a checkpoint converges. */
static int finalize_world(void)
{
  /* Parked here, between the application's calls, a thread still counts as one that has not
   * finalized; the gate is asked again after each park. */
  while (MANA_LH_SVC_NOPARK(app_finalize_gate))
    mana_park_point();
  mana_cc_enter(MPI_COMM_WORLD, 0);
  MANA_LH_SVC_VOID_NOPARK(app_finalizing);
  mana_freed_recv_reap(1);
  /* What reached a sink is left to MPI, which reports it at exit as it would natively. */
  mana_comm_sinks_release();
  int rc = MANA_LH_CALL_NOPARK(MPI_Finalize);
  if (rc == MPI_SUCCESS) {
    mana_world_model = 0;
    world_finalized = 1;
  }
  mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Finalize(void)
{
  mana_app_in_mpi = 0; /* MPI answers from here on: the calls in and after it are MPI's */
  int rc = finalize_world();
  if (rc == MPI_SUCCESS)
    app_finalized = 1;
  return rc;
}

int mana_local_Finalized(int *flag, int *result)
{
  if (!flag)
    return 0; /* MPI reports it */
  *flag = app_finalized;
  *result = MPI_SUCCESS;
  return 1;
}

/* A program that uses sessions only never calls MPI_Init, but mana needs the world model for
 * itself: the coordinator link is made in MPI_Init, the drain exchanges over a duplicate of
 * MPI_COMM_WORLD, communicators are recorded and rebuilt by world ranks, and blocking calls
 * wait in the polling loops a checkpoint can park.  So the first MPI_Session_init of such a
 * program initializes it first, at the thread level the session asks for (MPICH has one
 * level for the process), and the program's exit finalizes it.  MPI_Initialized still
 * answers for the program's own calls.  After the program's own MPI_Finalize the world model
 * cannot come back (MPI 4.0, 11.2.1): later sessions then run without mana's. */
static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;

static void finalize_at_exit(void)
{
  if (world_for_sessions && mana_world_model && !app_initialized)
    finalize_world();
}

int mana_world_for_sessions(int level)
{
  int rc = MPI_SUCCESS, got = MPI_THREAD_SINGLE;
  pthread_mutex_lock(&world_lock);
  if (!mana_world_model && !world_finalized) {
    rc = init_world(level, &got);
    if (rc == MPI_SUCCESS && !world_for_sessions) {
      world_for_sessions = 1;
      atexit(finalize_at_exit);
    }
  }
  pthread_mutex_unlock(&world_lock);
  return rc;
}

/* Testing aids report what they counted before MPI aborts the job (the launcher kills the
 * ranks before their exit handlers run). */
int mana_before_Abort(MPI_Comm comm, int errorcode)
{
  (void)comm;
  (void)errorcode;
  MANA_LH_SVC_VOID_NOPARK(app_aborting);
  return MPI_SUCCESS;
}

/* Answered here: only the application's MPI_Init or MPI_Init_thread initializes MPI for it
 * (a program of sessions only has mana's world model, and is not initialized). */
int MPI_Initialized(int *flag)
{
  if (!flag)
    return MANA_LH_CALL(MPI_Initialized, flag); /* MPI reports it */
  *flag = app_initialized;
  MANA_PARK_CHECK(); /* a park point, as every call */
  return MPI_SUCCESS;
}

int MPI_Query_thread(int *provided)
{
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return MANA_LH_CALL(MPI_Query_thread, provided); /* let MPI report the misuse */
  *provided = app_thread_level;
  MANA_PARK_CHECK();
  return MPI_SUCCESS;
}

/* MPICH compares the lower half's thread identity, which is the same for every upper thread. */
int MPI_Is_thread_main(int *flag)
{
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return MANA_LH_CALL(MPI_Is_thread_main, flag);
  *flag = pthread_equal(pthread_self(), app_main_thread);
  return MPI_SUCCESS;
}

/* MANA_FAULT=wrapper-linger (mana/fault.h): the thread stays in the stub's code past the call's
 * last park check, as one preempted there would, until a park has been asked for and about a
 * second more (TSC ticks at 2-4 GHz: no call out of the stub's code), at most about a minute. */
static void linger_past_park_check(void)
{
  static int linger = -1;
  if (__builtin_expect(linger == 0, 1))
    return;
  if (linger < 0 && !(linger = mana_fault("wrapper-linger", -1)))
    return;
  fprintf(stderr, "mana: MANA_FAULT=wrapper-linger: pid %d stays in MPI_Pcontrol\n", (int)getpid());
  const volatile uint32_t *asked = &MANA_BOUNDARY->park_requested;
  uint64_t start = __builtin_ia32_rdtsc(), seen = 0, now;
  while ((now = __builtin_ia32_rdtsc()) - start < 200000000000ull) {
    if (!seen && *asked)
      seen = now;
    if (seen && now - seen > 3000000000ull)
      break;
    __builtin_ia32_pause();
  }
}

/* Variadic in the standard, and a no-op in MPICH unless a profiler is attached: forward the
 * level only. */
int MPI_Pcontrol(const int level, ...)
{
  int rc = MANA_LH_CALL(MPI_Pcontrol, level);
  linger_past_park_check();
  return rc;
}
