/* Writing one rank's image (checkpoint.c), and restarting a rank from one (restart.c).  Both
 * hold the order of phases only; each kind of state is a state_*.c (state.h). */
#ifndef MANA_CHECKPOINT_H
#define MANA_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "coord_layout.h"

struct mana_rank_facts {
  uint32_t rank, world_size, thread_level;
  /* MANA_BOUNDARY_VERSION of the mana that wrote the image: the stub inside the image and the
   * lower half that restarts it must agree on the boundary page's layout (0 in images written
   * before this field existed). */
  uint32_t boundary_version;
};

/* How a writer reports how far it is: progress(bytes so far, arg) every `every` bytes. */
struct mana_write_progress {
  mana_image_progress_fn *fn; /* NULL: no reports */
  void *arg;
  uint64_t every;
};

/* What writing an image gave: its size, its digest, and the oldest generation it refers to
 * (its own when it refers to none). */
struct mana_written {
  uint64_t bytes, hash, oldest;
};

/* With every upper-half thread parked: writes `name` (e.g. "rank-0000.img") in directory
 * `dir`.  With `base_dir` (the last committed generation's directory, or NULL), only the
 * pages that changed since the image of the same name there are stored; if that image cannot
 * serve, the image is written in full (and stderr says why). progress may be NULL. */
int mana_checkpoint_write(const char *dir, const char *name, uint64_t generation,
                          const char *base_dir, const struct mana_rank_facts *facts,
                          const struct mana_write_progress *progress, struct mana_written *out,
                          char *err, size_t errlen);

/* The same image, written by a forked child from its copy-on-write view of the process, so
 * that the application may resume as soon as this returns.  What the child cannot see is read
 * first (mana_state_ops.capture).  The child touches no MPI, network or coordinator link: it
 * writes the file, tells its outcome on a pipe and exits; it dies with the rank. */
struct mana_forked_writer {
  int pid;
  int result_fd;
};
int mana_checkpoint_fork_writer(const char *dir, const char *name, uint64_t generation,
                                const char *base_dir, const struct mana_rank_facts *facts,
                                struct mana_forked_writer *fw, char *err, size_t errlen);
/* 1 with the reason when some kind of state cannot be written by a forked writer
 * (mana_state_ops.unforkable): the rank must write its image itself. */
int mana_checkpoint_unforkable(char *why, size_t len);
/* Waits for the writer: 0 with what it wrote, or -1 with why (its own error, or how it
 * died). */
int mana_checkpoint_writer_wait(struct mana_forked_writer *fw, struct mana_written *out, char *err,
                                size_t errlen);
/* The nice value forked writers run at: MANA_WRITER_NICE, 0 to 19 (default 10), or the
 * calling thread's own when that is higher. */
int mana_checkpoint_writer_nice(void);

/* Runs a restart in a fresh mana_lh whose window is reserved and boundary filled: restores
 * the image `path` and continues the parked threads.  Returns only on failure: -1, or
 * MANA_RESTART_FAILED_TOGETHER when every rank found the same failure after the restarted
 * MPI_Init, so that all can end through MPI_Finalize (an abort may discard the lines the
 * ranks printed just before it). */
#define MANA_RESTART_FAILED_TOGETHER (-2)
int mana_restart_from(const char *path, char *err, size_t errlen);

#endif
