/* Lower-half thread pointers for the application's MPI-calling threads (see mpi_threads.c). */
#ifndef MANA_LH_MPI_THREADS_H
#define MANA_LH_MPI_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Moves the calling thread, the lower half's main thread, onto the thread pointer of holder 0
 * (made on the first call), which it keeps from then on: everything the lower half does on
 * its main thread, and every MPI call of the application's main thread, runs on it.  Holder
 * 0's thread pointer is below 4 GiB when that can be had, so that the application's main
 * thread can enter MPI by loading a selector (fs_selector.c).  Returns it (the thread's own
 * if no holder could be made, reported). */
uint64_t mana_mpi_threads_main_fs(void);
/* The kernel thread id of holder 0, which glibc's thread descriptor on the main thread now
 * holds (0 before mana_mpi_threads_main_fs moved the main thread). */
pid_t mana_mpi_threads_main_holder_tid(void);
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
