/* The window allocator's free extents.  They live in lower-half memory, which an image does not
 * hold, and cannot be read back from the memory map: a free range and a range the upper half
 * reserved PROT_NONE (a malloc arena's tail, a guard page) look the same there. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "address_space.h"
#include "image.h"
#include "mana/image_blobs.h"
#include "state.h"
#include "mana/upper_window.h"
#include "mana/fail.h"

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  struct mana_window *win = &mana_the_window;
  size_t len = offsetof(struct mana_window, free) + win->n_free * sizeof(win->free[0]);
  if (mana_image_add_blob(w, MANA_BLOB_WINDOW_FREE, win, len) != 0) {
    return mana_fail(err, errlen, 0, "window allocator: %s", mana_image_writer_error(w));
  }
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct mana_window *saved;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_WINDOW_FREE, (const void **)&saved, &len) != 0 ||
      len < offsetof(struct mana_window, free) ||
      len != offsetof(struct mana_window, free) + saved->n_free * sizeof(saved->free[0]) ||
      saved->base != mana_the_window.base || saved->end != mana_the_window.end) {
    return mana_fail(err, errlen, 0, "window allocator state missing or inconsistent in the image");
  }
  memcpy(&mana_the_window, saved, len);
  mana_the_window.lock = 0;
  mana_window_exclude_free_from_cores();
  return 0;
}

const struct mana_state_ops mana_state_window = {"window allocator", dump, restore, NULL, NULL};
