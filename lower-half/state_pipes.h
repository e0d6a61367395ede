/* The application's pipes and other descriptors that are not files (state_pipes.c). */
#ifndef MANA_LH_STATE_PIPES_H
#define MANA_LH_STATE_PIPES_H

#include <stddef.h>

/* 1 with the reason when the application holds a descriptor a restart could not give back:
 * a socket, a timerfd, signalfd or inotify instance, an epoll instance watching a descriptor
 * that no longer holds its file, or a pipe whose other end is not in this process.  Call with the application's threads parked. */
int mana_app_fds_unrestorable(char *why, size_t len);

#endif
