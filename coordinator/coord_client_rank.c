/* coord_client_rank: typed rank-side messages (see coord_client_rank.h). */
#include "coord_client_rank.h"

#include <stdio.h>
#include <string.h>
#include "mana/fail.h"

static struct coord_line *with_gen(struct coord_client *c, const char *verb, uint64_t gen)
{
  struct coord_line *line = coord_client_line(c, verb);

  coord_line_u64(line, "gen", gen);
  return line;
}

int coord_send_refuse(struct coord_client *c, uint64_t gen, const char *reason)
{
  struct coord_line *line = with_gen(c, "REFUSE", gen);

  coord_line_str(line, "reason", reason);
  return coord_client_send(c, line);
}

int coord_send_seq(struct coord_client *c, uint64_t gen, const struct coord_entry *seq,
                   size_t count)
{
  size_t sent = 0;

  do {
    size_t chunk = count - sent > COORD_TABLE_CHUNK ? COORD_TABLE_CHUNK : count - sent;
    struct coord_line *line = with_gen(c, "SEQ", gen);

    coord_line_u64(line, "n", chunk);
    coord_line_table(line, "t", seq + sent, chunk);
    sent += chunk;
    if (sent < count)
      coord_line_u64(line, "more", 1);
    if (coord_client_send(c, line))
      return -1;
  } while (sent < count);
  return 0;
}

int coord_send_raise(struct coord_client *c, uint64_t gen, uint64_t ggid, uint64_t target)
{
  struct coord_line *line = with_gen(c, "RAISE", gen);

  coord_line_x64(line, "ggid", ggid);
  coord_line_u64(line, "target", target);
  return coord_client_send(c, line);
}

int coord_send_parked(struct coord_client *c, uint64_t gen, uint64_t epoch)
{
  struct coord_line *line = with_gen(c, "PARKED", gen);

  coord_line_u64(line, "epoch", epoch);
  return coord_client_send(c, line);
}

int coord_send_parked_at(struct coord_client *c, uint64_t gen, uint64_t epoch, uint64_t ggid,
                         uint64_t seq)
{
  struct coord_line *line = with_gen(c, "PARKED", gen);

  coord_line_u64(line, "epoch", epoch);
  coord_line_x64(line, "ggid", ggid);
  coord_line_u64(line, "seq", seq);
  return coord_client_send(c, line);
}

int coord_send_running(struct coord_client *c, uint64_t gen, uint64_t epoch, bool blocked)
{
  struct coord_line *line = with_gen(c, "RUNNING", gen);

  coord_line_u64(line, "epoch", epoch);
  if (blocked)
    coord_line_u64(line, "blocked", 1);
  return coord_client_send(c, line);
}

int coord_send_blocked_held(struct coord_client *c, uint64_t gen, uint64_t epoch, uint64_t ggid,
                            uint64_t seq)
{
  struct coord_line *line = with_gen(c, "RUNNING", gen);

  coord_line_u64(line, "epoch", epoch);
  coord_line_u64(line, "blocked", 1);
  coord_line_x64(line, "ggid", ggid);
  coord_line_u64(line, "seq", seq);
  return coord_client_send(c, line);
}

int coord_send_suspended(struct coord_client *c, uint64_t gen)
{
  return coord_client_send(c, with_gen(c, "SUSPENDED", gen));
}

int coord_send_progress(struct coord_client *c, uint64_t gen, uint64_t bytes)
{
  struct coord_line *line = with_gen(c, "PROGRESS", gen);

  coord_line_u64(line, "bytes", bytes);
  return coord_client_send(c, line);
}

int coord_send_written(struct coord_client *c, uint64_t gen, uint64_t bytes, const char *file,
                       const char *xxh, uint64_t oldest)
{
  struct coord_line *line = with_gen(c, "WRITTEN", gen);

  coord_line_u64(line, "bytes", bytes);
  coord_line_str(line, "file", file);
  coord_line_str(line, "xxh", xxh);
  if (oldest)
    coord_line_u64(line, "oldest", oldest);
  return coord_client_send(c, line);
}

int coord_send_failed(struct coord_client *c, uint64_t gen, const char *reason)
{
  struct coord_line *line = with_gen(c, "FAILED", gen);

  coord_line_str(line, "reason", reason);
  return coord_client_send(c, line);
}

/* ------------------------------------------------------------------------------------- */
/* Commands                                                                              */
/* ------------------------------------------------------------------------------------- */

static int decode_targets(const struct coord_msg *msg, struct coord_cmd *cmd, char *err,
                          size_t errlen)
{
  uint64_t n;

  if (coord_msg_u64(msg, "epoch", &cmd->epoch, err, errlen) ||
      coord_msg_u64(msg, "n", &n, err, errlen) ||
      coord_msg_str(msg, "t", &cmd->table, err, errlen) ||
      coord_msg_flag(msg, "more", &cmd->more, err, errlen))
    return -1;
  if (n != coord_table_count(cmd->table) || n > COORD_TABLE_CHUNK) {
    return mana_fail(err, errlen, 0, "TARGETS: n=%llu does not match the table",
                     (unsigned long long)n);
  }
  cmd->count = (size_t)n;
  return 0;
}

int coord_cmd_decode(const struct coord_msg *msg, struct coord_cmd *cmd, char *err, size_t errlen)
{
  const char *verb = msg->verb;

  memset(cmd, 0, sizeof(*cmd));
  cmd->reason = "";
  if (strcmp(verb, "QUIT") == 0) {
    cmd->kind = COORD_CMD_QUIT;
    if (coord_msg_get(msg, "reason"))
      cmd->reason = coord_msg_get(msg, "reason");
    return 0;
  }
  if (coord_msg_u64(msg, "gen", &cmd->gen, err, errlen))
    return -1;
  if (strcmp(verb, "CKPT") == 0) {
    cmd->kind = COORD_CMD_CKPT;
    cmd->fork = false;
    if (coord_msg_get(msg, "fork") && coord_msg_flag(msg, "fork", &cmd->fork, err, errlen))
      return -1;
    if (coord_msg_get(msg, "base") && coord_msg_str(msg, "base", &cmd->base, err, errlen))
      return -1;
    if (cmd->base && cmd->base[0] != '/')
      return mana_fail(err, errlen, 0, "CKPT: base=%s is not an absolute path", cmd->base);
    return coord_msg_str(msg, "dir", &cmd->dir, err, errlen);
  }
  if (strcmp(verb, "TARGETS") == 0) {
    cmd->kind = COORD_CMD_TARGETS;
    return decode_targets(msg, cmd, err, errlen);
  }
  if (strcmp(verb, "DRAIN") == 0) {
    cmd->kind = COORD_CMD_DRAIN;
    return 0;
  }
  if (strcmp(verb, "NUDGE") == 0) {
    cmd->kind = COORD_CMD_NUDGE;
    return 0;
  }
  if (strcmp(verb, "GO") == 0) {
    cmd->kind = COORD_CMD_GO;
    return 0;
  }
  if (strcmp(verb, "COMMITTED") == 0) {
    const char *then = coord_msg_get(msg, "then");

    uint64_t status = 0;

    cmd->kind = COORD_CMD_COMMITTED;
    cmd->then_exit = then && strcmp(then, "exit") == 0;
    if (coord_msg_get(msg, "status") &&
        (coord_msg_u64(msg, "status", &status, err, errlen) || status > 255))
      return mana_fail(err, errlen, 0, "COMMITTED with a bad exit status");
    cmd->exit_status = (unsigned)status;
    return 0;
  }
  if (strcmp(verb, "ABORT") == 0) {
    cmd->kind = COORD_CMD_ABORT;
    if (coord_msg_get(msg, "reason"))
      cmd->reason = coord_msg_get(msg, "reason");
    return 0;
  }
  return mana_fail(err, errlen, 0, "unknown command %s from the coordinator", verb);
}
