/* Listing the upper half's mappings (upper_mappings.h). */
#define _GNU_SOURCE
#include "upper_mappings.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "mana/boundary.h"
#include "mana/fail.h"

static int parse_maps_line(const char *line, struct mana_mapping *m)
{
  char perms[8] = "";
  unsigned long lo, hi, offset, inode;
  unsigned major, minor;
  int path_at = 0;
  if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &offset, &major, &minor, &inode,
             &path_at) < 7)
    return -1;
  m->dev = (uint64_t)major << 32 | minor;
  m->inode = inode;
  m->start = lo;
  m->end = hi;
  m->offset = offset;
  m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
            (perms[2] == 'x' ? PROT_EXEC : 0);
  m->shared = perms[3] == 's';
  m->file_backed = inode != 0;
  m->fork_advice = 0;
  snprintf(m->path, sizeof(m->path), "%s", line + path_at);
  m->path[strcspn(m->path, "\n")] = '\0';
  return 0;
}

static int is_upper(const struct mana_mapping *m)
{
  const struct mana_boundary *b = MANA_BOUNDARY;
  if (m->start >= MANA_WINDOW_BASE && m->end <= MANA_WINDOW_END)
    return 1;
  for (uint32_t i = 0; i < b->n_extra_ranges; i++)
    if (m->start >= b->extra_ranges[i].start && m->end <= b->extra_ranges[i].end)
      return 1;
  return 0;
}

/* 1 when word (two letters) is one of the flags of a "VmFlags:" line. */
static int has_vm_flag(const char *line, const char *word)
{
  for (const char *p = line + strlen("VmFlags:"); (p = strstr(p, word)) != NULL; p += 2)
    if (p[-1] == ' ' && (p[2] == ' ' || p[2] == '\n' || p[2] == '\0'))
      return 1;
  return 0;
}

int mana_upper_mappings_each_advised(int (*fn)(const struct mana_mapping *m, void *arg), void *arg,
                                     char *err, size_t errlen)
{
  FILE *smaps = fopen("/proc/self/smaps", "re");
  if (!smaps)
    return mana_fail(err, errlen, errno, "cannot read /proc/self/smaps");
  char line[4608];
  int rc = 0, have = 0;
  struct mana_mapping m;
  while (rc == 0 && fgets(line, sizeof(line), smaps)) {
    if (strncmp(line, "VmFlags:", 8) == 0) { /* the last line of a mapping's entry */
      m.fork_advice = (has_vm_flag(line, "dc") ? MANA_ADVISED_DONTFORK : 0) |
                      (has_vm_flag(line, "wf") ? MANA_ADVISED_WIPEONFORK : 0);
      if (have && is_upper(&m))
        rc = fn(&m, arg);
      have = 0;
    } else if (parse_maps_line(line, &m) == 0) {
      have = 1;
    }
  }
  fclose(smaps);
  return rc;
}

int mana_upper_mappings_each(int (*fn)(const struct mana_mapping *m, void *arg), void *arg,
                             char *err, size_t errlen)
{
  FILE *maps = fopen("/proc/self/maps", "re");
  if (!maps)
    return mana_fail(err, errlen, errno, "cannot read /proc/self/maps");
  char line[4608];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof(line), maps)) {
    struct mana_mapping m;
    if (parse_maps_line(line, &m) == 0 && is_upper(&m))
      rc = fn(&m, arg);
  }
  fclose(maps);
  return rc;
}

int mana_upper_mappings_capture(int (*fn)(const struct mana_mapping *m, void *why), char *err,
                                size_t errlen)
{
  char why[256] = "";
  int rc = mana_upper_mappings_each(fn, why, err, errlen);
  if (rc != 0 && why[0])
    snprintf(err, errlen, "%s", why);
  return rc;
}
