/* The process's file mode creation mask.  A restarted process has the mask of the shell that
 * started the restart; the application may have set its own (umask(077) before writing
 * private results), and files it made after the restart got other permissions. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "state.h"

static uint32_t saved_umask;

/* From /proc (Linux 4.7): umask() would set it to read it, under a lower-half thread that the
 * application's threads share it with. */
static int capture(char *err, size_t errlen)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return mana_fail(err, errlen, errno, "cannot read /proc/self/status");
  char line[256];
  int found = 0;
  while (!found && fgets(line, sizeof(line), f)) {
    unsigned int mask;
    if (sscanf(line, "Umask: %o", &mask) == 1) {
      saved_umask = mask & 0777;
      found = 1;
    }
  }
  fclose(f);
  if (!found)
    return mana_fail(err, errlen, 0, "/proc/self/status shows no Umask line");
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  if (mana_image_add_blob(w, MANA_BLOB_UMASK, &saved_umask, sizeof(saved_umask)) != 0)
    return mana_fail(err, errlen, 0, "umask: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const uint32_t *mask;
  size_t len;
  if (mana_image_blob(r, MANA_BLOB_UMASK, (const void **)&mask, &len) != 0)
    return 0; /* an image from before the mask was saved */
  if (len != sizeof(*mask))
    return mana_fail(err, errlen, 0, "the image's umask record is malformed");
  umask(*mask & 0777);
  return 0;
}

const struct mana_state_ops mana_state_umask = {"umask", dump, restore, capture, NULL};
