/* coord_client: one connection to the job's coordinator, for a rank's checkpoint thread
 * (linked into mana_lh as the static library mana_coord_client), for mana_status and for
 * the tests.
 *
 * No global state, no threads, no signals: every call works on the connection it is given
 * and uses plain libc only (socket calls, poll, malloc), so it can run on a lower-half
 * thread while the upper half is parked. All I/O is bounded by a time limit. A call that
 * fails returns -1 and leaves a one-line reason in coord_client_error(); after a failed
 * send or receive the connection is unusable and should be closed.
 *
 * Typical rank side (see coord_client_rank.h for the checkpoint messages):
 *
 *     struct coord_client *c;
 *     char err[COORD_ERR_LEN];
 *     int rc = coord_rank_open(rank, size, 10000, &c, err, sizeof(err));
 *     if (rc == 1) ... no MANA_COORDINATOR: run without checkpointing
 *     if (rc < 0)  ... report err
 *     poll coord_client_fd(c) with the rest; on POLLIN call coord_client_recv(c, &msg, 0)
 *     until it returns 0, and decode each line with coord_cmd_decode().
 */
#ifndef MANA_COORD_CLIENT_H
#define MANA_COORD_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord_net.h"
#include "coord_proto.h"
#include "coord_secret.h"

/* The environment the ranks receive from mana_launch. */
#define COORD_ENV_ADDRESS "MANA_COORDINATOR" /* HOST:PORT */
#define COORD_ENV_SECRET "MANA_SECRET_FILE"  /* path of the secret file */
#define COORD_ENV_CKPTDIR "MANA_CKPTDIR"     /* checkpoint directory */

/* Where the coordinator is and the secret that admits us. */
struct coord_endpoint {
  char host[COORD_HOST_MAX];
  char port[COORD_PORT_MAX];
  char secret[COORD_SECRET_HEX + 1];
};

/* Fills ep from HOST:PORT and the secret file. Returns 0 or -1 with err. */
int coord_endpoint_init(struct coord_endpoint *ep, const char *hostport, const char *secret_file,
                        char *err, size_t errlen);

/* Fills ep from MANA_COORDINATOR and MANA_SECRET_FILE. Returns 0, 1 when MANA_COORDINATOR
 * is not set (the job runs without a coordinator), or -1 with err (e.g. MANA_SECRET_FILE
 * missing or unsafe). */
int coord_endpoint_from_env(struct coord_endpoint *ep, char *err, size_t errlen);

struct coord_client;

/* Connects within timeout_ms. Returns the connection, or NULL with err. No message is
 * exchanged yet: the first one must be a HELLO. */
struct coord_client *coord_client_connect(const struct coord_endpoint *ep, int timeout_ms,
                                          char *err, size_t errlen);

/* Sends HELLO and waits up to timeout_ms for WELCOME. An ERROR reply becomes the error
 * text ("the coordinator refused us: REASON"). host may be NULL (gethostname() is used). */
int coord_client_hello_rank(struct coord_client *c, uint32_t rank, uint32_t size, pid_t pid,
                            const char *host, int timeout_ms);
int coord_client_hello_control(struct coord_client *c, int timeout_ms);

/* Endpoint from the environment, connect, HELLO as rank/size with this process's pid and
 * host name. Returns 0 with *out, 1 when MANA_COORDINATOR is unset (*out is NULL), or -1
 * with err (*out is NULL). */
int coord_rank_open(uint32_t rank, uint32_t size, int timeout_ms, struct coord_client **out,
                    char *err, size_t errlen);

/* Starts a line in the connection's own buffer; add fields with coord_line_*() and hand it
 * to coord_client_send(). Only one line can be under construction per connection. */
struct coord_line *coord_client_line(struct coord_client *c, const char *verb);

/* Finishes and sends a line started with coord_client_line(); waits at most the send time
 * limit (default 10 s) for socket space. Returns 0 or -1. */
int coord_client_send(struct coord_client *c, struct coord_line *line);

/* Sends bytes exactly as given (tests use it to send garbage). */
int coord_client_send_raw(struct coord_client *c, const void *data, size_t len);

void coord_client_set_send_timeout(struct coord_client *c, int timeout_ms);

/* Receives the next line within timeout_ms (0: only what is already buffered or readable
 * without waiting; negative: no limit). Returns 1 with *msg (valid until the next receive
 * on this connection), 0 when the time ran out, -1 on a closed connection, an I/O error
 * or a malformed line. */
int coord_client_recv(struct coord_client *c, struct coord_msg *msg, int timeout_ms);

/* The socket, to poll for POLLIN along with other descriptors. Lines may already be
 * buffered: drain with coord_client_recv(c, &msg, 0) until it returns 0 before polling. */
int coord_client_fd(const struct coord_client *c);

/* The reason of the last failure on this connection. */
const char *coord_client_error(const struct coord_client *c);

void coord_client_close(struct coord_client *c);

#endif
