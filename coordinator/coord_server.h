/* coord_server: the coordinator's state and its single-threaded event loop.
 *
 * One poll() loop serves the listening socket, every connection, a signalfd (SIGTERM,
 * SIGINT, SIGHUP), an optional pidfd of the launcher whose lifetime bounds the job's, and
 * the timers (authentication deadlines, periodic checkpoints, the wait for the first rank).
 * All sockets are non-blocking and every buffer has a limit, so one misbehaving peer can
 * only lose its own connection. The work is split by concern:
 *
 *   coord_server.c   the loop, accepting, timers, shutting down
 *   coord_conn.c     one connection: its buffers, reading lines, queueing output
 *   coord_hello.c    the first message: version, secret, role, rank registration
 *   coord_job.c      rank messages and the life of a generation (uses coord_ckpt)
 *   coord_control.c  control commands: STATUS, CHECKPOINT, INTERVAL, QUIT
 */
#ifndef MANA_COORD_SERVER_H
#define MANA_COORD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord_ckpt.h"
#include "coord_linebuf.h"
#include "coord_log.h"
#include "coord_net.h"
#include "coord_proto.h"
#include "coord_secret.h"
#include "coord_store.h"

#define COORD_MAX_RANKS (1u << 24)
#define COORD_MAX_PENDING 128       /* TCP connections that have not said HELLO yet */
#define COORD_MAX_PENDING_SOURCE 16 /* of them from one address */
#define COORD_MAX_PENDING_LOCAL 64  /* the same on the owner-only local socket */
#define COORD_MAX_CONTROL 64        /* control connections at once */
#define COORD_OUT_MAX (16u << 20)   /* unsent bytes a peer may leave queued */
#define COORD_CLOSE_GRACE_MS 1000   /* time to deliver a last ERROR before closing */
#define COORD_EXIT_GRACE_MS 2000    /* time to deliver the last messages at exit */

/* What mana_coordinator was asked to do (its command line). */
struct coord_config {
  const char *ckptdir;      /* absolute */
  const char *host;         /* address to listen on; NULL: all */
  const char *port;         /* "0": the kernel picks */
  const char *port_file;    /* extra copy of HOST:PORT, or NULL */
  const char *secret_file;  /* NULL: DIR/.mana/secret */
  const char *command;      /* the job's command line for MANIFEST, or NULL */
  unsigned interval;        /* seconds between checkpoints, 0: none */
  unsigned ranks;           /* world size, 0: learnt from the first HELLO */
  unsigned auth_timeout_ms; /* a connection must say HELLO within this */
  unsigned connect_timeout; /* seconds to wait for the first rank, 0: forever */
  unsigned ckpt_timeout;    /* seconds for the ranks to reach the safe point, 0: none */
  pid_t watch_pid;          /* exit when this process exits, 0: none */
  int ckpt_signal;          /* a checkpoint is asked for on this signal, 0: none */
  bool ckpt_signal_kill;    /* ... and the job then ends with MANA_EXIT_CHECKPOINTED */
  bool forked_writers;      /* ranks resume once drained; forked writers write the images */
  bool incremental;         /* write generations against the last committed one */
  unsigned full_every;      /* with incremental: every full_every-th generation is full */
  unsigned keep;            /* remove committed generations the keep newest do not need; 0: none */
  bool daemon;
};

enum conn_role { CONN_PENDING, CONN_RANK, CONN_CONTROL };

struct conn {
  int fd;
  enum conn_role role;
  size_t rank;                /* CONN_RANK */
  char peer[64];              /* address, for the log */
  char source[48];            /* the peer's address without the port, "local" */
  bool local;                 /* came through the owner-only local socket */
  long long auth_deadline;    /* CONN_PENDING */
  struct conn *older, *newer; /* the queue of pending TCP connections */
  long long close_deadline;   /* set when closing */
  bool closing;               /* close once the output is delivered */
  bool dead;                  /* close and forget at the end of this round */
  bool pending;               /* counted in coordinator.pending or .pending_local */
  struct coord_linebuf in;
  char *out;
  size_t out_len, out_cap;
  uint64_t done_gen; /* CONN_CONTROL: DONE owed for this generation, 0: none */
};

enum slot_state { SLOT_WAITING, SLOT_CONNECTED, SLOT_GONE };

/* One rank of the job, whether or not it is connected. */
struct rank_slot {
  enum slot_state state;
  struct conn *conn;
  char host[COORD_HOST_MAX];
  uint64_t pid;
  bool exiting; /* told COMMITTED then=exit */
};

struct coordinator {
  const struct coord_config *cfg;
  struct coord_store store;
  char secret[COORD_SECRET_HEX + 1];
  char address[COORD_HOSTPORT_MAX]; /* what the port files say */
  char port_file[PATH_MAX + 32];    /* DIR/.mana/coordinator */
  int listen_fd, local_fd, signal_fd, watch_fd;
  long long started_ms;

  struct conn **conns;
  size_t nconns, conns_cap;
  size_t pending, pending_local, controls;
  /* Pending TCP connections, oldest first: when the limits are reached the oldest
   * makes room, so that idle connections held open cannot lock out a client that
   * authenticates at once (the owner's mana_status, a rank). */
  struct conn *pend_oldest, *pend_newest;
  struct coord_log_limit reject_log; /* refusals of connections not yet authenticated */

  struct rank_slot *slots; /* size entries once the size is known */
  size_t size, connected;
  bool joined;     /* some rank has connected */
  bool all_joined; /* all ranks have been connected at once */

  struct ckpt *ckpt; /* the generation in progress, or NULL */
  bool ckpt_kill;
  unsigned ckpt_exit_status;              /* with ckpt_kill: the ranks' exit status */
  bool ckpt_forked;                       /* the ranks resume while forked writers write */
  bool kill_after;                        /* a kill asked for during a forked generation */
  unsigned kill_after_status;             /* ... and the exit status it asked for */
  long long ckpt_deadline;                /* abort if not draining by then, -1: none */
  long long stall_deadline;               /* release parked ranks if still stalled, -1: none */
  unsigned stall_grace_ms;                /* doubles with every release of this generation */
  uint64_t nudged_gen;                    /* the generation whose ranks were told NUDGE */
  long long ckpt_start_ms;                /* monotonic */
  long long ckpt_start_us, ckpt_drain_us; /* monotonic: CKPT sent, DRAIN sent (0: not yet) */
  long long ckpt_drained_us; /* monotonic: the last rank reported its drain done (0: not yet) */
  int64_t ckpt_start_wall;   /* CLOCK_REALTIME ms */
  uint64_t newest_started;
  uint64_t ckpt_base; /* the committed generation the one in progress is written against, 0 */

  uint64_t committed; /* last committed generation, 0: none */
  int64_t committed_wall;
  long long committed_span_ms;
  long long committed_sync_us;  /* CKPT to DRAIN: every rank at the safe point */
  long long committed_write_us; /* DRAIN to the last WRITTEN: drain, write, fsync */
  long long committed_drain_us; /* DRAIN until every rank is parked and drained */
  uint64_t committed_bytes;
  /* Its place in a chain of incremental generations (from its MANIFEST); with chain_known
   * false (a MANIFEST that did not read at start) the next generation is a full one. */
  uint64_t committed_needs, committed_depth;
  bool committed_chain_known;
  char last_error[CKPT_REASON_MAX];
  uint64_t last_error_gen;

  unsigned interval;
  long long next_ckpt_ms; /* -1: none scheduled */
  bool ending;            /* a kill checkpoint committed: the ranks are exiting */

  bool stopping; /* leave the loop once output is flushed */
  long long stop_deadline;
  int exit_code;

  char scratch[COORD_LINE_MAX]; /* for formatting one line at a time */
};

/* Blocks the signals that stop the coordinator, so that one arriving before the loop runs
 * (while it starts and detaches) waits for the loop instead of killing it halfway, with
 * its port file left behind. Returns 0 or -1 with errno. */
int coord_block_signals(const struct coord_config *cfg);

/* Sets up the coordinator around already opened resources (done by mana_coordinator.c)
 * and runs the loop until the job is over. Returns the process exit status. */
int coord_serve(struct coordinator *co);

/* Starts the loop's shutdown: output is flushed (for at most COORD_EXIT_GRACE_MS), then
 * coord_serve returns code. */
void coord_stop(struct coordinator *co, int code, const char *why);

/* The connection no longer counts as one waiting for HELLO. */
void coord_unpend(struct coordinator *co, struct conn *c);
/* Logs the refusal of a connection that has not authenticated (within the log budget)
 * and closes it after an ERROR line. */
void coord_refuse(struct coordinator *co, struct conn *c, const char *why);

/* Wall clock in ms. */
int64_t coord_wall_ms(void);

/* --- coord_conn.c ------------------------------------------------------------------- */
struct conn *conn_new(int fd, const char *peer, long long auth_deadline);
void conn_free(struct conn *c);
/* Queues bytes; a peer over COORD_OUT_MAX is marked dead. Tries to send at once. */
void conn_queue(struct conn *c, const char *data, size_t len);
/* Finishes line and queues it; a line that does not format is logged and dropped. */
void conn_send(struct conn *c, struct coord_line *line);
/* Sends "ERROR reason=..." and closes once it is delivered (or after a grace period). */
void conn_reject(struct conn *c, const char *reason);
/* Sends what is queued; marks the connection dead on a hard error. */
void conn_flush(struct conn *c);
bool conn_wants_write(const struct conn *c);

/* --- coord_hello.c ------------------------------------------------------------------ */
/* Handles the first line of a pending connection. */
void hello_handle(struct coordinator *co, struct conn *c, const struct coord_msg *msg);
/* Sets the world size (first time) or checks it (later). Returns 0 or -1 with why. */
int hello_learn_size(struct coordinator *co, uint64_t size, char *why, size_t whylen);
/* A rank connection is gone (closed, broken or dropped). */
void hello_rank_gone(struct coordinator *co, struct conn *c);

/* --- coord_job.c -------------------------------------------------------------------- */
void job_rank_message(struct coordinator *co, struct conn *c, const struct coord_msg *msg);
/* Starts a generation (origin says who asked, for the log); on refusal returns -1 with
 * the reason in why. */
int job_start_checkpoint(struct coordinator *co, const char *origin, uint64_t *gen, char *why,
                         size_t whylen);
/* A checkpoint that ends the job, the ranks exiting with status: a new generation, or the one
 * in progress made to end the job, or the last one when the job is already ending (every rank
 * that gets the checkpoint signal asks, and the end of an allocation may come in the middle of
 * a periodic checkpoint).  A non-zero status replaces a zero one.  *gen is the generation that
 * ends the job; *committed says whether it already is. */
int job_checkpoint_then_exit(struct coordinator *co, unsigned status, const char *origin,
                             uint64_t *gen, bool *committed, char *why, size_t whylen);
/* Aborts the generation in progress, if any, with the reason. */
void job_abort(struct coordinator *co, const char *reason);
/* A rank disconnected. */
void job_rank_disconnected(struct coordinator *co, size_t rank);
/* The size became known or a rank (re)connected: may arm the interval timer. */
void job_ranks_changed(struct coordinator *co);
/* Periodic checkpoint timer. */
void job_timer(struct coordinator *co);
/* The generation's own timers (stall release, safe-point time limit): the earliest
 * deadline (-1: none), and what to do once time has passed. */
long long job_deadline(const struct coordinator *co);
void job_check_deadlines(struct coordinator *co, long long now);
/* Sends a line to every connected rank. */
void job_broadcast(struct coordinator *co, struct coord_line *line);
/* Schedules the next periodic checkpoint interval seconds from now (none if 0). */
void job_schedule(struct coordinator *co);

/* --- coord_control.c ---------------------------------------------------------------- */
void control_message(struct coordinator *co, struct conn *c, const struct coord_msg *msg);
/* Delivers DONE for gen to every control connection waiting for it. */
void control_done(struct coordinator *co, uint64_t gen, bool committed, const char *reason);

#endif
