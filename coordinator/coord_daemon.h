/* coord_daemon: detach the coordinator from the terminal and from the launcher's process
 * group, so that neither a hang-up nor a Ctrl-C aimed at the launcher takes it down before
 * it has aborted or committed cleanly. */
#ifndef MANA_COORD_DAEMON_H
#define MANA_COORD_DAEMON_H

#include <stddef.h>

/* Forks twice with setsid() in between. Returns 0 in the daemon, whose stdin is /dev/null
 * and whose stdout and stderr append to log_path (NULL: /dev/null), and whose working
 * directory is "/". The original process does not return: it prints "ANNOUNCE PID\n" on
 * stdout (PID of the daemon) and exits 0. Returns -1 with err when forking fails. */
int coord_daemonize(const char *log_path, const char *announce, char *err, size_t errlen);

#endif
