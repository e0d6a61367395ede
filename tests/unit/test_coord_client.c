/* Unit tests for the client library: coordinator/coord_linebuf.c, coord_net.c,
 * coord_client.c and coord_client_rank.c, against a socket the test plays the coordinator
 * on. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ckpt_signal.h"
#include "coord_client.h"
#include "coord_client_rank.h"
#include "coord_linebuf.h"

static char err[COORD_ERR_LEN * 2];

/* --- host:port ---------------------------------------------------------------------------- */

Test(coord_client, hostport)
{
  char host[COORD_HOST_MAX], port[COORD_PORT_MAX], joined[COORD_HOSTPORT_MAX];

  cr_assert_eq(coord_hostport_split("node-1.cluster:7779", host, port, err, sizeof(err)), 0);
  cr_assert_str_eq(host, "node-1.cluster");
  cr_assert_str_eq(port, "7779");
  cr_assert_eq(coord_hostport_split("[::1]:65535", host, port, err, sizeof(err)), 0);
  cr_assert_str_eq(host, "::1");
  cr_assert_str_eq(port, "65535");
  static const char *const bad[] = {"node",    "node:",    ":7779", "node:0", "node:65536",
                                    "node:7x", "::1:7779", "[]:1",  "[::1:1", "node:-1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    cr_assert_eq(coord_hostport_split(bad[i], host, port, err, sizeof(err)), -1, "accepted '%s'",
                 bad[i]);
  coord_hostport_join(joined, sizeof(joined), "::1", 80);
  cr_assert_str_eq(joined, "[::1]:80");
  coord_hostport_join(joined, sizeof(joined), "10.0.0.1", 80);
  cr_assert_str_eq(joined, "10.0.0.1:80");
}

/* --- line buffer -------------------------------------------------------------------------- */

Test(coord_client, linebuf_splits_lines)
{
  struct coord_linebuf lb;
  int p[2];
  char *line;
  size_t len;

  cr_assert_eq(pipe(p), 0);
  coord_linebuf_init(&lb, 64);
  cr_assert_eq(write(p[1], "ONE a=1\nTW", 10), 10);
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), 10);
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), 1);
  cr_assert_str_eq(line, "ONE a=1");
  cr_assert_eq(len, 7);
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), 0);
  cr_assert_eq(write(p[1], "O\n\n", 3), 3);
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), 3);
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), 1);
  cr_assert_str_eq(line, "TWO");
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), 1);
  cr_assert_eq(len, 0, "an empty line is a line (the parser rejects it)");
  close(p[1]);
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), 0, "end of file");
  close(p[0]);
  coord_linebuf_free(&lb);
}

Test(coord_client, linebuf_limits_lines)
{
  struct coord_linebuf lb;
  char junk[100];
  char *line;
  size_t len;
  int p[2];

  memset(junk, 'x', sizeof(junk));
  cr_assert_eq(pipe(p), 0);
  coord_linebuf_init(&lb, 16);
  cr_assert_eq(write(p[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), 16, "never more than the limit");
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), -1);
  errno = 0;
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), -1);
  cr_assert_eq(errno, ENOBUFS);
  close(p[0]);
  close(p[1]);
  coord_linebuf_free(&lb);

  /* exactly the limit, newline included, is fine */
  cr_assert_eq(pipe(p), 0);
  coord_linebuf_init(&lb, 16);
  cr_assert_eq(write(p[1], "ABCDEFGHIJKLMNO\n", 16), 16);
  cr_assert_eq(coord_linebuf_fill(&lb, p[0]), 16);
  cr_assert_eq(coord_linebuf_next(&lb, &line, &len), 1);
  cr_assert_eq(len, 15);
  close(p[0]);
  close(p[1]);
  coord_linebuf_free(&lb);
}

/* --- a connection to a coordinator played by the test -------------------------------------- */

struct fake_coordinator {
  int listen_fd, peer;
  struct coord_endpoint ep;
  struct coord_client *client;
  char dir[64];
};

static struct fake_coordinator fc;

static void connect_pair(void)
{
  char secret_path[128];
  unsigned port;

  snprintf(fc.dir, sizeof(fc.dir), "/tmp/test_coord_client.XXXXXX");
  cr_assert_not_null(mkdtemp(fc.dir));
  snprintf(secret_path, sizeof(secret_path), "%s/secret", fc.dir);
  cr_assert_eq(coord_secret_create(secret_path, fc.ep.secret, err, sizeof(err)), 0);
  fc.listen_fd = coord_listen("127.0.0.1", "0", &port, err, sizeof(err));
  cr_assert_geq(fc.listen_fd, 0, "%s", err);
  snprintf(fc.ep.host, sizeof(fc.ep.host), "127.0.0.1");
  snprintf(fc.ep.port, sizeof(fc.ep.port), "%u", port);
  fc.client = coord_client_connect(&fc.ep, 2000, err, sizeof(err));
  cr_assert_not_null(fc.client, "%s", err);
  for (int i = 0; i < 200 && (fc.peer = accept(fc.listen_fd, NULL, NULL)) < 0; i++)
    usleep(5000);
  cr_assert_geq(fc.peer, 0);
}

static void disconnect_pair(void)
{
  char cmd[128];

  coord_client_close(fc.client);
  close(fc.peer);
  close(fc.listen_fd);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", fc.dir);
  cr_assert_eq(system(cmd), 0);
}

/* Everything the client sent so far (it is small). */
static const char *peer_read(void)
{
  static char got[65536 * 4];
  size_t n = 0;

  usleep(20000);
  for (;;) {
    ssize_t k = recv(fc.peer, got + n, sizeof(got) - 1 - n, MSG_DONTWAIT);

    if (k <= 0)
      break;
    n += (size_t)k;
  }
  got[n] = '\0';
  return got;
}

static void peer_send(const char *text)
{
  cr_assert_eq(send(fc.peer, text, strlen(text), 0), (ssize_t)strlen(text));
}

TestSuite(coord_conn, .init = connect_pair, .fini = disconnect_pair);

Test(coord_conn, hello_rank)
{
  char expect[512];

  peer_send("WELCOME v=1\n");
  cr_assert_eq(coord_client_hello_rank(fc.client, 3, 8, 1234, "node 7", 1000), 0, "%s",
               coord_client_error(fc.client));
  snprintf(expect, sizeof(expect),
           "HELLO v=1 secret=%s role=rank rank=3 size=8 pid=1234 "
           "host=node%%207\n",
           fc.ep.secret);
  cr_assert_str_eq(peer_read(), expect);
}

Test(coord_conn, hello_refused)
{
  peer_send("ERROR reason=authentication%20failed\n");
  cr_assert_eq(coord_client_hello_control(fc.client, 1000), -1);
  cr_assert_str_eq(coord_client_error(fc.client),
                   "the coordinator refused us: authentication failed");
}

Test(coord_conn, hello_unanswered)
{
  cr_assert_eq(coord_client_hello_control(fc.client, 100), -1);
  cr_assert(strstr(coord_client_error(fc.client), "did not answer HELLO"), "%s",
            coord_client_error(fc.client));
}

Test(coord_conn, receive_timeout_and_close)
{
  struct coord_msg msg;

  cr_assert_eq(coord_client_recv(fc.client, &msg, 50), 0);
  peer_send("DRAIN gen=2\nCOMMITTED gen=2 then=exit\n");
  cr_assert_eq(coord_client_recv(fc.client, &msg, 1000), 1);
  cr_assert_str_eq(msg.verb, "DRAIN");
  cr_assert_eq(coord_client_recv(fc.client, &msg, 0), 1, "already buffered");
  cr_assert_str_eq(msg.verb, "COMMITTED");
  close(fc.peer);
  fc.peer = -1;
  cr_assert_eq(coord_client_recv(fc.client, &msg, 1000), -1);
  cr_assert(strstr(coord_client_error(fc.client), "closed"), "%s", coord_client_error(fc.client));
}

Test(coord_conn, malformed_from_coordinator)
{
  struct coord_msg msg;

  peer_send("drain\n");
  cr_assert_eq(coord_client_recv(fc.client, &msg, 1000), -1);
  cr_assert(strstr(coord_client_error(fc.client), "malformed"), "%s",
            coord_client_error(fc.client));
}

Test(coord_conn, rank_messages)
{
  const struct coord_entry seq[2] = {{0xab, 4}, {0xcd, 0}};

  cr_assert_eq(coord_send_seq(fc.client, 1, seq, 2), 0);
  cr_assert_eq(coord_send_raise(fc.client, 1, 0xab, 5), 0);
  cr_assert_eq(coord_send_running(fc.client, 1, 2, true), 0);
  cr_assert_eq(coord_send_running(fc.client, 1, 2, false), 0);
  cr_assert_eq(coord_send_parked_at(fc.client, 1, 2, 0xab, 5), 0);
  cr_assert_eq(coord_send_parked(fc.client, 1, 2), 0);
  cr_assert_eq(coord_send_progress(fc.client, 1, 10), 0);
  cr_assert_eq(coord_send_written(fc.client, 1, 20, "rank-000000.img", "00ff", 0), 0);
  cr_assert_eq(coord_send_failed(fc.client, 1, "disk full"), 0);
  cr_assert_eq(coord_send_refuse(fc.client, 1, "MPI_Win"), 0);
  cr_assert_str_eq(peer_read(), "SEQ gen=1 n=2 t=00000000000000ab:4,00000000000000cd:0\n"
                                "RAISE gen=1 ggid=00000000000000ab target=5\n"
                                "RUNNING gen=1 epoch=2 blocked=1\n"
                                "RUNNING gen=1 epoch=2\n"
                                "PARKED gen=1 epoch=2 ggid=00000000000000ab seq=5\n"
                                "PARKED gen=1 epoch=2\n"
                                "PROGRESS gen=1 bytes=10\n"
                                "WRITTEN gen=1 bytes=20 file=rank-000000.img xxh=00ff\n"
                                "FAILED gen=1 reason=disk%20full\n"
                                "REFUSE gen=1 reason=MPI_Win\n");
}

Test(coord_conn, long_seq_is_split)
{
  static struct coord_entry seq[2500];
  const char *text, *line;
  size_t lines = 0, more = 0, entries = 0;

  for (size_t i = 0; i < 2500; i++)
    seq[i] = (struct coord_entry){.ggid = i + 1, .value = i};
  cr_assert_eq(coord_send_seq(fc.client, 9, seq, 2500), 0);
  text = peer_read();
  for (line = text; *line; line = strchr(line, '\n') + 1) {
    const char *end = strchr(line, '\n');

    cr_assert_not_null(end);
    cr_assert_lt((size_t)(end - line), (size_t)COORD_LINE_MAX);
    lines++;
    more += strstr(line, " more=1") && strstr(line, " more=1") < end;
    for (const char *p = line; p < end; p++)
      entries += *p == ':';
  }
  cr_assert_eq(lines, 3);
  cr_assert_eq(more, 2);
  cr_assert_eq(entries, 2500);
}

/* --- decoding commands -------------------------------------------------------------------- */

static int decode(const char *text, struct coord_cmd *cmd)
{
  static char line[512];
  static struct coord_msg msg;

  snprintf(line, sizeof(line), "%s", text);
  cr_assert_eq(coord_msg_parse(line, strlen(line), &msg, err, sizeof(err)), 0, "%s", err);
  return coord_cmd_decode(&msg, cmd, err, sizeof(err));
}

Test(coord_client, decode_commands)
{
  struct coord_cmd cmd;

  cr_assert_eq(decode("CKPT gen=3 dir=/ck/gen-000003", &cmd), 0, "%s", err);
  cr_assert_eq(cmd.kind, COORD_CMD_CKPT);
  cr_assert_eq(cmd.gen, 3);
  cr_assert_str_eq(cmd.dir, "/ck/gen-000003");
  cr_assert_eq(decode("TARGETS gen=3 epoch=2 n=2 t=a:1,b:2 more=1", &cmd), 0, "%s", err);
  cr_assert_eq(cmd.kind, COORD_CMD_TARGETS);
  cr_assert_eq(cmd.epoch, 2);
  cr_assert(cmd.more);
  cr_assert_eq(cmd.count, 2);
  cr_assert_str_eq(cmd.table, "a:1,b:2");
  cr_assert_eq(decode("TARGETS gen=3 epoch=1 n=0 t=", &cmd), 0, "%s", err);
  cr_assert_eq(cmd.count, 0);
  cr_assert_eq(decode("DRAIN gen=3", &cmd), 0);
  cr_assert_eq(cmd.kind, COORD_CMD_DRAIN);
  cr_assert_eq(decode("NUDGE gen=3", &cmd), 0);
  cr_assert_eq(cmd.kind, COORD_CMD_NUDGE);
  cr_assert_eq(cmd.gen, 3);
  cr_assert_eq(decode("COMMITTED gen=3", &cmd), 0);
  cr_assert(!cmd.then_exit);
  cr_assert_eq(decode("COMMITTED gen=3 then=exit", &cmd), 0);
  cr_assert(cmd.then_exit);
  cr_assert_eq(cmd.exit_status, 0);
  cr_assert_eq(decode("COMMITTED gen=3 then=exit status=85", &cmd), 0);
  cr_assert(cmd.then_exit);
  cr_assert_eq(cmd.exit_status, 85);
  cr_assert_eq(decode("ABORT gen=3 reason=rank%201%20refused", &cmd), 0);
  cr_assert_str_eq(cmd.reason, "rank 1 refused");
  cr_assert_eq(decode("QUIT", &cmd), 0);
  cr_assert_eq(cmd.kind, COORD_CMD_QUIT);
  cr_assert_str_eq(cmd.reason, "");
}

Test(coord_client, decode_rejects)
{
  struct coord_cmd cmd;

  cr_assert_eq(decode("TARGETS gen=3 epoch=2 n=3 t=a:1,b:2", &cmd), -1);
  cr_assert_eq(decode("TARGETS gen=3 n=0 t=", &cmd), -1);
  cr_assert_eq(decode("CKPT gen=3", &cmd), -1);
  cr_assert_eq(decode("DRAIN", &cmd), -1);
  cr_assert_eq(decode("HELLO gen=1", &cmd), -1);
  cr_assert(strstr(err, "unknown command HELLO"), "%s", err);
}

/* --- the environment ---------------------------------------------------------------------- */

Test(coord_client, endpoint_from_environment)
{
  struct coord_endpoint ep;
  struct coord_client *c;

  unsetenv(COORD_ENV_ADDRESS);
  unsetenv(COORD_ENV_SECRET);
  cr_assert_eq(coord_endpoint_from_env(&ep, err, sizeof(err)), 1, "no coordinator");
  cr_assert_eq(coord_rank_open(0, 1, 100, &c, err, sizeof(err)), 1);
  cr_assert_null(c);
  setenv(COORD_ENV_ADDRESS, "127.0.0.1:9", 1);
  cr_assert_eq(coord_endpoint_from_env(&ep, err, sizeof(err)), -1);
  cr_assert(strstr(err, COORD_ENV_SECRET), "%s", err);
  setenv(COORD_ENV_SECRET, "/nonexistent/secret", 1);
  cr_assert_eq(coord_endpoint_from_env(&ep, err, sizeof(err)), -1);
  cr_assert(strstr(err, "/nonexistent/secret"), "%s", err);
  setenv(COORD_ENV_ADDRESS, "no-port", 1);
  cr_assert_eq(coord_endpoint_from_env(&ep, err, sizeof(err)), -1);
  cr_assert(strstr(err, "HOST:PORT"), "%s", err);
}

Test(coord_client, connect_refused)
{
  struct coord_endpoint ep = {.host = "127.0.0.1"};
  unsigned port;
  int fd = coord_listen("127.0.0.1", "0", &port, err, sizeof(err));

  cr_assert_geq(fd, 0, "%s", err);
  close(fd); /* now nobody listens there */
  snprintf(ep.port, sizeof(ep.port), "%u", port);
  cr_assert_null(coord_client_connect(&ep, 1000, err, sizeof(err)));
  cr_assert(strstr(err, "Connection refused"), "%s", err);
  cr_assert(strstr(err, "127.0.0.1:"), "%s", err);
}

Test(coord_client, committed_bad_exit_status)
{
  struct coord_cmd cmd;

  cr_assert_neq(decode("COMMITTED gen=3 then=exit status=256", &cmd), 0);
  cr_assert_neq(decode("COMMITTED gen=3 then=exit status=-1", &cmd), 0);
}

Test(ckpt_signal, names_and_numbers)
{
  const char *why;
  int sig = 0;

  cr_assert_eq(ckpt_signal_parse("USR1", &sig, &why), 0);
  cr_assert_eq(sig, SIGUSR1);
  cr_assert_eq(ckpt_signal_parse("SIGUSR2", &sig, &why), 0);
  cr_assert_eq(sig, SIGUSR2);
  cr_assert_eq(ckpt_signal_parse("usr1", &sig, &why), 0);
  cr_assert_eq(sig, SIGUSR1);
  cr_assert_eq(ckpt_signal_parse("15", &sig, &why), 0);
  cr_assert_eq(sig, SIGTERM);
  cr_assert_eq(ckpt_signal_parse("RTMIN+2", &sig, &why), 0);
  cr_assert_eq(sig, SIGRTMIN + 2);
  char name[16];
  cr_assert_str_eq(ckpt_signal_name(SIGRTMIN + 2, name, sizeof(name)), "RTMIN+2");
  cr_assert_str_eq(ckpt_signal_name(SIGUSR1, name, sizeof(name)), "USR1");
}

Test(ckpt_signal, refusals)
{
  const char *why;
  int sig = 0;
  const char *refused[] = {"KILL", "SIGSTOP", "SYS", "SEGV", "CHLD", "62",       "9",
                           "0",    "65",      "",    "USR3", "-10",  "RTMIN+99", "12x"};

  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
    cr_assert_neq(ckpt_signal_parse(refused[i], &sig, &why), 0, "%s was accepted", refused[i]);
  cr_assert_eq(ckpt_signal_parse("KILL", &sig, &why), -1);
  cr_assert(strstr(why, "cannot be caught"), "%s", why);
  enum ckpt_signal_action a;
  cr_assert_eq(ckpt_signal_action_parse("kill", &a), 0);
  cr_assert_eq(a, CKPT_SIGNAL_KILL);
  cr_assert_eq(ckpt_signal_action_parse("checkpoint", &a), 0);
  cr_assert_eq(a, CKPT_SIGNAL_CHECKPOINT);
  cr_assert_neq(ckpt_signal_action_parse("Kill", &a), 0);
}
