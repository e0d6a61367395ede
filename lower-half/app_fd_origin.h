/* Which pipes, sockets and other non-file descriptors the application made (app_fd_origin.c). */
#ifndef MANA_LH_APP_FD_ORIGIN_H
#define MANA_LH_APP_FD_ORIGIN_H

#include <stdint.h>

/* Notes the object behind `fd` as the application's.  Raw system calls only: the SIGSYS
 * handler calls it on the application's thread pointer. */
void mana_app_fd_note(long fd);

/* 1 when the application made the object with this device and inode. */
int mana_app_fd_made(uint64_t dev, uint64_t ino);

#endif
