/* Page presence from /proc/self/pagemap (see image_scan.h).
 *
 * Each 8-byte pagemap entry has bit 63 "present" and bit 62 "swapped"; a private anonymous
 * page with neither was never written and reads as zeros, so it need not be saved. mincore()
 * is not a substitute: for anonymous memory it reports swapped-out pages as absent, which
 * would lose data. Without pagemap every page is read and only the zero test skips pages. */
#include "image_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "image_format.h"
#include "image_util.h"

int img_scan_init(struct img_scan *s)
{
  s->entries = malloc(IMG_SCAN_CHUNK_PAGES * sizeof(uint64_t));
  if (!s->entries)
    return -1;
  s->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  return 0;
}

void img_scan_fini(struct img_scan *s)
{
  if (s->pagemap_fd >= 0)
    close(s->pagemap_fd);
  free(s->entries);
  s->entries = NULL;
  s->pagemap_fd = -1;
}

int img_scan_read(struct img_scan *s, uint64_t addr, uint64_t npages)
{
  if (s->pagemap_fd < 0) {
    for (uint64_t i = 0; i < npages; i++)
      s->entries[i] = 1ull << 63;
    return 0;
  }
  uint64_t off = (addr >> IMG_PAGE_SHIFT) * sizeof(uint64_t);
  return img_pread_all(s->pagemap_fd, s->entries, npages * sizeof(uint64_t), off);
}
