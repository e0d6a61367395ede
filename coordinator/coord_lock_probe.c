/* coord_lock_probe: a live coordinator holds DIR/.mana/lock (see coord_lock_probe.h). */
#include "coord_lock_probe.h"
#include "coord_layout.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

bool coord_dir_served(const char *ckptdir)
{
  char path[PATH_MAX + 32];
  bool held;
  int fd;

  snprintf(path, sizeof(path), "%s/" STORE_META_DIR "/" STORE_LOCK_FILE, ckptdir);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    close(fd); /* releases the probe at once */
    return false;
  }
  held = errno == EWOULDBLOCK;
  close(fd);
  return held;
}
