/* One file per kind of process state that lives outside the window's memory, each with its
 * dump (into an image blob) and its restore (from it), paired as the kinds are. */
#ifndef MANA_STATE_H
#define MANA_STATE_H

#include <stddef.h>

struct mana_image_writer;
struct mana_image_reader;

struct mana_state_ops {
  const char *name;
  int (*dump)(struct mana_image_writer *w, char *err, size_t errlen);
  int (*restore)(struct mana_image_reader *r, char *err, size_t errlen);
};

extern const struct mana_state_ops mana_state_window;  /* state_window.c */
extern const struct mana_state_ops mana_state_signals; /* state_signals.c */
extern const struct mana_state_ops mana_state_files;   /* state_files.c */
extern const struct mana_state_ops mana_state_pending; /* state_pending.c */

/* In dump and restore order. */
extern const struct mana_state_ops *const mana_state_kinds[];

#endif
