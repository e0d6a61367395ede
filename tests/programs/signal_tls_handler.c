/*
 * signal_tls_handler.c - the handler of signal_tls (signal_tls_handler.h).  It counts itself
 * in a thread-local counter and checks that the thread-local variable it sees is the main
 * thread's own (address and value); it calls write(2) on a closed descriptor, which sets errno
 * through the C library's thread-local errno, and puts errno back, as careful handlers do.  A
 * handler run with another thread pointer would see another thread's storage (or none) and
 * write into it.
 */
#include "signal_tls_handler.h"

#include <errno.h>
#include <unistd.h>

#define TLS_MAGIC 0x5a17c0de

static __thread volatile int tls_word;
static __thread volatile long tls_handled;
static volatile int *main_tls_word;
static volatile sig_atomic_t foreign_tls, errno_not_set, in_recv, ran_in_recv;

void sig_tls_handler(int sig)
{
  (void)sig;
  int saved = errno;
  if (&tls_word != main_tls_word || tls_word != TLS_MAGIC) {
    foreign_tls++;
    return; /* the storage is not this thread's: writing it would corrupt someone else's */
  }
  tls_handled++;
  ran_in_recv += in_recv;
  errno = 0;
  if (write(-1, "", 1) != -1 || errno != EBADF)
    errno_not_set++;
  errno = saved;
}

void sig_tls_arm(void)
{
  tls_word = TLS_MAGIC;
  main_tls_word = &tls_word;
}

void sig_tls_install(void)
{
  struct sigaction sa = {.sa_handler = sig_tls_handler, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR1);
  sigaction(SIGALRM, &sa, NULL);
}

void sig_tls_in_recv(int on)
{
  in_recv = on;
}

void sig_tls_get_counts(struct sig_tls_counts *c)
{
  c->handled = tls_handled; /* read on the main thread: its own counter */
  c->foreign = foreign_tls;
  c->errno_not_set = errno_not_set;
  c->ran_in_recv = ran_in_recv;
}

#ifdef SIGNAL_TLS_EARLY
/* Runs before the constructor of libmpich.so.12 (mana's stub under mana): see the header. */
__attribute__((constructor)) static void install_early(void)
{
  sig_tls_arm();
  sig_tls_install();
}
#endif
