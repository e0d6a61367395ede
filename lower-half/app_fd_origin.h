/* Which pipes, sockets and other non-file descriptors, and which POSIX timers, the application
 * made (app_fd_origin.c). */
#ifndef MANA_LH_APP_FD_ORIGIN_H
#define MANA_LH_APP_FD_ORIGIN_H

#include <stdint.h>

/* Notes the object behind `fd` as the application's.  Raw system calls only: the SIGSYS
 * handler calls it on the application's thread pointer. */
void mana_app_fd_note(long fd);

/* 1 when the application made the object with this device and inode. */
int mana_app_fd_made(uint64_t dev, uint64_t ino);

/* Objects behind the shared anonymous inode (eventfd, timerfd, signalfd, epoll, inotify): what
 * descriptor `fd` is (0 when none of those; its kind, and an eventfd's id), 1 when the
 * application made or duplicated it at that number, and a duplicate the application made
 * (`to` gets `from`'s note, or none).  Raw system calls only. */
uint64_t mana_app_anon_identity(long fd);
#define MANA_ANON_EVENTFD 1 /* the kind in mana_app_anon_identity's low byte */
#define MANA_ANON_TIMERFD 2
#define MANA_ANON_SIGNALFD 3
#define MANA_ANON_EPOLL 4
int mana_app_anon_fd_made(long fd);
void mana_app_anon_fd_dup(long from, long to);

/* Notes POSIX timer `id` as the application's (raw: called by the SIGSYS handler too). */
void mana_app_timer_note(int id);

/* 1 when the application made the timer with this id; whether it ever made one. */
int mana_app_timer_made(int id);
int mana_app_timers_noted(void);

#endif
