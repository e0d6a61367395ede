/* The upper half's memory: every mapping inside the window (and a non-PIE application's
 * segments) goes into the image as a region; restore maps each back at its address.
 *
 * PROT_NONE ranges are not saved: inside the window they are reservations (freed ranges,
 * malloc arena tails, guard pages), and a restarted lower half reserves the whole window
 * PROT_NONE again before anything is restored. */
#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "huge_pages.h"
#include "image.h"
#include "mana/boundary.h"
#include "mana/fail.h"

struct mapping {
  uint64_t start, end;
  uint32_t prot;
  int shared, file_backed;
  char path[256];
};

static int parse_maps_line(const char *line, struct mapping *m)
{
  char perms[8] = "";
  unsigned long lo, hi, inode;
  int path_at = 0;
  if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &inode, &path_at) < 4)
    return -1;
  m->start = lo;
  m->end = hi;
  m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
            (perms[2] == 'x' ? PROT_EXEC : 0);
  m->shared = perms[3] == 's';
  m->file_backed = inode != 0;
  snprintf(m->path, sizeof(m->path), "%s", line + path_at);
  m->path[strcspn(m->path, "\n")] = '\0';
  return 0;
}

static int is_upper(const struct mapping *m)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  if (m->start >= MANA_WINDOW_BASE && m->end <= MANA_WINDOW_END)
    return 1;
  for (uint32_t i = 0; i < b->n_extra_ranges; i++)
    if (m->start >= b->extra_ranges[i].start && m->end <= b->extra_ranges[i].end)
      return 1;
  return 0;
}

static int dump(struct mana_image_writer *w, char *err, size_t errlen)
{
  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps) {
    return mana_fail(err, errlen, errno, "cannot read /proc/self/maps");
  }
  char line[512];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof(line), maps)) {
    struct mapping m;
    if (parse_maps_line(line, &m) != 0 || !is_upper(&m) || m.prot == 0)
      continue;
    /* A file page not yet faulted in still holds file data: scan those regions fully. */
    uint32_t flags = (m.file_backed || m.shared) ? MANA_IMAGE_REGION_SCAN_ALL : 0;
    /* The control area (boundary page, thread records) is saved as one instant's copy, so the
     * bytes hashed are the bytes written: twice in about 25 test chains its region failed its
     * checksum at restart (a write to it during the dump, not found yet).  It is 68 KiB. */
    if (m.start < MANA_WINDOW_BASE + MANA_CONTROL_AREA_SIZE && m.start >= MANA_WINDOW_BASE)
      flags |= MANA_IMAGE_REGION_SNAPSHOT;
    if (mana_image_add_region(w, m.start, m.end - m.start, m.prot, flags,
                              m.path[0] ? m.path : NULL) != 0) {
      /* the writer's message names the file, the region and the reason */
      mana_fail(err, errlen, 0, "%s", mana_image_writer_error(w));
      rc = -1;
    }
  }
  fclose(maps);
  return rc;
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

const struct mana_state_ops mana_state_memory = {"upper-half memory", dump, restore, NULL};
