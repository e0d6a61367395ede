/* The upper half's memory: every mapping inside the window (and a non-PIE application's
 * segments) goes into the image as a region; restore maps each back at its address.
 *
 * PROT_NONE ranges are not saved: inside the window they are reservations (freed ranges,
 * malloc arena tails, guard pages), and a restarted lower half reserves the whole window
 * PROT_NONE again before anything is restored. */
#define _GNU_SOURCE
#include "state.h"

#include <stdio.h>
#include <sys/mman.h>

#include "huge_pages.h"
#include "image.h"
#include "mana/boundary.h"
#include "mana/fail.h"
#include "upper_mappings.h"

struct dump_args {
  struct mana_image_writer *w;
  char *err;
  size_t errlen;
};

static int add_region(const struct mana_mapping *m, void *arg)
{
  struct dump_args *a = arg;
  if (m->prot == 0)
    return 0;
  /* A file page not yet faulted in still holds file data: scan those regions fully. */
  uint32_t flags = (m->file_backed || m->shared) ? MANA_IMAGE_REGION_SCAN_ALL : 0;
  /* The control area (boundary page, thread records) is saved as one instant's copy, so the
   * bytes hashed are the bytes written: twice in about 25 test chains its region failed its
   * checksum at restart (a write to it during the dump; a thread created during the park and
   * never signalled, which claims its record when it parks at its first MPI call, could make
   * one until park.c counted the parked threads before listing them; whether it was that is
   * not known).  It is 68 KiB. */
  if (m->start < MANA_WINDOW_BASE + MANA_CONTROL_AREA_SIZE && m->start >= MANA_WINDOW_BASE)
    flags |= MANA_IMAGE_REGION_SNAPSHOT;
  if (mana_image_add_region(a->w, m->start, m->end - m->start, m->prot, flags,
                            m->path[0] ? m->path : NULL) != 0)
    /* the writer's message names the file, the region and the reason */
    return mana_fail(a->err, a->errlen, 0, "%s", mana_image_writer_error(a->w));
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  struct dump_args a = {w, err, errlen};
  return mana_upper_mappings_each(add_region, &a, err, errlen);
}

static int restore(struct mana_image_reader *r, char *err, size_t errlen)
{
  size_t n = mana_image_region_count(r);
  mana_image_set_huge_pages(r, mana_huge_pages_min());
  for (size_t i = 0; i < n; i++) {
    uint64_t start, len;
    if (mana_image_region_info(r, i, &start, &len, NULL, NULL, NULL) != 0)
      return -1;
    /* The window is reserved PROT_NONE by us: replace that reservation in place.  Outside it
     * (a non-PIE application) nothing may be in the way. */
    int inside = start >= MANA_WINDOW_BASE && start + len <= MANA_WINDOW_END;
    if (mana_image_restore_region(r, i, inside ? MAP_FIXED : 0, err, errlen) != 0)
      return -1;
  }
  return 0;
}

/* Writable memory the application shares with another process (a shared RMA window,
 * window_shm.c; a MAP_SHARED file): peers and the resumed application go on writing it while
 * a forked writer would read it, so the image would hold a later moment than the rest of the
 * rank's state. */
struct shared_found {
  char *why;
  size_t len;
};

static int shared_writable(const struct mana_mapping *m, void *arg)
{
  struct shared_found *f = arg;
  if (!m->shared || !(m->prot & PROT_WRITE))
    return 0;
  snprintf(f->why, f->len,
           "the application shares writable memory with another process (%s at %#llx, "
           "%llu KiB)",
           m->path[0] ? m->path : "anonymous", (unsigned long long)m->start,
           (unsigned long long)((m->end - m->start) >> 10));
  return 1;
}

static int unforkable(char *why, size_t len)
{
  struct shared_found f = {why, len};
  char err[256];
  int rc = mana_upper_mappings_each(shared_writable, &f, err, sizeof(err));
  if (rc < 0) /* cannot tell: the safe way */
    snprintf(why, len, "%s", err);
  return rc != 0;
}

const struct mana_state_ops mana_state_memory = {"upper-half memory", dump, restore, NULL,
                                                 unforkable};
