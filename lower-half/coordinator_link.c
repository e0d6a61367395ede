/* The rank's checkpoint thread: its link to the job's coordinator (docs/coordinator-protocol.md).
 *
 * It runs in the lower half on its own thread and drives a checkpoint of this rank through
 * the protocol's phases: CKPT (the stub's collective clock starts holding collectives at their
 * entry; this rank's SEQ table goes out), TARGETS and statuses until the coordinator sees
 * every rank at a safe point (docs/checkpoint-protocol.md section 1), DRAIN (park every
 * application thread: SUSPENDED), GO (every rank is suspended: complete the network state,
 * write the image), then COMMITTED or ABORT (resume, or end the job).  The application runs on while the ranks converge; it is parked
 * only from DRAIN on. */
#define _GNU_SOURCE
#include "coordinator_link.h"
#include "ckpt_signal_rank.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "state_threads.h"
#include "coord_client.h"
#include "coord_client_rank.h"
#include "coord_store_sweep.h"
#include "mana/boundary.h"
#include "lower_threads.h"
#include "rank_checkpoint.h"
#include "services.h"
#include "test_trigger.h"

/* How long a checkpoint asked for right after a restart waits for the threads to resume. */
#define RESUME_TIMEOUT_MS 30000
#define STATUS_POLL_MS 1

static struct coord_client *link_conn;
static uint32_t my_rank, my_size;
static pthread_t link_thread;
static volatile int link_running;

/* The newest generation this rank has begun or turned down (a test trigger waits for it). */
static uint64_t begun_gen;
static pthread_mutex_t begun_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t begun_cond = PTHREAD_COND_INITIALIZER;

/* 1 from the moment a forked writer writes this rank's image while the application runs
 * until the generation's verdict (or the link's loss): the rank's connection must outlive the
 * generation, since the coordinator aborts one whose rank disconnects. */
static int writing_behind;

/* The generation in progress (0 when none), and whether this rank has been told a target it
 * has not met yet (it must go on for the ranks to converge; a test trigger holding the rank
 * lets it go then). */
static volatile uint64_t current_gen;
static volatile int must_go_on;
/* A peer is inside a collective on a group this rank has not joined yet (a constructor over
 * groups it has not entered): DONE as it is, it must not be held either.  Only a hint: the
 * coordinator now sends a rank the targets of its own groups only, so this rank learns of
 * such a group when it joins it, and a test hold then ends at its time limit. */
static volatile int awaited;
/* The generation whose coordinator said that blocked ranks wait for done ones (NUDGE): this
 * rank, done, may be the one they wait for, so a test trigger holding it lets it go. */
static volatile uint64_t nudged_gen;
/* The checkpoint directory of the newest CKPT (the parent of its generation directory). */
static char ckpt_dir[4096];

static void note_begun(uint64_t gen)
{
  pthread_mutex_lock(&begun_lock);
  if (gen > begun_gen)
    begun_gen = gen;
  pthread_cond_broadcast(&begun_cond);
  pthread_mutex_unlock(&begun_lock);
}

int mana_coordinator_link_up(void)
{
  return link_running;
}

int mana_coordinator_link_is_self(void)
{
  return link_running && pthread_equal(pthread_self(), link_thread);
}

int mana_coordinator_link_may_hold(uint64_t gen)
{
  return __atomic_load_n(&current_gen, __ATOMIC_ACQUIRE) == gen &&
         !__atomic_load_n(&must_go_on, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n(&awaited, __ATOMIC_ACQUIRE) &&
         __atomic_load_n(&nudged_gen, __ATOMIC_ACQUIRE) != gen;
}

int mana_coordinator_link_in_checkpoint(void)
{
  return __atomic_load_n(&current_gen, __ATOMIC_ACQUIRE) != 0;
}

static void set_writing_behind(int on)
{
  pthread_mutex_lock(&begun_lock);
  writing_behind = on;
  pthread_cond_broadcast(&begun_cond);
  pthread_mutex_unlock(&begun_lock);
}

void mana_coordinator_link_wait_verdict(void)
{
  pthread_mutex_lock(&begun_lock);
  while (writing_behind)
    pthread_cond_wait(&begun_cond, &begun_lock);
  pthread_mutex_unlock(&begun_lock);
}

int mana_coordinator_link_wait_begun(uint64_t gen, int timeout_ms)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  int rc = 0;
  pthread_mutex_lock(&begun_lock);
  while (begun_gen < gen && rc == 0)
    rc = pthread_cond_timedwait(&begun_cond, &begun_lock, &until);
  int ok = begun_gen >= gen;
  pthread_mutex_unlock(&begun_lock);
  return ok ? 0 : -1;
}

/* The command of generation `gen` that came in within timeout_ms: 1, 0 when none came, -1
 * if the link is gone. */
static int next_command_within(uint64_t gen, struct coord_cmd *cmd, int timeout_ms)
{
  char err[256];
  for (;;) {
    struct coord_msg msg;
    int rc = coord_client_recv(link_conn, &msg, timeout_ms);
    if (rc != 1)
      return rc == 0 ? 0 : -1;
    if (coord_cmd_decode(&msg, cmd, err, sizeof(err)) != 0) {
      fprintf(stderr, "mana_lh: rank %u: bad message from the coordinator: %s\n", my_rank, err);
      continue;
    }
    if (cmd->kind == COORD_CMD_QUIT || cmd->gen == gen)
      return 1;
  }
}

/* Waits for the next command of generation `gen`; 0 on a command, -1 if the link is gone. */
static int next_command(uint64_t gen, struct coord_cmd *cmd)
{
  return next_command_within(gen, cmd, -1) == 1 ? 0 : -1;
}

static void quit(const char *reason)
{
  fprintf(stderr, "mana: rank %u: job ended by the coordinator%s%s\n", my_rank,
          reason && *reason ? ": " : "", reason ? reason : "");
  _exit(1);
}

/* The groups the coordinator knows this rank is a member of, sorted: it sends a rank the
 * targets of those only, so a group joined after the SEQ table (a constructor that was in
 * progress, or one the rank passed while converging) must be reported before the rank says
 * its targets are met, or it could park below a target nobody sent it. */
static uint64_t *reported;
static size_t nreported, reported_cap;

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Where ggid is in reported, or where it goes. */
static size_t reported_slot(uint64_t ggid)
{
  size_t lo = 0, hi = nreported;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (reported[mid] < ggid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Adds ggid; 1 if it is new, 0 if known, -1 when out of memory. */
static int note_reported(uint64_t ggid)
{
  size_t i = reported_slot(ggid);
  if (i < nreported && reported[i] == ggid)
    return 0;
  if (nreported == reported_cap) {
    size_t cap = reported_cap ? 2 * reported_cap : 64;
    uint64_t *bigger = realloc(reported, cap * sizeof(*bigger));
    if (!bigger)
      return -1;
    reported = bigger;
    reported_cap = cap;
  }
  memmove(&reported[i + 1], &reported[i], (nreported - i) * sizeof(*reported));
  reported[i] = ggid;
  nreported++;
  return 1;
}

/* A RAISE of its own SEQ there makes the coordinator count this rank a member of each group
 * it has joined since, and send it the target if that is higher. */
static int report_joined(uint64_t gen, const struct mana_stub_cc *cc)
{
  uint64_t cursor = 0, ggid, seq;
  while (cc->next(&cursor, &ggid, &seq)) {
    int fresh = note_reported(ggid);
    if (fresh < 0 || (fresh && coord_send_raise(link_conn, gen, ggid, seq) != 0))
      return -1;
  }
  return 0;
}

/* This rank's SEQ table, as the coordinator's SEQ lines. */
static int send_seq_table(uint64_t gen, const struct mana_stub_cc *cc)
{
  size_t n = 0, cap = 64;
  struct coord_entry *e = malloc(cap * sizeof(*e));
  uint64_t cursor = 0, ggid, seq;
  while (e && cc->next(&cursor, &ggid, &seq)) {
    if (n == cap) {
      struct coord_entry *bigger = realloc(e, 2 * cap * sizeof(*e));
      if (!bigger) {
        free(e);
        return -1;
      }
      e = bigger;
      cap *= 2;
    }
    e[n++] = (struct coord_entry){ggid, seq};
  }
  nreported = 0;
  if (e && n > reported_cap) {
    uint64_t *bigger = realloc(reported, n * sizeof(*bigger));
    if (!bigger) {
      free(e);
      return -1;
    }
    reported = bigger;
    reported_cap = n;
  }
  for (size_t i = 0; e && i < n; i++)
    reported[i] = e[i].ggid;
  nreported = e ? n : 0;
  if (nreported)
    qsort(reported, nreported, sizeof(*reported), cmp_u64);
  int rc = e ? coord_send_seq(link_conn, gen, e, n) : -1;
  free(e);
  return rc;
}

static int apply_targets(const struct coord_cmd *cmd, const struct mana_stub_cc *cc)
{
  static struct coord_entry table[COORD_TABLE_CHUNK];
  size_t n = 0;
  char err[COORD_ERR_LEN];
  if (coord_table_parse(cmd->table, table, COORD_TABLE_CHUNK, &n, err, sizeof(err)) != 0) {
    fprintf(stderr, "mana_lh: rank %u: bad TARGETS from the coordinator: %s\n", my_rank, err);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (cc->set_target(table[i].ggid, table[i].value) != 0)
      return -1;
  if (!cmd->more)
    cc->targets_done(cmd->epoch);
  return 0;
}

/* What the rank last told the coordinator, so that only changes (and every new epoch) are
 * sent. */
struct reported {
  uint64_t epoch, ggid, seq;
  int status; /* enum cc_status, or -1 before the first report */
};

static int report(uint64_t gen, uint64_t epoch, const struct mana_stub_cc *cc,
                  struct reported *last)
{
  uint64_t ggid = 0, seq = 0, rg, rt;
  enum cc_status st = cc->status(&ggid, &seq);
  __atomic_store_n(&awaited, cc->awaited && cc->awaited(), __ATOMIC_RELEASE);
  /* RAISEs first: the coordinator must know a target moved before it hears this status. */
  while (cc->pop_raise(&rg, &rt))
    if (note_reported(rg) < 0 || coord_send_raise(link_conn, gen, rg, rt) != 0)
      return -1;
  if (epoch == last->epoch && (int)st == last->status && ggid == last->ggid && seq == last->seq)
    return 0;
  /* The status was taken first: every group joined before it is in the table now.  From one
   * met status to another at the same epoch nothing was counted, so nothing was joined but
   * the group of a collective it parks at, which PARKED reports itself; a RAISE then could
   * also cross DRAIN, which the coordinator takes for a violation. */
  bool met = st == CC_ST_PARKED || st == CC_ST_DONE;
  bool was_met = last->status == CC_ST_PARKED || last->status == CC_ST_DONE;
  if (met && !(was_met && epoch == last->epoch) && report_joined(gen, cc) != 0)
    return -1;
  *last = (struct reported){epoch, ggid, seq, (int)st};
  __atomic_store_n(&must_go_on, st == CC_ST_RUNNING || st == CC_ST_BLOCKED, __ATOMIC_RELEASE);
  switch (st) {
  case CC_ST_PARKED:
    return coord_send_parked_at(link_conn, gen, epoch, ggid, seq);
  case CC_ST_DONE:
    return coord_send_parked(link_conn, gen, epoch);
  case CC_ST_BLOCKED:
    if (ggid) /* another thread is held at an entry: a stall may need it released */
      return coord_send_blocked_held(link_conn, gen, epoch, ggid, seq);
    break;
  case CC_ST_NONE:
  case CC_ST_RUNNING:
    break;
  }
  return coord_send_running(link_conn, gen, epoch, st == CC_ST_BLOCKED);
}

/* A count taken back during the checkpoint (boundary.h, spoiled) is usually met again by the
 * next collective the program makes; if none comes within this time, it may never. */
#define SPOILED_GRACE_MS 5000

static int spoiled_too_long(struct timespec *since)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!since->tv_sec && !since->tv_nsec) {
    *since = now;
    return 0;
  }
  return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000 >
         SPOILED_GRACE_MS;
}

/* From CKPT until DRAIN (1), ABORT (0), QUIT (the process ends), a lost link (-1), targets
 * not applied (-2) or a checkpoint the clock says to refuse (-3). */
static int converge(uint64_t gen, const struct mana_stub_cc *cc, struct coord_cmd *cmd)
{
  struct reported last = {0, 0, 0, -1};
  uint64_t epoch = 0;
  struct timespec spoiled_since = {0, 0};
  for (;;) {
    int rc = next_command_within(gen, cmd, epoch ? STATUS_POLL_MS : -1);
    if (rc < 0)
      return -1;
    if (rc == 1) {
      switch (cmd->kind) {
      case COORD_CMD_QUIT:
        quit(cmd->reason);
        break;
      case COORD_CMD_ABORT:
        return 0;
      case COORD_CMD_DRAIN:
        return 1;
      case COORD_CMD_NUDGE:
        __atomic_store_n(&nudged_gen, gen, __ATOMIC_RELEASE);
        break;
      case COORD_CMD_TARGETS:
        if (apply_targets(cmd, cc) != 0)
          return -2;
        if (!cmd->more)
          epoch = cmd->epoch;
        break;
      default:
        break;
      }
    }
    if (cc->spoiled && cc->spoiled() && spoiled_too_long(&spoiled_since))
      return -3;
    if (epoch && report(gen, epoch, cc, &last) != 0)
      return -1;
  }
}

/* After SUSPENDED: GO (1), or the generation ended without it (0: ABORT, QUIT), or the link
 * is gone (-1).
 *
 * Suspended, this rank still drives MPI's progress until GO: a rank still parking may have a
 * thread inside MPI_Win_flush or MPI_Win_unlock, which waits for this rank's progress engine
 * only and returns to be parked once it moves (MPICH's threads/rma/multiget: the other rank's
 * threads could not park within 10 s).  No application thread is inside MPI now, so this
 * thread may call it at any thread level the lower half initialized (SERIALIZED or more). */
static int wait_for_go(uint64_t gen, struct coord_cmd *cmd)
{
  for (;;) {
    int rc = next_command_within(gen, cmd, 1);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      int flag;
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      continue;
    }
    if (cmd->kind == COORD_CMD_GO)
      return 1;
    if (cmd->kind == COORD_CMD_ABORT || cmd->kind == COORD_CMD_QUIT)
      return 0;
  }
}

/* While a large image is written the coordinator hears how far the rank is (PROGRESS, the
 * WRITTEN column of mana_status), every PROGRESS_EVERY_BYTES. A report that cannot be sent
 * is dropped: the write goes on, and WRITTEN or FAILED says the rest. */
#define PROGRESS_EVERY_BYTES (16ull << 20)

struct write_report {
  uint64_t gen;
  int broken;
};

static void report_progress(uint64_t bytes, void *arg)
{
  struct write_report *r = arg;
  if (!r->broken && coord_send_progress(link_conn, r->gen, bytes) != 0)
    r->broken = 1;
}

/* The rank's phases (rank_checkpoint.c) as the coordinator hears them: SUSPENDED then GO,
 * PROGRESS 0 once drained, REFUSE, FAILED, WRITTEN. */
struct link_peers {
  uint64_t gen;
  struct coord_cmd *cmd; /* the command that ended the wait for GO */
  struct write_report progress;
  int resumed; /* a forked writer writes the image; the application runs */
};

static int peers_suspended(void *arg)
{
  struct link_peers *p = arg;
  return coord_send_suspended(link_conn, p->gen) != 0 ? -1 : wait_for_go(p->gen, p->cmd);
}

static int peers_drained(void *arg)
{
  struct link_peers *p = arg;
  /* PROGRESS 0: parked and drained (the coordinator times the drain by it) */
  return coord_send_progress(link_conn, p->gen, 0);
}

static void peers_refused(void *arg, const char *reason)
{
  coord_send_refuse(link_conn, ((struct link_peers *)arg)->gen, reason);
}

static void peers_failed(void *arg, const char *reason)
{
  coord_send_failed(link_conn, ((struct link_peers *)arg)->gen, reason);
}

/* The forked writer runs: the application goes on (release before ending the clock, as
 * after a verdict). */
static void peers_resumed(void *arg)
{
  struct link_peers *p = arg;
  set_writing_behind(1);
  __atomic_store_n(&current_gen, 0, __ATOMIC_RELEASE);
  mana_rank_checkpoint_leave(0, 0);
  MANA_BOUNDARY->stub_cc->end();
  p->resumed = 1;
}

static void peers_written(void *arg, const char *name, const struct mana_written *w)
{
  char xxh[32];
  snprintf(xxh, sizeof(xxh), "%016llx", (unsigned long long)w->hash);
  coord_send_written(link_conn, ((struct link_peers *)arg)->gen, w->bytes, name, xxh, w->oldest);
}

/* DRAIN: the rank's checkpoint phases, then the verdict.  0 with the verdict (COMMITTED,
 * ABORT or QUIT) in cmd, -1 when the link is gone.  The drain is collective over the ranks: a
 * rank starting it alone would leave exchanges posted that the others never answer, so a rank
 * that cannot park says so before any rank drains. */
static int drain_and_write(uint64_t gen, const char *dir, const char *base_dir, int forked,
                           struct coord_cmd *cmd, int *resumed)
{
  struct link_peers lp = {gen, cmd, {gen, 0}, 0};
  struct mana_write_progress progress = {report_progress, &lp.progress, PROGRESS_EVERY_BYTES};
  struct rank_peers peers = {&lp,           peers_suspended, peers_drained, peers_refused,
                             peers_failed,  peers_written,   &progress,     forked,
                             peers_resumed, base_dir};
  struct mana_rank_facts facts = {my_rank, my_size, (uint32_t)mana_mpi_thread_level(),
                                  MANA_BOUNDARY_VERSION};
  enum rank_checkpoint_outcome out = mana_rank_checkpoint(&peers, dir, gen, &facts);
  *resumed = lp.resumed;
  if (out != RANK_CKPT_REPORTED)
    return out == RANK_CKPT_ENDED ? 0 : -1;
  int rc;
  while ((rc = next_command(gen, cmd)) == 0 && cmd->kind != COORD_CMD_COMMITTED &&
         cmd->kind != COORD_CMD_ABORT && cmd->kind != COORD_CMD_QUIT)
    ;
  return rc;
}

/* One generation, from CKPT to COMMITTED or ABORT. */
static void checkpoint(uint64_t gen, const char *dir_in_msg, const char *base_in_msg, int forked)
{
  char reason[512], dir[4096], base_dir[4096];
  const struct mana_stub_cc *cc = MANA_BOUNDARY->stub_cc;
  /* The command's strings live in the receive buffer, which the next message reuses. */
  snprintf(dir, sizeof(dir), "%s", dir_in_msg);
  snprintf(base_dir, sizeof(base_dir), "%s", base_in_msg ? base_in_msg : "");
  snprintf(ckpt_dir, sizeof(ckpt_dir), "%s", dir);
  char *slash = strrchr(ckpt_dir, '/');
  if (slash && slash != ckpt_dir)
    *slash = '\0';
  else
    ckpt_dir[0] = '\0';
  mana_rank_checkpoint_prepare();
  if (mana_restart_wait_resumed(RESUME_TIMEOUT_MS) != 0) {
    note_begun(gen);
    coord_send_refuse(link_conn, gen,
                      "this rank's restart has not finished rebuilding its MPI objects");
    return;
  }
  if (!cc) {
    note_begun(gen);
    coord_send_refuse(link_conn, gen, "the stub MPI library has no collective clock");
    return;
  }
  __atomic_store_n(&must_go_on, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&awaited, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&current_gen, gen, __ATOMIC_RELEASE);
  int begun = cc->begin(reason, sizeof(reason));
  note_begun(gen);
  if (begun != 0) {
    __atomic_store_n(&current_gen, 0, __ATOMIC_RELEASE);
    coord_send_refuse(link_conn, gen, reason);
    return;
  }
  struct coord_cmd cmd;
  int rc = send_seq_table(gen, cc) == 0 ? converge(gen, cc, &cmd) : -1;
  if (rc == -2)
    coord_send_refuse(link_conn, gen, "this rank could not apply the coordinator's targets");
  if (rc == -3)
    coord_send_refuse(link_conn, gen, MANA_CC_SPOILED_REASON);
  int resumed = 0;
  if (rc == 1 &&
      drain_and_write(gen, dir, base_dir[0] ? base_dir : NULL, forked, &cmd, &resumed) == 0) {
    if (cmd.kind == COORD_CMD_QUIT)
      quit(cmd.reason);
    if (cmd.kind == COORD_CMD_COMMITTED && cmd.then_exit && resumed) /* never sent so */
      fprintf(stderr,
              "mana_lh: rank %u: generation %llu ends the job, but its application "
              "already runs again: going on\n",
              my_rank, (unsigned long long)gen);
    else if (cmd.kind == COORD_CMD_COMMITTED && cmd.then_exit) /* every rank has the verdict */
      mana_rank_checkpoint_leave(1, (int)cmd.exit_status);
  }
  /* Written, aborted, refused or the coordinator died mid-checkpoint (then nothing is
   * committed): the job goes on.  Release before ending the clock: a parked thread may wait at
   * a collective entry for exactly that. */
  __atomic_store_n(&current_gen, 0, __ATOMIC_RELEASE);
  mana_rank_checkpoint_leave(0, 0);
  cc->end();
  set_writing_behind(0);
}

static void note_swept(void *arg, const char *path, int err)
{
  (void)arg;
  if (err)
    fprintf(stderr,
            "mana_lh: rank %u: cannot remove %s, a checkpoint the lost coordinator "
            "never committed: %s\n",
            my_rank, path, strerror(err));
  else
    fprintf(stderr,
            "mana_lh: rank %u: removed %s, a checkpoint the lost coordinator never "
            "committed\n",
            my_rank, path);
}

/* A coordinator killed during a checkpoint leaves its generation half written, and no
 * coordinator may serve the directory again before the job ends: the ranks remove it (the
 * first one to take the directory's lock; the others find nothing left). */
static void sweep_after_lost_coordinator(void)
{
  const char *dir = ckpt_dir[0] ? ckpt_dir : getenv(COORD_ENV_CKPTDIR);
  if (dir && *dir)
    store_sweep_orphaned(dir, note_swept, NULL);
}

static void *run(void *arg)
{
  (void)arg;
  for (;;) {
    struct coord_msg msg;
    struct coord_cmd cmd;
    char err[256];
    if (coord_client_recv(link_conn, &msg, -1) != 1) {
      /* The coordinator is gone: the job goes on, without checkpoints. */
      fprintf(stderr, "mana_lh: rank %u: lost the coordinator (%s); checkpointing is off\n",
              my_rank, coord_client_error(link_conn));
      sweep_after_lost_coordinator();
      return NULL;
    }
    if (coord_cmd_decode(&msg, &cmd, err, sizeof(err)) != 0)
      continue;
    if (cmd.kind == COORD_CMD_QUIT)
      quit(cmd.reason);
    if (cmd.kind == COORD_CMD_CKPT)
      checkpoint(cmd.gen, cmd.dir, cmd.base, cmd.fork);
  }
}

void mana_coordinator_link_start(void)
{
  int rank = 0, size = 1;
  char err[512];
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  my_rank = (uint32_t)rank;
  my_size = (uint32_t)size;
  int rc = coord_rank_open(my_rank, my_size, 10000, &link_conn, err, sizeof(err));
  if (rc == 1)
    return; /* no coordinator: a job without checkpoints */
  if (rc != 0) {
    fprintf(stderr, "mana_lh: rank %u: cannot reach the coordinator: %s; checkpointing is off\n",
            my_rank, err);
    return;
  }
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask);
  int err_create = pthread_create(&link_thread, NULL, run, NULL);
  mana_lower_threads_mask_leave(&mask);
  if (err_create != 0) {
    fprintf(stderr, "mana_lh: rank %u: cannot start the checkpoint thread: %s\n", my_rank,
            strerror(err_create));
    return;
  }
  link_running = 1;
  mana_test_trigger_init(my_rank);
  mana_ckpt_signal_start(my_rank);
}
