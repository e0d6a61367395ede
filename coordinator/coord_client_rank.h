/* coord_client_rank: the rank's side of the checkpoint protocol, as typed calls.
 *
 * The coordinator drives a checkpoint of generation G with commands (CKPT, TARGETS, DRAIN,
 * COMMITTED, ABORT, QUIT) and the rank answers with the messages below. Each send returns
 * 0, or -1 with coord_client_error() set. docs/coordinator-protocol.md gives the order.
 */
#ifndef MANA_COORD_CLIENT_RANK_H
#define MANA_COORD_CLIENT_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_client.h"

/* Rank -> coordinator. Texts (reason, file) are escaped as needed; xxh is the image
 * checksum as 8 to 64 lowercase hex digits. */
int coord_send_refuse(struct coord_client *c, uint64_t gen, const char *reason);
/* The whole table; sent as several SEQ lines (more=1) when longer than COORD_TABLE_CHUNK. */
int coord_send_seq(struct coord_client *c, uint64_t gen, const struct coord_entry *seq,
                   size_t count);
int coord_send_raise(struct coord_client *c, uint64_t gen, uint64_t ggid, uint64_t target);
/* The answer to every TARGETS epoch (and any change in between), one of:
 *   parked_at   all targets met, waiting at the entry of a collective on ggid whose SEQ
 *               there is seq (the coordinator may release it if the job stalls)
 *   parked      all targets met, not at a collective (computing, in p2p, finished)
 *   running     a target unmet; blocked: waiting inside MPI (p2p wait or collective) */
int coord_send_parked_at(struct coord_client *c, uint64_t gen, uint64_t epoch, uint64_t ggid,
                         uint64_t seq);
int coord_send_parked(struct coord_client *c, uint64_t gen, uint64_t epoch);
int coord_send_running(struct coord_client *c, uint64_t gen, uint64_t epoch, bool blocked);
/* RUNNING blocked=1 with where another of the rank's threads is held: at the entry of a
 * collective on ggid, its SEQ there seq (under MPI_THREAD_MULTIPLE). */
int coord_send_blocked_held(struct coord_client *c, uint64_t gen, uint64_t epoch, uint64_t ggid,
                            uint64_t seq);
/* After DRAIN: every application thread is parked; the rank waits for GO to drain. */
int coord_send_suspended(struct coord_client *c, uint64_t gen);
int coord_send_progress(struct coord_client *c, uint64_t gen, uint64_t bytes);
/* oldest: the oldest generation whose image the new image refers to (its own generation for
 * a full image); 0 leaves it out, which the coordinator reads as the generation itself. */
int coord_send_written(struct coord_client *c, uint64_t gen, uint64_t bytes, const char *file,
                       const char *xxh, uint64_t oldest);
int coord_send_failed(struct coord_client *c, uint64_t gen, const char *reason);

/* Coordinator -> rank. */
enum coord_cmd_kind {
  COORD_CMD_CKPT,      /* start generation gen, images go to dir */
  COORD_CMD_TARGETS,   /* targets of epoch (all of them for epoch 1, else the change) */
  COORD_CMD_DRAIN,     /* every rank is at a safe point: park every thread, SUSPENDED */
  COORD_CMD_NUDGE,     /* blocked ranks wait for done ones: a held rank goes on (no answer) */
  COORD_CMD_GO,        /* every rank is suspended: drain and write */
  COORD_CMD_COMMITTED, /* the generation is committed: resume, or exit if then_exit */
  COORD_CMD_ABORT,     /* the generation is abandoned: resume */
  COORD_CMD_QUIT       /* the job is being killed without a checkpoint */
};

struct coord_cmd {
  enum coord_cmd_kind kind;
  uint64_t gen;         /* not for QUIT */
  uint64_t epoch;       /* TARGETS */
  bool more;            /* TARGETS: more lines of the same epoch follow */
  bool then_exit;       /* COMMITTED */
  bool fork;            /* CKPT: a forked process writes the image; resume once drained */
  unsigned exit_status; /* COMMITTED with then_exit: the status to exit with */
  const char *dir;      /* CKPT */
  const char *base;     /* CKPT: the committed generation to write against, NULL for full */
  const char *reason;   /* ABORT, QUIT ("" when none) */
  const char *table;    /* TARGETS: the raw t= value, parse with coord_table_parse() */
  size_t count;         /* TARGETS: entries in table (the n= field, checked) */
};

/* Decodes and checks a command; the strings point into msg. Returns 0, or -1 with err
 * (an unknown verb included). */
int coord_cmd_decode(const struct coord_msg *msg, struct coord_cmd *cmd, char *err, size_t errlen);

#endif
