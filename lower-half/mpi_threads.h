/* Lower-half thread pointers for the application's MPI-calling threads (see mpi_threads.c). */
#ifndef MANA_LH_MPI_THREADS_H
#define MANA_LH_MPI_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Gives slot 0 (the application's main thread) the lower half's main thread pointer and
 * starts the factory.  0 or -1 (reported). */
int mana_mpi_threads_start(void);
/* The service the stub calls, on the calling application thread's own thread pointer (no
 * TLS): a lower-half thread pointer for `slot`, 0 if none could be made. */
uint64_t mana_mpi_thread_lower_fs(uint32_t slot);
/* A restarted process: a fresh holder for every slot an application thread owns. */
int mana_mpi_threads_restore(char *err, size_t errlen);
/* 1 for the threads the parking machinery must not signal (holders, the factory). */
int mana_mpi_threads_is_quiet(pid_t tid);

#endif
