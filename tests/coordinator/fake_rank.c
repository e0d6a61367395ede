/* fake_rank: plays the ranks of an MPI job against a real mana_coordinator, through the
 * same client library mana_lh links, so the coordinator can be tested without MPI.
 *
 *   fake_rank --size N [options]
 *
 * starts N processes, one per rank (or only rank R with --only R). Each connects with
 * MANA_COORDINATOR / MANA_SECRET_FILE and then follows the checkpoint protocol the way the
 * real engine does: SEQ of its collective-clock table, running to the TARGETS, PARKED at
 * every epoch, SUSPENDED on DRAIN, writing an image on GO and WRITTEN with its XXH64. Each rank prints one
 * line per event ("rank 1: committed gen 3") for the test script to check, and "VIOLATION"
 * when the coordinator breaks a promise (a DRAIN before every rank met its targets).
 *
 * The collective-clock table of rank r: groups 0x1000+g for g < --groups (every rank is a
 * member, seq = 10*r + g), and group 0xe0 for even ranks only (seq = r). So the targets the
 * coordinator must compute are known: 10*(N-1)+g and the largest even rank.
 *
 * Statuses: every rank answers each TARGETS epoch; even ranks park "at the entry of a
 * collective" on group 0x1000 (PARKED with ggid/seq), odd ranks park "elsewhere" (PARKED
 * without a location), and a rank that must move first says RUNNING.
 *
 * Misbehaviour on demand, each as R:G (rank R in generation G; G = 0: every generation):
 *   --refuse R:G      REFUSE instead of SEQ
 *   --fail R:G        FAILED instead of WRITTEN
 *   --disconnect R:G  exit on DRAIN, mid-checkpoint
 *   --unparked R:G    FAILED instead of SUSPENDED (a thread that would not park): no rank
 *                     may then be told GO
 *   --raise R:G       after the first TARGETS, pass one more collective on group 0x1000
 *                     and RAISE its target
 *   --stall R:G       answer the first TARGETS with RUNNING blocked=1, as if waiting for a
 *                     message the others send only after their next collective; unblock
 *                     when a later epoch arrives (the coordinator's stall release)
 *   --full R:G        write a self-contained image even when CKPT names a base (as a rank
 *                     that cannot write against it does); repeatable
 *   --oldest R:G:O    report oldest=O in WRITTEN (O = 0: leave it out, as older ranks do);
 *                     repeatable
 * and --delay-park R:MS, --exit-after N (commits), --lifetime S (seconds).
 *
 * Incremental checkpoints: a rank told base=DIR prints it ("ckpt gen 3 base DIR") and plays
 * an image that refers to every page the base's chain holds, so it reports as oldest what
 * the base's MANIFEST says that base needs; without a base it reports its own generation.
 */
#define _GNU_SOURCE
#include "coord_client.h"
#include "coord_client_rank.h"
#include "coord_manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define MAX_GROUPS 4096
#define GROUP_BASE 0x1000
#define GROUP_EVEN 0xe0
#define MAX_REPEAT 8

/* Rank R misbehaves in generation G (0: in every generation); R < 0: nobody. */
struct spec {
  int rank;
  unsigned gen;
};

struct options {
  unsigned size, groups, exit_after, lifetime_s;
  int only, delay_rank;
  struct spec refuse, fail, disconnect, raise, stall, unparked;
  struct spec full[MAX_REPEAT], oldest[MAX_REPEAT]; /* repeatable; rank < 0 ends the list */
  uint64_t oldest_value[MAX_REPEAT];                /* --oldest: what oldest[i] reports */
  unsigned delay_ms;
  unsigned long long image_bytes;
};

struct rank {
  const struct options *o;
  unsigned id;
  struct coord_client *c;
  struct coord_entry seq[MAX_GROUPS + 1];
  size_t nseq;
  struct coord_entry target[MAX_GROUPS + 1]; /* same order as seq */
  uint64_t gen, epoch;
  uint64_t oldest; /* what WRITTEN reports, 0: nothing */
  char dir[4096];
  bool in_ckpt, parked, raised, blocked;
  unsigned commits;
};

static void say(const struct rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const struct rank *r, const char *fmt, ...)
{
  char text[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  printf("rank %u: %s\n", r->id, text);
  fflush(stdout);
}

static int lost(struct rank *r)
{
  say(r, "error: %s", coord_client_error(r->c));
  return 1;
}

static void build_table(struct rank *r)
{
  r->nseq = 0;
  for (unsigned g = 0; g < r->o->groups; g++) {
    r->seq[r->nseq].ggid = GROUP_BASE + g;
    r->seq[r->nseq].value = 10ull * r->id + g;
    r->nseq++;
  }
  if (r->id % 2 == 0) {
    r->seq[r->nseq].ggid = GROUP_EVEN;
    r->seq[r->nseq].value = r->id;
    r->nseq++;
  }
  for (size_t i = 0; i < r->nseq; i++)
    r->target[i] = r->seq[i];
}

static bool me(struct spec who, const struct rank *r)
{
  return who.rank >= 0 && (unsigned)who.rank == r->id && (!who.gen || who.gen == r->gen);
}

/* The index of the entry of a repeatable option that names r now, -1: none. */
static int which(const struct spec *list, const struct rank *r)
{
  for (int i = 0; i < MAX_REPEAT && list[i].rank >= 0; i++)
    if (me(list[i], r))
      return i;
  return -1;
}

/* ------------------------------------------------------------------------------------- */
/* The protocol                                                                          */
/* ------------------------------------------------------------------------------------- */

static int on_ckpt(struct rank *r, const struct coord_cmd *cmd)
{
  r->gen = cmd->gen;
  r->epoch = 0;
  r->in_ckpt = true;
  r->parked = r->raised = r->blocked = false;
  snprintf(r->dir, sizeof(r->dir), "%s", cmd->dir);
  say(r, "ckpt gen %" PRIu64 "%s%s%s", cmd->gen, cmd->fork ? " fork" : "",
      cmd->base ? " base " : "", cmd->base ? cmd->base : "");
  r->oldest = cmd->gen;
  if (cmd->base && which(r->o->full, r) < 0) {
    struct manifest_chain chain;
    char err[COORD_ERR_LEN * 2];

    if (manifest_chain_of(cmd->base, &chain, err, sizeof(err)) != 0)
      say(r, "VIOLATION: base that is not committed: %s", err);
    else
      r->oldest = chain.needs;
  }
  if (which(r->o->oldest, r) >= 0)
    r->oldest = r->o->oldest_value[which(r->o->oldest, r)];
  if (me(r->o->refuse, r))
    return coord_send_refuse(r->c, r->gen, "MPI_Win_allocate memory (simulated)") ? lost(r) : 0;
  return coord_send_seq(r->c, r->gen, r->seq, r->nseq) ? lost(r) : 0;
}

static void apply_targets(struct rank *r, const struct coord_cmd *cmd)
{
  struct coord_entry entries[COORD_TABLE_CHUNK];
  char err[COORD_ERR_LEN];
  size_t n;

  if (coord_table_parse(cmd->table, entries, COORD_TABLE_CHUNK, &n, err, sizeof(err))) {
    say(r, "VIOLATION: bad TARGETS table: %s", err);
    return;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < r->nseq; k++)
      if (r->target[k].ggid == entries[i].ggid)
        r->target[k].value = entries[i].value;
}

/* Runs the "program" until every own group reached its target. Returns true if it had
 * to move. */
static bool run_to_targets(struct rank *r)
{
  bool moved = false;

  for (size_t k = 0; k < r->nseq; k++) {
    if (r->seq[k].value < r->target[k].value) {
      r->seq[k].value = r->target[k].value;
      moved = true;
    }
  }
  return moved;
}

static int park(struct rank *r)
{
  int rc;

  if (r->o->delay_rank >= 0 && (unsigned)r->o->delay_rank == r->id)
    nanosleep(&(struct timespec){.tv_sec = r->o->delay_ms / 1000,
                                 .tv_nsec = (r->o->delay_ms % 1000) * 1000000L},
              NULL);
  r->parked = true;
  if (r->id % 2 == 0 && r->nseq)
    rc = coord_send_parked_at(r->c, r->gen, r->epoch, r->seq[0].ggid, r->seq[0].value);
  else
    rc = coord_send_parked(r->c, r->gen, r->epoch);
  return rc ? lost(r) : 0;
}

static bool behind(const struct rank *r)
{
  for (size_t k = 0; k < r->nseq; k++)
    if (r->seq[k].value < r->target[k].value)
      return true;
  return false;
}

/* The raiser passes one more collective on group 0 than the targets asked for. */
static int raise_group0(struct rank *r)
{
  r->raised = true;
  r->seq[0].value = r->target[0].value + 1;
  say(r, "raise ggid %x to %" PRIu64, GROUP_BASE, r->seq[0].value);
  return coord_send_raise(r->c, r->gen, r->seq[0].ggid, r->seq[0].value) ? lost(r) : 0;
}

static int on_targets(struct rank *r, const struct coord_cmd *cmd)
{
  apply_targets(r, cmd);
  if (cmd->more)
    return 0;
  r->epoch = cmd->epoch;
  say(r, "targets epoch %" PRIu64, r->epoch);
  if (r->epoch == 1 && me(r->o->stall, r)) {
    r->blocked = true;
    say(r, "blocked");
    return coord_send_running(r->c, r->gen, r->epoch, true) ? lost(r) : 0;
  }
  if (r->blocked)
    say(r, "released");
  r->blocked = false;
  if (me(r->o->raise, r) && !r->raised && r->o->groups > 0) {
    run_to_targets(r);
    if (coord_send_running(r->c, r->gen, r->epoch, false))
      return lost(r);
    r->parked = false;
    return raise_group0(r);
  }
  if (behind(r)) {
    if (coord_send_running(r->c, r->gen, r->epoch, false))
      return lost(r);
    r->parked = false;
    run_to_targets(r);
  }
  return park(r);
}

static void fill_pattern(char *buf, size_t len, uint64_t seed)
{
  for (size_t i = 0; i < len; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    buf[i] = (char)(seed >> 56);
  }
}

/* Writes rank-R.img of the requested size; returns its XXH64, or -1 on failure. */
static int write_image(struct rank *r, char *name, size_t namelen, char *xxh, size_t xxhlen)
{
  char path[4200], *data;
  size_t len = (size_t)r->o->image_bytes;
  int fd, rc = 0;

  snprintf(name, namelen, "rank-%06u.img", r->id);
  snprintf(path, sizeof(path), "%s/%s", r->dir, name);
  data = malloc(len ? len : 1);
  if (!data)
    return -1;
  fill_pattern(data, len, r->gen * 1000 + r->id);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, data, len) != (ssize_t)len || fsync(fd) != 0)
    rc = -1;
  if (fd >= 0)
    close(fd);
  snprintf(xxh, xxhlen, "%016llx", (unsigned long long)XXH64(data, len, 0));
  free(data);
  return rc;
}

static int on_drain(struct rank *r)
{
  for (size_t k = 0; k < r->nseq; k++)
    if (r->seq[k].value != r->target[k].value)
      say(r, "VIOLATION: drained with ggid %" PRIx64 " at %" PRIu64 " but target %" PRIu64,
          r->seq[k].ggid, r->seq[k].value, r->target[k].value);
  say(r, "drain gen %" PRIu64 " epoch %" PRIu64 " seq0 %" PRIu64, r->gen, r->epoch,
      r->nseq ? r->seq[0].value : 0);
  if (me(r->o->disconnect, r)) {
    say(r, "disconnecting mid-checkpoint");
    exit(3);
  }
  if (me(r->o->unparked, r)) {
    if (coord_send_failed(r->c, r->gen, "1 of 2 threads parked (simulated)"))
      return lost(r);
    return 0;
  }
  return coord_send_suspended(r->c, r->gen) ? lost(r) : 0;
}

static int on_go(struct rank *r)
{
  char name[64], xxh[32];

  say(r, "go gen %" PRIu64, r->gen);
  if (me(r->o->fail, r))
    return coord_send_failed(r->c, r->gen, "disk full (simulated)") ? lost(r) : 0;
  if (coord_send_progress(r->c, r->gen, r->o->image_bytes / 2))
    return lost(r);
  if (write_image(r, name, sizeof(name), xxh, sizeof(xxh)))
    return coord_send_failed(r->c, r->gen, strerror(errno)) ? lost(r) : 0;
  say(r, "written %s %s", name, xxh);
  return coord_send_written(r->c, r->gen, r->o->image_bytes, name, xxh, r->oldest) ? lost(r) : 0;
}

/* Returns 0 to go on, 1 on an error, 2 to exit normally. */
static int on_command(struct rank *r, const struct coord_cmd *cmd)
{
  switch (cmd->kind) {
  case COORD_CMD_CKPT:
    return on_ckpt(r, cmd);
  case COORD_CMD_TARGETS:
    return on_targets(r, cmd);
  case COORD_CMD_DRAIN:
    return on_drain(r);
  case COORD_CMD_NUDGE:
    say(r, "nudge gen %" PRIu64, cmd->gen);
    return 0;
  case COORD_CMD_GO:
    return on_go(r);
  case COORD_CMD_COMMITTED:
    r->in_ckpt = false;
    r->commits++;
    if (cmd->then_exit)
      say(r, "committed gen %" PRIu64 " then exit status %u", cmd->gen, cmd->exit_status);
    else
      say(r, "committed gen %" PRIu64, cmd->gen);
    if (cmd->then_exit || (r->o->exit_after && r->commits >= r->o->exit_after))
      return 2;
    return 0;
  case COORD_CMD_ABORT:
    r->in_ckpt = false;
    say(r, "abort gen %" PRIu64 ": %s", cmd->gen, cmd->reason);
    return 0;
  case COORD_CMD_QUIT:
    say(r, "quit: %s", cmd->reason);
    return 2;
  }
  return 0;
}

static int rank_loop(struct rank *r)
{
  long long end = r->o->lifetime_s ? coord_now_ms() + r->o->lifetime_s * 1000ll : -1;

  for (;;) {
    char err[COORD_ERR_LEN];
    struct coord_cmd cmd;
    struct coord_msg msg;
    int rc = coord_client_recv(r->c, &msg, end < 0 ? -1 : coord_remaining_ms(end));

    if (rc == 0) {
      say(r, "lifetime over");
      return 0;
    }
    if (rc < 0) {
      say(r, "connection ended: %s", coord_client_error(r->c));
      return 0;
    }
    if (coord_cmd_decode(&msg, &cmd, err, sizeof(err))) {
      say(r, "VIOLATION: %s", err);
      return 1;
    }
    rc = on_command(r, &cmd);
    if (rc)
      return rc == 2 ? 0 : rc;
  }
}

static int rank_main(const struct options *o, unsigned id)
{
  static struct rank r; /* one per process */
  char err[COORD_ERR_LEN * 2];
  int rc;

  r.o = o;
  r.id = id;
  build_table(&r);
  rc = coord_rank_open(id, o->size, 5000, &r.c, err, sizeof(err));
  if (rc == 1) {
    say(&r, "no coordinator (MANA_COORDINATOR is not set)");
    return 0;
  }
  if (rc < 0) {
    say(&r, "cannot join: %s", err);
    return 1;
  }
  say(&r, "connected");
  rc = rank_loop(&r);
  coord_client_close(r.c);
  return rc;
}

/* ------------------------------------------------------------------------------------- */
/* The job                                                                               */
/* ------------------------------------------------------------------------------------- */

static int parse_rank_ms(const char *arg, int *rank, unsigned *ms)
{
  return sscanf(arg, "%d:%u", rank, ms) == 2 ? 0 : -1;
}

static int parse_spec(const char *arg, struct spec *spec)
{
  return sscanf(arg, "%d:%u", &spec->rank, &spec->gen) == 2 ? 0 : -1;
}

static int parse_repeated(const char *arg, struct spec *list, uint64_t *values)
{
  unsigned long long value = 0;
  int i = 0;

  while (i < MAX_REPEAT && list[i].rank >= 0)
    i++;
  if (i == MAX_REPEAT)
    return -1;
  if (values ? sscanf(arg, "%d:%u:%llu", &list[i].rank, &list[i].gen, &value) != 3
             : parse_spec(arg, &list[i]) != 0)
    return -1;
  if (values)
    values[i] = value;
  return 0;
}

static int apply_option(struct options *o, int opt, const char *arg)
{
  switch (opt) {
  case 'F':
    return parse_repeated(arg, o->full, NULL);
  case 'O':
    return parse_repeated(arg, o->oldest, o->oldest_value);
  case 's':
    o->size = (unsigned)atoi(arg);
    return 0;
  case 'o':
    o->only = atoi(arg);
    return 0;
  case 'g':
    o->groups = (unsigned)atoi(arg);
    return 0;
  case 'b':
    o->image_bytes = strtoull(arg, NULL, 10);
    return 0;
  case 'r':
    return parse_spec(arg, &o->refuse);
  case 'f':
    return parse_spec(arg, &o->fail);
  case 'd':
    return parse_spec(arg, &o->disconnect);
  case 'R':
    return parse_spec(arg, &o->raise);
  case 'S':
    return parse_spec(arg, &o->stall);
  case 'u':
    return parse_spec(arg, &o->unparked);
  case 'D':
    return parse_rank_ms(arg, &o->delay_rank, &o->delay_ms);
  case 'x':
    o->exit_after = (unsigned)atoi(arg);
    return 0;
  case 'l':
    o->lifetime_s = (unsigned)atoi(arg);
    return 0;
  }
  return -1;
}

static int parse_options(int argc, char **argv, struct options *o)
{
  static const struct option opts[] = {
      {"size", required_argument, NULL, 's'},       {"only", required_argument, NULL, 'o'},
      {"groups", required_argument, NULL, 'g'},     {"image-bytes", required_argument, NULL, 'b'},
      {"refuse", required_argument, NULL, 'r'},     {"fail", required_argument, NULL, 'f'},
      {"disconnect", required_argument, NULL, 'd'}, {"raise", required_argument, NULL, 'R'},
      {"stall", required_argument, NULL, 'S'},      {"unparked", required_argument, NULL, 'u'},
      {"delay-park", required_argument, NULL, 'D'}, {"exit-after", required_argument, NULL, 'x'},
      {"lifetime", required_argument, NULL, 'l'},   {"full", required_argument, NULL, 'F'},
      {"oldest", required_argument, NULL, 'O'},     {NULL, 0, NULL, 0},
  };
  const struct spec nobody = {.rank = -1};
  int opt;

  *o = (struct options){.groups = 3,
                        .only = -1,
                        .delay_rank = -1,
                        .refuse = nobody,
                        .fail = nobody,
                        .disconnect = nobody,
                        .raise = nobody,
                        .stall = nobody,
                        .unparked = nobody,
                        .image_bytes = 4096};
  for (int i = 0; i < MAX_REPEAT; i++)
    o->full[i] = o->oldest[i] = nobody;
  while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (apply_option(o, opt, optarg))
      return -1;
  if (o->size == 0 || o->groups > MAX_GROUPS || optind != argc)
    return -1;
  return 0;
}

int main(int argc, char **argv)
{
  struct options o;
  pid_t parent;
  int worst = 0;

  if (parse_options(argc, argv, &o)) {
    fprintf(stderr, "usage: fake_rank --size N [--only R] [--groups K] "
                    "[--image-bytes B] [--refuse R:G] [--fail R:G] [--disconnect R:G] "
                    "[--raise R:G] [--stall R:G] [--unparked R:G] [--delay-park R:MS] "
                    "[--full R:G] [--oldest R:G:O] [--exit-after N] "
                    "[--lifetime S]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  parent = getpid();
  if (o.only >= 0)
    return rank_main(&o, (unsigned)o.only);
  for (unsigned i = 0; i < o.size; i++) {
    pid_t pid = fork();

    if (pid < 0) {
      perror("fake_rank: fork");
      return 1;
    }
    if (pid == 0) {
      /* a test that kills the job kills this process: the ranks go with it */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent)
        _exit(1);
      _exit(rank_main(&o, i));
    }
  }
  for (unsigned i = 0; i < o.size; i++) {
    int status;

    if (wait(&status) > 0 && (!WIFEXITED(status) || WEXITSTATUS(status)))
      worst = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  return worst;
}
