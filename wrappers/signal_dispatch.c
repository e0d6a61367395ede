/* The application's signal handlers, run on the application's thread pointer.
 *
 * A signal is taken by whatever a thread runs at that moment; inside an MPI call that is the
 * lower half, on its thread pointer.  An application handler run there would read and write
 * the lower half's thread-local storage instead of its own (its errno, its __thread
 * variables: a profiler's SIGPROF handler or an alarm's, taken while the program waits in
 * MPI_Recv).  So the kernel is given this dispatcher for every handler the application
 * installs (lower-half/sigsys.c keeps the application's disposition in the table below and
 * reports it back).  Taken inside MPI, the dispatcher switches to the thread's own pointer
 * and counts the handler as a callback, so that a checkpoint parks the thread when its MPI
 * call returns, not inside the handler with MPI's frames beneath it; so too inside a wrapper;
 * elsewhere it calls the handler as it is.
 *
 * The dispatcher runs before anything is known about the thread pointer, so its code uses no
 * TLS and no libc, and lies in a section of its own: a thread the park signal finds there on
 * its own thread pointer is signalled again a moment later (mana/boundary.h). */
#define _GNU_SOURCE /* REG_RIP */
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "stub.h"

#include "mana/boundary.h"
#include "mana/fs_switch.h"
#include "mana/mpi_threads.h"

/* The application's dispositions by signal number; in the image, as the stub's memory. */
static struct mana_sigaction app_sigactions[65];

typedef void (*app_handler)(int, siginfo_t *, void *);

extern const char __start_mana_signal_dispatch[], __stop_mana_signal_dispatch[];

__attribute__((section("mana_signal_dispatch"), used)) static void
dispatch(int sig, siginfo_t *info, void *uc)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  const struct mana_sigaction *own = &app_sigactions[(unsigned)sig <= 64 ? sig : 0];
  app_handler handler = (app_handler)(uintptr_t)__atomic_load_n(&own->handler, __ATOMIC_ACQUIRE);
  if ((uintptr_t)handler == (uintptr_t)SIG_DFL || (uintptr_t)handler == (uintptr_t)SIG_IGN)
    return; /* set to one of those by another thread since: the signal is spent */
  uint64_t fs = mana_get_fs((int)b->have_fsgsbase);
  struct mana_mpi_thread *t = mana_mpi_thread_of_lower(fs);
  if (t) {
    t->in_callback++;
    mana_set_fs((int)b->have_fsgsbase, t->upper_fs);
    handler(sig, info, uc);
    mana_set_fs((int)b->have_fsgsbase, fs);
    t->in_callback--;
    return;
  }
  /* Inside a wrapper, on the application's own thread pointer: the wrapper may hold real
   * handles that a restart would make stale, so the thread parks at the wrapper's park
   * check, not in the handler (as the park signal's handler decides for the wrapper). */
  uint64_t ip = (uint64_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
  if (ip >= b->stub_text_lo && ip < b->stub_text_hi && (t = mana_mpi_thread_of_upper(fs))) {
    t->in_callback++;
    handler(sig, info, uc);
    t->in_callback--;
    return;
  }
  handler(sig, info, uc);
}

void mana_signal_dispatch_register(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  b->stub_app_sigactions = app_sigactions;
  b->stub_signal_dispatch_lo = (uint64_t)(uintptr_t)__start_mana_signal_dispatch;
  b->stub_signal_dispatch_hi = (uint64_t)(uintptr_t)__stop_mana_signal_dispatch;
  __atomic_store_n(&b->stub_signal_dispatch, (uint64_t)(uintptr_t)dispatch, __ATOMIC_RELEASE);
}
