/* Rebuilding MPI objects at restart: the order of the phases.
 *
 * The lower half restores the upper half's memory, initializes a fresh MPI and calls the
 * restart hook on the application's main thread before any other application thread runs.
 * Every virtual handle the application holds must then mean a new real object equivalent to
 * the old one.  Each kind of object rebuilds itself from its own records (see records.h); this
 * file only decides the order, which follows the dependencies: info objects and error handlers
 * and keyvals first (communicators and attributes use them), then operations and groups, then
 * datatypes (persistent requests use them), communicators (sorted by group id and creation
 * index, so that every member makes them in the same order), persistent requests, user data
 * representations, open files (their views may name one) and windows (made over their rebuilt
 * hidden communicators, in the same kind of order).
 *
 * The same sequence, preceded by freeing every real object, is the rebuild-in-place test mode
 * (mana_test_rebuild_now): a running job loses its objects' real handles and gets new ones
 * made from the records, exactly as a restarted one would. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "p2p.h"
#include "records.h"

uint32_t mana_rebuild_epoch;
int mana_rebuilding;

static const struct mana_kind_ops *const kinds[] = {
    &mana_info_ops,  &mana_errhandler_ops, &mana_keyval_ops,  &mana_op_ops,
    &mana_group_ops, &mana_datatype_ops,   &mana_comm_ops,    &mana_request_ops,
    &mana_bsend_ops, &mana_greq_class_ops, &mana_datarep_ops, &mana_file_ops,
    &mana_win_ops,   &mana_message_ops,    &mana_session_ops, &mana_mpi_t_ops,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

int mana_stub_can_checkpoint(char *reason, size_t len);
int mana_stub_can_checkpoint(char *reason, size_t len)
{
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i]->check && !kinds[i]->check(reason, len))
      return 0;
  if (len)
    reason[0] = '\0';
  return 1;
}

/* What was rebuilt, for tests and for the curious (MANA_TEST_REBUILD_VERBOSE). */
static void report(void)
{
  char line[512];
  size_t at = 0;
  at += (size_t)snprintf(line, sizeof(line),
                         "mana: rebuilt MPI objects (epoch %u):", mana_rebuild_epoch);
  for (size_t i = 0; i < NKINDS && at < sizeof(line); i++)
    if (kinds[i]->kind && kinds[i]->rebuild)
      at += (size_t)snprintf(line + at, sizeof(line) - at, " %s %u", kinds[i]->name,
                             mana_tables[kinds[i]->kind].in_use);
  fprintf(stderr, "%s\n", line);
}

static int rebuild_all(int discard_first)
{
  int rc = MPI_SUCCESS;
  mana_rebuild_epoch++;
  mana_rebuilding = MANA_REBUILD_DISCARDING;
  /* Failures of the rebuild's own calls come back as codes and are reported with the object
   * they concern, instead of aborting inside MPI; the application's handler on
   * MPI_COMM_WORLD is put back by the communicators' rebuild. */
  MANA_LH_CALL_NOPARK(MPI_Comm_set_errhandler, MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int trace = getenv("MANA_TEST_REBUILD_TRACE") != NULL;
  for (size_t i = NKINDS; discard_first && i-- > 0 && rc == MPI_SUCCESS;)
    if (kinds[i]->discard) {
      if (trace)
        fprintf(stderr, "mana: discarding the real %ss\n", kinds[i]->name);
      rc = kinds[i]->discard();
    }
  mana_rebuilding = MANA_REBUILD_MAKING;
  for (size_t i = 0; i < NKINDS && rc == MPI_SUCCESS; i++)
    if (kinds[i]->rebuild) {
      if (trace)
        fprintf(stderr, "mana: rebuilding the %ss\n", kinds[i]->name);
      rc = kinds[i]->rebuild();
    }
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i]->finish)
      kinds[i]->finish();
  mana_rebuilding = MANA_REBUILD_NONE;
  if (rc == MPI_SUCCESS && getenv("MANA_TEST_REBUILD_VERBOSE"))
    report();
  return rc;
}

/* Runs on the application's main thread with its own thread pointer, MPI initialized at the
 * recorded thread level, before the other threads are released (lower-half/restart.c). */
volatile int mana_in_restart_hook;

static void restart_hook(void)
{
  mana_in_restart_hook = 1;
  mana_cc_after_restart();
  if (rebuild_all(0) == MPI_SUCCESS) {
    mana_reroute_errors_after_restart();
    mana_in_restart_hook = 0;
    return;
  }
  fprintf(stderr, "mana: restart: the MPI objects of this rank could not be rebuilt (see "
                  "above); stopping the job\n");
  MANA_LH_CALL_NOPARK(MPI_Abort, MPI_COMM_WORLD, 1);
  _exit(1);
}

/* The rebuild-in-place test mode.  Collective: every rank calls it at the same point of the
 * program, as every rank restarts.  Test programs find it with dlsym(RTLD_DEFAULT, ...), so
 * they also run natively, where it does not exist. */
int mana_test_rebuild_now(void);
int mana_test_rebuild_now(void)
{
  char reason[256];
  if (!mana_stub_can_checkpoint(reason, sizeof(reason)) ||
      !mana_requests_rebuildable_undrained(reason, sizeof(reason))) {
    fprintf(stderr, "mana: mana_test_rebuild_now: cannot rebuild: %s\n", reason);
    return MPI_ERR_OTHER;
  }
  return rebuild_all(1);
}

/* Test entry point (dlsym): this rank asks the coordinator for a checkpoint, as the testing aid
 * MANA_TEST_CHECKPOINT_AT_CALL does at a chosen call (a --kill one unless
 * MANA_TEST_CHECKPOINT_KEEP is set), and returns once the ranks are asked to park (or the
 * agreement needs this rank to go on), without parking: the thread parks in its next MPI
 * call.  For tests that need the checkpoint at one exact point. */
void mana_test_checkpoint_now(void);
void mana_test_checkpoint_now(void)
{
  MANA_LH_SVC_VOID_NOPARK(test_checkpoint_now);
}

int mana_rebuild_error(const char *what, uint32_t handle, const char *call, int rc)
{
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS)
    MANA_LH_CALL_NOPARK(MPI_Error_string, rc, text, &len);
  fprintf(stderr, "mana: rebuilding MPI objects: cannot rebuild %s %#x: %s failed%s%s\n", what,
          handle, call, len > 0 ? ": " : "", text);
  return rc != MPI_SUCCESS ? rc : MPI_ERR_INTERN;
}

/* No snprintf: check functions may run on the lower half's thread pointer (see records.h). */
static size_t append(char *buf, size_t len, size_t at, const char *s)
{
  while (s && *s && at + 1 < len)
    buf[at++] = *s++;
  return at;
}

void mana_reason(char *reason, size_t len, const char *text, const char *what, uint32_t handle)
{
  static const char hex[] = "0123456789abcdef";
  char num[11] = "0x";
  for (int i = 0; i < 8; i++)
    num[2 + i] = hex[(handle >> (28 - 4 * i)) & 0xf];
  num[10] = '\0';
  if (len == 0)
    return;
  size_t at = append(reason, len, 0, text);
  at = append(reason, len, at, " ");
  at = append(reason, len, at, what);
  if (handle != 0) { /* no virtual handle is 0 */
    at = append(reason, len, at, " ");
    at = append(reason, len, at, num);
  }
  reason[at] = '\0';
}

void mana_records_init(void)
{
  for (size_t i = 0; i < NKINDS; i++) {
    if (kinds[i]->kind && kinds[i]->release)
      mana_slot_release[kinds[i]->kind] = kinds[i]->release;
    if (kinds[i]->kind && kinds[i]->retain)
      mana_slot_retain[kinds[i]->kind] = kinds[i]->retain;
  }
  MANA_BOUNDARY->stub_restart_hook = restart_hook;
  MANA_BOUNDARY->stub_can_checkpoint = mana_stub_can_checkpoint;
  mana_cc_register();
}
