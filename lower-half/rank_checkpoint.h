/* The order of a rank's checkpoint phases, once the rank has decided to checkpoint: the
 * one sequence both the coordinated path (coordinator_link.c) and the coordinator-less test
 * path (local_checkpoint.c) run.  The paths differ only in how they hear from and answer the
 * rest of the job, which they pass in as a struct rank_peers. */
#ifndef MANA_RANK_CHECKPOINT_H
#define MANA_RANK_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

/* How long parking may take before the checkpoint fails (ms). */
#define MANA_RANK_PARK_TIMEOUT_MS 10000

struct rank_peers {
  void *arg;
  /* Parked and settled: tells the other ranks and waits until every one is; 1 when all are,
   * 0 when the checkpoint ended elsewhere first, -1 when the link to them is lost.  NULL for
   * a path without peers to wait for; such a path drains nothing either, since the drain is
   * an exchange every rank must enter at the same safe point. */
  int (*suspended)(void *arg);
  /* Parked and drained: 0, or -1 when the link is lost.  Called only with `suspended`. */
  int (*drained)(void *arg);
  /* This rank cannot checkpoint now (refused: a state mana cannot restore; failed: parking,
   * draining or writing went wrong).  The job goes on. */
  void (*refused)(void *arg, const char *reason);
  void (*failed)(void *arg, const char *reason);
  /* The image is written: its file name in the directory, size, digest, oldest generation
   * referred to. */
  void (*written)(void *arg, const char *name, const struct mana_written *w);
  /* How the writer reports how far it is; NULL: no reports. */
  const struct mana_write_progress *progress;
  /* Non-zero: a forked child writes the image (checkpoint.h) and, once it runs, resumed() is
   * called so that the application goes on while the image is written; the verdict that
   * follows then finds the threads running (and must not end the job). */
  int forked;
  void (*resumed)(void *arg);
  /* The directory of the generation to write incrementally against, or NULL: a full image. */
  const char *base_dir;
};

enum rank_checkpoint_outcome {
  RANK_CKPT_LOST = -1,    /* the link to the other ranks is gone mid-way */
  RANK_CKPT_ENDED = 0,    /* parked, but the checkpoint ended elsewhere before every rank was */
  RANK_CKPT_REPORTED = 1, /* written, refused or failed here, and said so through `peers` */
};

/* As soon as the rank hears of a checkpoint, while its application still runs: stops the
 * background work of the last forked writer's generation (huge_pages.h). */
void mana_rank_checkpoint_prepare(void);

/* Parks every application thread, settles what only MPI's own wait completes, meets the
 * other ranks, drains, checks that nothing unrestorable is open and writes this rank's image
 * of generation `gen` into `dir`.  The threads stay parked: the caller ends with
 * mana_rank_checkpoint_leave once it knows the verdict. */
enum rank_checkpoint_outcome mana_rank_checkpoint(const struct rank_peers *peers, const char *dir,
                                                  uint64_t gen,
                                                  const struct mana_rank_facts *facts);

/* After the verdict: with then_exit, the rank ends as a finished MPI process with the exit
 * status given (every peer has its image written, the application is parked with nothing in
 * flight); otherwise the application threads go on.  Returns only without then_exit. */
void mana_rank_checkpoint_leave(int then_exit, int status);

#endif
