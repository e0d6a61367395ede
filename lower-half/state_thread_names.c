/* The names of the application's threads (/proc/PID/task/TID/comm): the main thread's is the
 * process's name in ps, top and a site's monitoring, and runtimes name their workers
 * (pthread_setname_np).  A restarted process's threads are made by the lower half and had its
 * name: every rank of a restarted job showed as "exe" and its named threads lost their names.
 * A checkpoint reads each parked thread's name, and each resumed thread names itself again.
 * At launch the main thread is named after the application, as an exec would (main.c). */
#define _GNU_SOURCE
#include "state_thread_names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image.h"
#include "mana/fail.h"
#include "mana/image_blobs.h"
#include "mana/park.h"
#include "mana/raw_syscall.h"
#include "state.h"

#define NAME_BYTES 16 /* TASK_COMM_LEN */

struct saved_name {
  uint32_t slot; /* park record */
  char name[NAME_BYTES];
};

static struct saved_name saved[MANA_MAX_THREADS];
static uint32_t n_saved;

/* What restore found for each park record, for mana_thread_name_apply ("" for none). */
static char names[MANA_MAX_THREADS][NAME_BYTES];

static int capture(char *err, size_t errlen)
{
  (void)err, (void)errlen;
  struct mana_park_area *area = MANA_PARK;
  n_saved = 0;
  for (uint32_t i = 0; i < MANA_MAX_THREADS; i++) {
    const struct mana_thread_record *r = &area->threads[i];
    if (r->state != MANA_THREAD_PARKED)
      continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", r->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct saved_name *s = &saved[n_saved];
    memset(s, 0, sizeof(*s));
    ssize_t n = fd >= 0 ? read(fd, s->name, sizeof(s->name) - 1) : -1;
    if (fd >= 0)
      close(fd);
    if (n <= 0)
      continue; /* a thread that is gone keeps no name */
    s->name[strcspn(s->name, "\n")] = '\0';
    s->slot = i;
    n_saved++;
  }
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  static const char none;
  const void *table = n_saved ? (const void *)saved : &none;
  if (mana_image_add_blob(w, MANA_BLOB_THREAD_NAMES, table, n_saved * sizeof(saved[0])) != 0)
    return mana_fail(err, errlen, 0, "thread names: %s", mana_image_writer_error(w));
  return 0;
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  const struct saved_name *s;
  size_t len;
  memset(names, 0, sizeof(names));
  if (mana_image_blob(r, MANA_BLOB_THREAD_NAMES, (const void **)&s, &len) != 0)
    return 0; /* an image from before the names were saved */
  if (len % sizeof(*s) != 0)
    return mana_fail(err, errlen, 0, "the image's thread names record is malformed");
  for (size_t i = 0; i < len / sizeof(*s); i++) {
    if (s[i].slot >= MANA_MAX_THREADS || memchr(s[i].name, 0, NAME_BYTES) == NULL)
      return mana_fail(err, errlen, 0, "the image's thread names record is malformed");
    memcpy(names[s[i].slot], s[i].name, NAME_BYTES);
  }
  return 0;
}

void mana_thread_name_apply(uint32_t slot)
{
  if (slot < MANA_MAX_THREADS && names[slot][0])
    mana_raw_syscall4(SYS_prctl, PR_SET_NAME, (long)names[slot], 0, 0);
}

void mana_thread_name_launch(const char *app)
{
  const char *base = strrchr(app, '/');
  char name[NAME_BYTES];
  snprintf(name, sizeof(name), "%s", base ? base + 1 : app);
  prctl(PR_SET_NAME, name);
}

const struct mana_state_ops mana_state_thread_names = {"thread names", dump, restore, capture,
                                                       NULL};
