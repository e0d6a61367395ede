/* The working directory of the process, shared by both halves.  A restart starts the ranks
 * wherever it was launched; an application that opens files by relative paths after the
 * restart must find them where it left them (HPCC appended the rest of its report in the
 * restart's directory, and HPL, not finding its input there, ran another problem and
 * reported success).  Read before any dump, like the open files, and entered at restart after
 * everything else is restored: mana's own paths are absolute by then.  A directory that is
 * gone fails the restart with its name, rather than letting the application write elsewhere.
 * One the application had already removed at the checkpoint (getcwd fails) has no path to
 * return to: it is recorded as empty and the restart stays where it was launched, as a
 * checkpoint must not fail for it. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

static char cwd[PATH_MAX];

static int capture(char *err, size_t errlen)
{
  (void)err;
  (void)errlen;
  if (!getcwd(cwd, sizeof(cwd)) || cwd[0] != '/')
    cwd[0] = '\0';
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_CWD, cwd, strlen(cwd) + 1) != 0)
    return mana_fail(err, errlen, 0, "working directory: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const char *dir;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_CWD, (const void **)&dir, &len) != 0 || len < 1 ||
      (dir[0] != '/' && dir[0] != '\0') || memchr(dir, '\0', len) != dir + len - 1)
    return mana_fail(err, errlen, 0, "working directory missing or malformed in the image");
  if (dir[0] != '\0' && chdir(dir) != 0)
    return mana_fail(err, errlen, errno,
                     "cannot return to the working directory %s the rank had at its checkpoint",
                     dir);
  return 0;
}

const struct mana_state_ops mana_state_cwd = {"working directory", dump, restore, capture, NULL};
