/*
 * signal_tls_handler.h - the SIGALRM handler of signal_tls and what it counts.  Compiled into
 * signal_tls itself, which installs it in main; and, with SIGNAL_TLS_EARLY, into the library
 * libmana_test_early_handler.so, whose constructor installs it before MPI's: signal_tls_early
 * links that library after libmpich.so.12, so the dynamic loader runs its constructor before
 * the one of mana's stub, as it does for a profiler's library linked after MPI.
 */
#ifndef SIGNAL_TLS_HANDLER_H
#define SIGNAL_TLS_HANDLER_H

#include <signal.h>

struct sig_tls_counts {
  long handled;      /* runs on the main thread's own storage */
  int foreign;       /* runs that found another thread pointer's storage */
  int errno_not_set; /* runs whose write(2) did not set errno to EBADF */
  int ran_in_recv;   /* runs during MPI_Recv (sig_tls_in_recv) */
};

/* Marks the calling thread (the main one) as the one the handler checks itself against. */
void sig_tls_arm(void);
/* Installs the handler for SIGALRM: SA_RESTART, SIGUSR1 in its mask. */
void sig_tls_install(void);
/* The handler, as installed. */
void sig_tls_handler(int sig);
/* Set around MPI_Recv: the handler counts the runs that interrupted the thread inside MPI,
 * without which the test could pass without ever checking what it is for. */
void sig_tls_in_recv(int on);
void sig_tls_get_counts(struct sig_tls_counts *c);

#endif
