/* coord_layout: names in a checkpoint directory (see coord_layout.h). */
#include "coord_layout.h"
#include "coord_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "mana/fail.h"

void store_meta_file(const char *dir, const char *name, char *out, size_t len)
{
  snprintf(out, len, "%s/" STORE_META_DIR "/%s", dir, name);
}

void store_gen_dir(const char *dir, uint64_t gen, char *out, size_t len)
{
  snprintf(out, len, "%s/gen-%06" PRIu64, dir, gen);
}

bool store_gen_dir_number(const char *name, uint64_t *gen)
{
  if (strncmp(name, "gen-", 4) != 0)
    return false;
  return coord_parse_u64(name + 4, gen);
}

int store_read_latest(const char *dir, uint64_t *gen, char *err, size_t errlen)
{
  char path[PATH_MAX + 16], buf[32];
  ssize_t n;
  int fd;

  *gen = 0;
  snprintf(path, sizeof(path), "%s/" STORE_LATEST_FILE, dir);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0) {
    return mana_fail(err, errlen, errno, "cannot open %s", path);
  }
  n = read(fd, buf, sizeof(buf) - 1);
  if (n < 0)
    mana_fail(err, errlen, errno, "cannot read %s", path);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  if (!coord_parse_u64(buf, gen)) {
    mana_fail(err, errlen, 0, "%s does not hold a generation number", path);
    return -2;
  }
  return 0;
}
