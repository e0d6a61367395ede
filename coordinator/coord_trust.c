/* coord_trust: ownership and mode of checkpoint files (see coord_trust.h). */
#include "coord_trust.h"
#include "coord_proto.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mana/fail.h"

int coord_trusted(const char *path, int dir, int top, char *err, size_t errlen)
{
  struct stat st;
  uid_t me = geteuid();

  if (stat(path, &st) != 0)
    return mana_fail(err, errlen, errno, "%s", path);
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return mana_fail(err, errlen, 0, "%s is not a %s", path, dir ? "directory" : "regular file");
  if (st.st_uid != me && st.st_uid != 0)
    return mana_fail(err, errlen, 0,
                     "refusing %s: it belongs to uid %u, not to this user (uid %u), "
                     "who could change the checkpoint; use a directory of your own",
                     path, (unsigned)st.st_uid, (unsigned)me);
  /* The top directory may be a shared one's child made writable on purpose; everything
   * in it that a restart reads is checked itself. */
  if (!top && (st.st_mode & (S_IWGRP | S_IWOTH)))
    return mana_fail(err, errlen, 0,
                     "refusing %s: its mode %03o lets group or others change it "
                     "(chmod go-w %s)",
                     path, (unsigned)(st.st_mode & 0777), path);
  return 0;
}
