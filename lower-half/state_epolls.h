/* The application's epoll instances (state_epolls.c). */
#ifndef MANA_LH_STATE_EPOLLS_H
#define MANA_LH_STATE_EPOLLS_H

#include <stddef.h>

/* 1 with the reason when a restart could not give back the watches of the application's
 * epoll descriptor `fd` (a watched descriptor number that no longer holds its file). */
int mana_epoll_unrestorable(int fd, char *why, size_t len);

#endif
