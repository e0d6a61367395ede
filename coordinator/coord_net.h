/* coord_net: the TCP plumbing under the protocol: "host:port" strings, connecting with a
 * time limit (clients), and the listening socket (coordinator).
 *
 * Addresses are written HOST:PORT, with IPv6 literals in brackets ([::1]:7779), the same
 * syntax mana_launch --coordinator accepts.
 */
#ifndef MANA_COORD_NET_H
#define MANA_COORD_NET_H

#include <stddef.h>

#define COORD_HOST_MAX 256 /* bytes of a host name or address, NUL included */
#define COORD_PORT_MAX 8   /* "65535" and a NUL */
#define COORD_HOSTPORT_MAX (COORD_HOST_MAX + COORD_PORT_MAX + 3)

/* Splits "host:port" / "[v6]:port". The port must be 1..65535. Returns 0 or -1 with err. */
int coord_hostport_split(const char *hostport, char host[COORD_HOST_MAX], char port[COORD_PORT_MAX],
                         char *err, size_t errlen);

/* Joins host and port, bracketing a host that contains ':'. */
void coord_hostport_join(char *out, size_t len, const char *host, unsigned port);

/* Connects to host:port within timeout_ms (negative: no limit), trying every address the
 * name resolves to. Returns a non-blocking, close-on-exec socket with TCP_NODELAY, or -1
 * with err naming the address and the reason. */
int coord_connect(const char *host, const char *port, int timeout_ms, char *err, size_t errlen);

/* Listens on host (NULL: every local address) and port ("0": the kernel picks). Returns
 * the non-blocking listening socket with *bound_port set, or -1 with err. */
int coord_listen(const char *host, const char *port, unsigned *bound_port, char *err,
                 size_t errlen);

/* The coordinator's second door for clients on its own host: an abstract Unix socket
 * (no file, gone with the process, one name space per network namespace) where the
 * kernel tells the coordinator the connecting user, so that only the job's owner and root
 * get in and no other local user can crowd them out. Its name is derived from the TCP port
 * and the job secret, which every client already has; knowing the name admits nobody.
 * COORD_LOCAL_NAME_MAX includes the leading NUL of the abstract name space. */
#define COORD_LOCAL_NAME_MAX 48

/* The local name for a coordinator on port with secret (the hex secret). Returns its
 * length in bytes (the leading NUL included). */
size_t coord_local_name(const char *port, const char *secret, char out[COORD_LOCAL_NAME_MAX]);

/* Listens on the local name. Returns the non-blocking socket or -1 with err. */
int coord_listen_local(const char *name, size_t len, char *err, size_t errlen);

/* Connects to the local name without waiting: a non-blocking, close-on-exec socket, or -1
 * with errno (ECONNREFUSED: no coordinator of that name on this host). */
int coord_connect_local(const char *name, size_t len);

/* Milliseconds of CLOCK_MONOTONIC, for deadlines. */
/* Monotonic microseconds, for the phase times of a generation. */
long long coord_now_us(void);
long long coord_now_ms(void);

/* "poll until": the timeout for poll(2) that ends at deadline_ms (negative deadline: -1). */
int coord_remaining_ms(long long deadline_ms);

#endif
