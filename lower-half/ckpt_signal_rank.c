/* The checkpoint signal on a rank (ckpt_signal_rank.h).
 *
 * Every thread of the application blocks it (mana/signals.h), and so do the lower half's
 * threads but one: the thread below that asks the coordinator, which the kernel therefore
 * picks for a signal sent to the process.  Before, the main thread took it, and a poll or
 * select it waited in ended with EINTR.  The handler still writes only a byte into a pipe with
 * a raw system call, as it would on any thread (a thread-directed send reaches the thread
 * named), and the asking thread reads it and asks the coordinator on a control connection of
 * its own.  Every rank that gets the signal asks; the coordinator makes one checkpoint of all
 * the requests (join=1). */
#define _GNU_SOURCE
#include "ckpt_signal_rank.h"

#include "clock_calls.h"
#include "interrupted_calls.h"
#include "timed_waits.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ckpt_request.h"
#include "ckpt_signal.h"
#include "lower_threads.h"
#include "mana/boundary.h"
#include "mana/raw_syscall.h"
#include "sigsys.h"

static int signo;
static bool then_exit;
static int wake[2] = {-1, -1};
static uint32_t my_rank;

static void on_ckpt_signal(int sig, siginfo_t *info, void *uc)
{
  (void)sig, (void)info;
  char byte = 1;
  /* Non-blocking: a full pipe already holds a request. */
  mana_raw_syscall4(SYS_write, wake[1], (long)&byte, 1, 0);
  mana_clock_sleep_rewind(uc); /* an application thread's sleep goes on */
  mana_timed_wait_rewind(uc);  /* and so does its sigtimedwait or semtimedop */
  mana_interrupted_call_settle(uc);
}

static int install_handler(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_ckpt_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  mana_sigset_block_all(&sa.sa_mask);
  return sigaction(signo, &sa, NULL);
}

int mana_ckpt_signal_install(void)
{
  const char *name = getenv(CKPT_SIGNAL_ENV), *action = getenv(CKPT_SIGNAL_ACTION_ENV), *why;
  enum ckpt_signal_action a = CKPT_SIGNAL_KILL;
  if (!name || !*name)
    return 0;
  if (ckpt_signal_parse(name, &signo, &why) != 0) {
    fprintf(stderr, "mana_lh: %s=%s: %s\n", CKPT_SIGNAL_ENV, name, why);
    return -1;
  }
  if (action && *action && ckpt_signal_action_parse(action, &a) != 0) {
    fprintf(stderr, "mana_lh: %s=%s: expected kill or checkpoint\n", CKPT_SIGNAL_ACTION_ENV,
            action);
    return -1;
  }
  then_exit = a == CKPT_SIGNAL_KILL;
  if (pipe2(wake, O_CLOEXEC) != 0 || fcntl(wake[1], F_SETFL, O_NONBLOCK) != 0) {
    fprintf(stderr, "mana_lh: checkpoint signal: cannot make a pipe: %s\n", strerror(errno));
    return -1;
  }
  struct mana_sigaction app;
  if (syscall(SYS_rt_sigaction, signo, NULL, &app, 8) != 0)
    memset(&app, 0, sizeof(app));
  if (install_handler() != 0) {
    fprintf(stderr, "mana_lh: cannot install the checkpoint signal's handler (%s): %s\n", name,
            strerror(errno));
    return -1;
  }
  mana_sigsys_keep_aside(signo, &app);
  /* The calling thread becomes the application's main thread (or, restarting, the restart's),
   * and the threads made from it inherit the mask; until the asking thread runs, the signal
   * waits pending. */
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo);
  pthread_sigmask(SIG_BLOCK, &one, NULL);
  return 0;
}

static void *ask(void *arg)
{
  (void)arg;
  char name[16], buf[64], err[512];
  ckpt_signal_name(signo, name, sizeof(name));
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo);
  for (;;) {
    /* The one thread the kernel can give the signal to, while it waits for it: one that comes
     * while it talks to the coordinator waits pending, and its handler runs here once the
     * talk is over. */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    ssize_t n = read(wake[0], buf, sizeof(buf));
    pthread_sigmask(SIG_BLOCK, &one, NULL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return NULL;
    uint64_t gen = 0;
    if (mana_ask_checkpoint(then_exit, then_exit ? MANA_EXIT_CHECKPOINTED : 0, true, &gen, err,
                            sizeof(err)) != 0)
      fprintf(stderr, "mana_lh: rank %u: SIG%s: no checkpoint: %s\n", my_rank, name, err);
    else if (my_rank == 0)
      fprintf(stderr, "mana_lh: SIG%s: checkpoint generation %llu%s\n", name,
              (unsigned long long)gen, then_exit ? "; the job ends once it is committed" : "");
  }
}

void mana_ckpt_signal_start(uint32_t rank)
{
  static int started;
  pthread_t t;
  sigset_t saved;
  if (wake[0] < 0 || started)
    return;
  my_rank = rank;
  /* MPI_Init, in the lower half, installs MPICH's own SIGUSR1 handler (its fault notices),
   * out of the seccomp filter's sight: take the signal back. */
  if (install_handler() != 0)
    fprintf(stderr, "mana_lh: rank %u: cannot install the checkpoint signal's handler: %s\n", rank,
            strerror(errno));
  mana_lower_threads_mask_enter(&saved);
  int err = pthread_create(&t, NULL, ask, NULL);
  mana_lower_threads_mask_leave(&saved);
  if (err != 0) {
    fprintf(stderr, "mana_lh: rank %u: cannot start the checkpoint signal's thread: %s\n", rank,
            strerror(err));
    return;
  }
  pthread_detach(t);
  started = 1;
}
