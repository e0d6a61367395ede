/* The application's System V shared memory calls (sysv_shm_calls.c): attached inside the
 * window, and its segment ids kept valid across restarts. */
#ifndef MANA_LH_SYSV_SHM_CALLS_H
#define MANA_LH_SYSV_SHM_CALLS_H

#include <stdint.h>

/* Serves shmget, shmat, shmdt or shmctl (nr) that upper-half code made, with the call's six
 * arguments; returns what the system call returns.  Raw system calls only: the SIGSYS handler
 * runs it on the application's thread pointer. */
long mana_sysv_shm_call(long nr, const long args[6]);

/* The id the application knows a segment by, given the id the kernel has for it now. */
int mana_sysv_shm_app_id(int kernel_id);

/* A restart made the segment the application knows as app_id again as kernel_id: 0, or -1
 * when the table is full. */
int mana_sysv_shm_remember_id(int app_id, int kernel_id);

/* A restart attached a segment of len bytes at addr again, so that the application's shmdt
 * there finds it: 0, or -1 when the table is full. */
int mana_sysv_shm_remember_attach(uint64_t addr, uint64_t len);

#endif
