/* Looking up /proc/self/maps (see image_maps.h). */
#include "image_maps.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int img_maps_find_overlap(uint64_t start, uint64_t end, char *line, size_t len)
{
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f)
    return -1;
  char buf[4352]; /* a line is at most ~80 bytes plus a path */
  bool at_line_start = true;
  int found = 0;
  while (!found && fgets(buf, sizeof(buf), f)) {
    size_t n = strlen(buf);
    bool whole = n > 0 && buf[n - 1] == '\n';
    uint64_t lo, hi;
    if (at_line_start && sscanf(buf, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && lo < end &&
        start < hi) {
      while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0'; /* anonymous mappings end in padding */
      snprintf(line, len, "%s", buf);
      found = 1;
    }
    at_line_start = whole;
  }
  fclose(f);
  return found;
}
