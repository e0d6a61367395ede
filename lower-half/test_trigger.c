/* A testing aid: checkpoints at a chosen MPI call, so that tests that live for milliseconds can
 * be checkpointed inside their MPI lifetime, deterministically.
 *
 *   MANA_TEST_CHECKPOINT_AT_CALL=K     on one rank, at its K-th crossing into the lower half,
 *                                      ask the coordinator for a checkpoint and wait until this
 *                                      rank has begun it and the ranks park, or the ranks need
 *                                      this one to go on; the call then goes on
 *                                      (every rank waits at MPI_Finalize, and parks there,
 *                                      for the checkpoint)
 *   MANA_TEST_CHECKPOINT_AT_CALL=J,K   the same at call K, after a plain checkpoint at call
 *                                      J < K (forked or incremental as the job's options
 *                                      say: a chain of two generations to restart from;
 *                                      every rank waits at MPI_Finalize for both)
 *   MANA_TEST_CHECKPOINT_RANK=R        the rank that counts (default 0)
 *   MANA_TEST_CHECKPOINT_KEEP=1        a plain checkpoint; by default the job ends once it is
 *                                      committed (as mana_status --checkpoint --kill)
 *   MANA_TEST_HOLD_MAX_MS=N            the longest the rank that asks holds its call (default
 *                                      15000; see trigger())
 *   MANA_TEST_COUNT_CALLS=FILE         every rank appends "rank R calls N" to FILE when the
 *                                      application calls MPI_Finalize or MPI_Abort, or exits
 *                                      without them
 *                                      (how a test harness learns the range to draw K from),
 *                                      and "rank R init N" when its MPI_Init returns
 *
 * The count is the boundary's mpi_calls, kept in the image: a restarted rank goes on counting
 * and never fires twice.  The trigger fires only once the application's MPI_Init has
 * returned; a K that fell before fires at the first crossing after it. */
#define _GNU_SOURCE
#include "test_trigger.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_request.h"
#include "coord_client.h"
#include "coordinator_link.h"
#include "mana/boundary.h"
#include "mana/fail.h"

#define BEGIN_TIMEOUT_MS 60000
#define HOLD_MAX_MS_DEFAULT 15000

static uint32_t trigger_rank;
static long hold_max_ms = HOLD_MAX_MS_DEFAULT;
static const char *count_file;
/* K of "J,K", armed once the plain checkpoint at J has begun on this rank; 0: none (or
 * armed). */
static uint64_t second_call;

static int count_written;
/* Every rank of a job with a test checkpoint: finalizing waits for it (see the gate), and
 * for the second of "J,K" (generation 2 in a fresh directory) too. */
static int gate_finalize;
static int gate_two;
/* This rank waits at MPI_Finalize (the gate below), until the last checkpoint it waits for
 * has ended. */
static int gate_waiting;
/* The armed call is the second of two: asked for only once the first has let go of this
 * rank's threads (they must park for it, and this call would hold one of them). */
static int second_armed;
/* The application's MPI_Init has returned.  Inside it the rank cannot park (it is inside a
 * communicator constructor), so a checkpoint asked for there would stall until the hold below
 * ran out, and a short program could end first. */
static int app_ready;

static void write_count(const char *what)
{
  char line[96];
  int fd = open(count_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  int n = snprintf(line, sizeof(line), "rank %u %s %llu\n", trigger_rank, what,
                   (unsigned long long)MANA_BOUNDARY->mpi_calls);
  if (write(fd, line, (size_t)n) != n)
    fprintf(stderr, "mana_lh: MANA_TEST_COUNT_CALLS: cannot write %s\n", count_file);
  close(fd);
}

void mana_test_trigger_initialized(void)
{
  app_ready = 1;
  if (count_file && *count_file)
    write_count("init");
}

void mana_test_trigger_finalizing(void)
{
  if (!count_file || !*count_file || count_written)
    return;
  count_written = 1;
  write_count("calls");
}

void mana_test_trigger_init(uint32_t rank)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  trigger_rank = rank;
  count_file = getenv("MANA_TEST_COUNT_CALLS");
  /* A program that ends without MPI_Finalize (an abort it is meant to make, MPICH's
   * errhan/errfatal) has its count too, as it exits. */
  if (count_file && *count_file)
    atexit(mana_test_trigger_finalizing);
  app_ready = b->restarted != 0; /* a restarted rank is past its MPI_Init */
  /* A call armed when the image was taken (the second of "J,K") belongs to the run that armed
   * it: the restarted job must not checkpoint again unless its own environment asks. */
  if (b->restarted)
    b->test_checkpoint_at_call = 0;
  const char *max = getenv("MANA_TEST_HOLD_MAX_MS");
  if (max && *max) {
    char *end;
    long v = strtol(max, &end, 10);
    if (*end || v < 0)
      fprintf(stderr, "mana: MANA_TEST_HOLD_MAX_MS=%s is not a number of milliseconds; using %d\n",
              max, HOLD_MAX_MS_DEFAULT);
    else
      hold_max_ms = v;
  }
  const char *at = getenv("MANA_TEST_CHECKPOINT_AT_CALL");
  const char *who = getenv("MANA_TEST_CHECKPOINT_RANK");
  gate_finalize = at && !b->restarted;
  gate_two = at && strchr(at, ',') != NULL;
  if (!at || (who ? strtoul(who, NULL, 10) : 0) != rank)
    return;
  char *rest;
  uint64_t k = strtoull(at, &rest, 10);
  if (*rest == ',' && !b->restarted)
    second_call = strtoull(rest + 1, NULL, 10);
  if (k > b->mpi_calls)
    b->test_checkpoint_at_call = k;
  else if (!b->restarted) /* K fell inside MPI_Init, before the link was up: fire now */
    b->test_checkpoint_at_call = b->mpi_calls + 1;
  /* else: a restarted rank has passed it already */
}

/* The armed call K, taken by one thread only: under MPI_THREAD_MULTIPLE two threads may both
 * find their crossing to be the K-th (the count is not atomic), and the second request was
 * refused as "already in progress" on stderr (MPICH's threads/pt2pt/mt_mprobe_sendirecv).
 * 0 if another thread took it. */
static uint64_t claim(void)
{
  return __atomic_exchange_n(&MANA_BOUNDARY->test_checkpoint_at_call, 0, __ATOMIC_ACQ_REL);
}

/* k: the call that asks (for messages). */
static int trigger(uint64_t k)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  uint64_t gen = 0;
  char err[512];
  if (!app_ready || mana_coordinator_link_is_self()) {
    __atomic_store_n(&b->test_checkpoint_at_call, b->mpi_calls + 1,
                     __ATOMIC_RELEASE); /* at the next crossing (the drain's own calls are not
                                           the application's) */
    return 0;
  }
  if (second_armed && mana_coordinator_link_in_checkpoint()) {
    __atomic_store_n(&b->test_checkpoint_at_call, b->mpi_calls + 1, __ATOMIC_RELEASE);
    return 0;
  }
  second_armed = 0;
  /* The first of two is plain, and arms the second once it has begun here: armed at once,
   * another thread under MPI_THREAD_MULTIPLE could reach K while this one still asks, and ask
   * first (the kill then came before the plain checkpoint: seen with MPICH's
   * threads/init/mult_session), or wait inside its call for the first to end, which could
   * not end without that thread parked. */
  const uint64_t second = second_call;
  int keep = getenv("MANA_TEST_CHECKPOINT_KEEP") != NULL || second != 0;
  /* A rank may reach its K-th call before the other ranks have connected (they connect at
   * the end of their MPI_Init), or while the first of two checkpoints is still written: ask
   * again until they have, rather than lose the checkpoint.
   * This rank waits here, inside its call; the others do not need it to connect. */
  int rc;
  struct timespec pause = {0, 20 * 1000000L};
  for (int waited_ms = 0;; waited_ms += 20) {
    rc = mana_ask_checkpoint(!keep, 0, false, &gen, err, sizeof(err));
    if (rc == 0 || waited_ms >= BEGIN_TIMEOUT_MS ||
        (!strstr(err, "ranks are connected") && !strstr(err, "no rank has connected") &&
         !strstr(err, "already in progress"))) /* the first of two, written by forked writers */
      break;
    nanosleep(&pause, NULL);
  }
  if (rc != 0) {
    fprintf(stderr, "mana: test checkpoint at MPI call %llu: %s\n", (unsigned long long)k, err);
    return -1;
  }
  if (mana_coordinator_link_wait_begun(gen, BEGIN_TIMEOUT_MS) != 0) {
    fprintf(stderr,
            "mana: test checkpoint at MPI call %llu: generation %llu did not begin on "
            "this rank within %d s\n",
            (unsigned long long)k, (unsigned long long)gen, BEGIN_TIMEOUT_MS / 1000);
    return -1;
  }
  if (second) { /* a K not after J: the next crossing */
    second_call = 0;
    second_armed = 1;
    __atomic_store_n(&b->test_checkpoint_at_call, second > b->mpi_calls ? second : b->mpi_calls + 1,
                     __ATOMIC_RELEASE);
  }
  /* A short program would otherwise run on to MPI_Finalize while the ranks agree on the safe
   * point, and the checkpoint be refused: this rank holds its call until the ranks park.  It
   * goes on as soon as the agreement needs it to (a target it has not reached, a peer inside a
   * constructor over groups this rank has not entered yet, or the coordinator's NUDGE: every
   * other rank is blocked or done, so the blocked ones may wait for this rank's lock or
   * message), or the generation ends; and after hold_max_ms in any case, since a peer that
   * busy-polls memory this rank is to write looks RUNNING to the coordinator.  The hold waits
   * for a state, not for a time: on a loaded machine the agreement can take seconds. */
  struct timespec ms = {0, 1000000L};
  for (long i = 0; i < hold_max_ms && mana_coordinator_link_may_hold(gen) &&
                   !__atomic_load_n(&b->park_requested, __ATOMIC_ACQUIRE);
       i++)
    nanosleep(&ms, NULL);
  return 0;
}

/* The other ranks run on while the rank that asks reaches its call and the checkpoint
 * starts; a short program's ranks would finalize first (counted on the clock, MPI_Finalize
 * takes every rank into it, and the checkpoint is refused).  So a rank waits at its
 * MPI_Finalize, before it is counted, for the checkpoint it is to take part in (with "J,K",
 * for the second), and parks there: it returns 1 once a checkpoint asks its threads to park,
 * the stub parks the thread, still before MPI_Finalize, and calls again; 0 once the last
 * checkpoint it waits for has come and gone.  Going on into MPI_Finalize as soon as the
 * checkpoint had begun let every rank in before the park was asked for, when the rank that
 * asks reached its call only here (MPICH's datatype/darray_pack at 4 ranks with "J,K": the
 * second was refused in 7 runs of 12).  The rank that asks and has not reached its call (a
 * run with fewer calls than the count K was drawn from) asks now.  Bounded: the asking rank
 * may never get there. */
int mana_test_trigger_finalize_gate(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  if (gate_finalize) {
    gate_finalize = 0;
    if (!mana_coordinator_link_up()) {
      gate_two = 0;
      return 0;
    }
    gate_waiting = 1;
  }
  if (!gate_waiting)
    return 0;
  uint64_t last = gate_two ? 2 : 1;
  struct timespec ms = {0, 1000000L};
  for (int i = 0; i < BEGIN_TIMEOUT_MS; i++) {
    int in_checkpoint = mana_coordinator_link_in_checkpoint();
    if (in_checkpoint && __atomic_load_n(&b->park_requested, __ATOMIC_ACQUIRE))
      return 1;
    /* this rank asks, and its call (J or K) is still to come: it comes now */
    if (!in_checkpoint && __atomic_load_n(&b->test_checkpoint_at_call, __ATOMIC_ACQUIRE)) {
      b->test_checkpoint_at_call = b->mpi_calls;
      uint64_t k = claim();
      if (k && trigger(k) != 0)
        break; /* said why; no checkpoint will come */
      continue;
    }
    if (!in_checkpoint && mana_coordinator_link_wait_begun(last, 0) == 0) {
      gate_waiting = 0;
      return 0;
    }
    nanosleep(&ms, NULL);
  }
  gate_waiting = 0;
  fprintf(stderr,
          "mana: test checkpoint: rank %u finalizes MPI: checkpoint %llu did not come "
          "within %d s\n",
          trigger_rank, (unsigned long long)last, BEGIN_TIMEOUT_MS / 1000);
  return 0;
}

void mana_test_checkpoint_now(void)
{
  /* Reached at the chosen call (MANA_LH_ENTER), or asked for by a test program directly
   * (mana_test_checkpoint_now in the stub).  Both hold until the ranks are asked to park, so
   * that the thread parks in the program's next MPI call, the point the test is about: a
   * direct request that returned once the checkpoint had begun let the park signal catch the
   * thread in the program's own code between the two calls, now and then (the MPI_Waitall
   * of tests/restart/waitall_parked.c parked in one run of three). */
  struct mana_boundary *b = MANA_BOUNDARY;
  if (b->test_checkpoint_at_call == 0 || b->mpi_calls != b->test_checkpoint_at_call) {
    claim(); /* asked for directly: an armed K is spent too */
    trigger(b->mpi_calls);
    return;
  }
  uint64_t k = claim();
  if (k)
    trigger(k);
}
