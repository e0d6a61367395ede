/* Writing a rank's image: memory, then the other kinds of state, then commit. */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "image.h"
#include "mana/boundary.h"
#include "mana/fault.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "mana/fail.h"

const struct mana_state_ops *const mana_state_kinds[] = {&mana_state_memory,  &mana_state_window,
                                                         &mana_state_signals, &mana_state_files,
                                                         &mana_state_pending, NULL};

int mana_checkpoint_write(const char *dir, const char *name, uint64_t generation,
                          const struct mana_rank_facts *facts,
                          const struct mana_write_progress *progress, uint64_t *bytes,
                          uint64_t *hash, char *err, size_t errlen)
{
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    return mana_fail(err, errlen, errno, "cannot open checkpoint directory %s", dir);
  }
  struct mana_image_info info;
  memset(&info, 0, sizeof(info));
  info.rank = facts->rank;
  info.world_size = facts->world_size;
  info.generation = generation;
  info.window_base = MANA_WINDOW_BASE;
  info.window_end = MANA_WINDOW_END;
  info.thread_level = facts->thread_level;
  struct mana_image_writer *w = NULL;
  int rc = mana_image_writer_open(&w, dirfd, name, &info, err, errlen);
  if (rc == 0 && progress && progress->fn)
    mana_image_writer_on_progress(w, progress->fn, progress->arg, progress->every);
  if (rc == 0)
    rc = mana_image_add_blob(w, MANA_BLOB_RANK, facts, sizeof(*facts));
  for (size_t i = 0; rc == 0 && mana_state_kinds[i]; i++) {
    rc = mana_state_kinds[i]->dump(w, err, errlen);
    if (rc == 0 && mana_state_kinds[i] == &mana_state_memory &&
        mana_fault("write-kill", (long)facts->rank))
      raise(SIGKILL); /* the image is half written: its temporary file stays behind */
  }
  if (rc == 0)
    rc = mana_image_writer_commit(w, bytes, hash, err, errlen);
  else
    mana_image_writer_abort(w);
  close(dirfd);
  return rc;
}
