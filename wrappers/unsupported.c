/* Kinds of MPI objects mana does not rebuild at restart yet: sessions (open MPI files are
 * rebuilt: mpiio.c; windows: window.c; matched messages are drained: message.c).  The
 * application may use them freely; a checkpoint is refused, with the object named, while one
 * exists. */
#include "records.h"

static int refuse_live(enum mana_kind kind, const char *what, char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[kind];
  if (t->in_use == 0)
    return 1;
  for (uint32_t i = 0; i < t->capacity; i++)
    if (mana_slot_at(t, i)->flags & MANA_SLOT_USED) {
      mana_reason(reason, len, "mana cannot rebuild yet:", what, mana_handle_make(kind, i));
      return 0;
    }
  return 1;
}

static int check_session(char *reason, size_t len)
{
  return refuse_live(MANA_KIND_SESSION, "session", reason, len);
}

const struct mana_kind_ops mana_session_ops = {.name = "session", .kind = MANA_KIND_SESSION,
                                               .check = check_session};
