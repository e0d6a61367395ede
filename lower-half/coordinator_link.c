/* The rank's checkpoint thread: its link to the job's coordinator (docs/coordinator-protocol.md).
 *
 * It runs in the lower half on its own thread and drives a checkpoint of this rank through
 * the protocol's phases: CKPT (park the application, ask the stub whether everything it holds
 * can be rebuilt), SEQ and the safe-point exchange, DRAIN (write the image), COMMITTED or
 * ABORT (resume, or end the job).
 *
 * The coordinated safe point of a multi-rank job needs the collective clock in the stub
 * (docs/checkpoint-protocol.md section 1), which this build does not wire in yet: such a
 * request is refused with that reason and the job goes on.  A one-rank job has no peers to
 * agree with and is checkpointed for real. */
#define _GNU_SOURCE
#include "coordinator_link.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "coord_client.h"
#include "coord_client_rank.h"
#include "mana/boundary.h"
#include "park.h"
#include "services.h"

#define PARK_TIMEOUT_MS 10000

static struct coord_client *link_conn;
static uint32_t my_rank, my_size;

/* Checkpoints may only be taken where nothing the restarted job needs is lost. */
static int refusal(char *reason, size_t len)
{
  if (my_size > 1) {
    snprintf(reason, len,
             "coordinated checkpoints of multi-rank jobs need the collective clock, which this "
             "build of mana does not have yet");
    return 1;
  }
  int (*can)(char *, size_t) = MANA_BOUNDARY->stub_can_checkpoint;
  return can && !can(reason, len);
}

/* Waits for the next command of generation `gen`; 0 on a command, -1 if the link is gone. */
static int next_command(uint64_t gen, struct coord_cmd *cmd)
{
  char err[256];
  for (;;) {
    struct coord_msg msg;
    if (coord_client_recv(link_conn, &msg, -1) != 1)
      return -1;
    if (coord_cmd_decode(&msg, cmd, err, sizeof(err)) != 0) {
      fprintf(stderr, "mana_lh: rank %u: bad message from the coordinator: %s\n", my_rank, err);
      continue;
    }
    if (cmd->kind == COORD_CMD_QUIT || cmd->gen == gen)
      return 0;
  }
}

static void quit(const char *reason)
{
  fprintf(stderr, "mana: rank %u: job ended by the coordinator%s%s\n", my_rank,
          reason && *reason ? ": " : "", reason ? reason : "");
  _exit(1);
}

/* One generation, from CKPT to COMMITTED or ABORT; the application is parked in between. */
static void checkpoint(uint64_t gen, const char *dir_in_msg)
{
  char reason[512], name[64], xxh[32], dir[4096];
  /* The command's strings live in the receive buffer, which the next message reuses. */
  snprintf(dir, sizeof(dir), "%s", dir_in_msg);
  if (refusal(reason, sizeof(reason)) ||
      mana_park_all(MANA_PARK_SIGNAL, PARK_TIMEOUT_MS, reason, sizeof(reason)) != 0) {
    mana_park_release();
    coord_send_refuse(link_conn, gen, reason);
    return;
  }
  /* Alone in the job: no sequence numbers to agree on. */
  struct coord_cmd cmd;
  int rc;
  coord_send_seq(link_conn, gen, NULL, 0);
  while ((rc = next_command(gen, &cmd)) == 0 && cmd.kind == COORD_CMD_TARGETS)
    if (!cmd.more)
      coord_send_parked(link_conn, gen, cmd.epoch);
  if (rc != 0) { /* the coordinator died mid-checkpoint: nothing is committed, go on */
    mana_park_release();
    return;
  }
  if (cmd.kind == COORD_CMD_QUIT)
    quit(cmd.reason);
  if (cmd.kind == COORD_CMD_DRAIN) {
    struct mana_rank_facts facts = {my_rank, my_size, (uint32_t)mana_mpi_thread_level(), 0};
    uint64_t bytes = 0, hash = 0;
    mana_image_name(my_rank, name, sizeof(name));
    if (mana_checkpoint_write(dir, name, gen, &facts, &bytes, &hash, reason, sizeof(reason)) != 0) {
      coord_send_failed(link_conn, gen, reason);
    } else {
      snprintf(xxh, sizeof(xxh), "%016llx", (unsigned long long)hash);
      coord_send_written(link_conn, gen, bytes, name, xxh);
    }
    while ((rc = next_command(gen, &cmd)) == 0 && cmd.kind != COORD_CMD_COMMITTED &&
           cmd.kind != COORD_CMD_ABORT && cmd.kind != COORD_CMD_QUIT)
      ;
    if (rc != 0) {
      mana_park_release();
      return;
    }
  }
  if (cmd.kind == COORD_CMD_QUIT)
    quit(cmd.reason);
  if (cmd.kind == COORD_CMD_COMMITTED && cmd.then_exit) {
    fflush(NULL);
    _exit(0);
  }
  mana_park_release();
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
      return NULL;
    }
    if (coord_cmd_decode(&msg, &cmd, err, sizeof(err)) != 0)
      continue;
    if (cmd.kind == COORD_CMD_QUIT)
      quit(cmd.reason);
    if (cmd.kind == COORD_CMD_CKPT)
      checkpoint(cmd.gen, cmd.dir);
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
  pthread_t t;
  if (pthread_create(&t, NULL, run, NULL) != 0)
    fprintf(stderr, "mana_lh: rank %u: cannot start the checkpoint thread\n", my_rank);
}
