/* Shared pieces of the image library's unit tests (see test_image_helpers.h). */
#define _GNU_SOURCE
#include "test_image_helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

void tmpdir_make(struct tmpdir *d)
{
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(d->path, sizeof(d->path), "%s/mana-image-test-XXXXXX", base);
  cr_assert_not_null(mkdtemp(d->path), "mkdtemp %s", d->path);
  d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(d->fd, 0);
}

void tmpdir_remove(struct tmpdir *d)
{
  DIR *dir = opendir(d->path);
  struct dirent *e;
  while (dir && (e = readdir(dir)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      unlinkat(d->fd, e->d_name, 0);
  if (dir)
    closedir(dir);
  close(d->fd);
  rmdir(d->path);
}

int tmpdir_count(const struct tmpdir *d)
{
  DIR *dir = opendir(d->path);
  struct dirent *e;
  int n = 0;
  while (dir && (e = readdir(dir)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (dir)
    closedir(dir);
  return n;
}

int file_exists(const struct tmpdir *d, const char *name)
{
  return faccessat(d->fd, name, F_OK, 0) == 0;
}

void *reserve(size_t len)
{
  void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  return p;
}

void *map_rw_at(void *at, size_t len)
{
  void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  cr_assert_eq(p, at);
  return p;
}

void rereserve(void *at, size_t len)
{
  void *p =
      mmap(at, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  cr_assert_eq(p, at);
}

void fill_random(void *p, size_t len, uint64_t seed)
{
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  unsigned char *c = p;
  for (size_t i = 0; i < len; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c[i] = (unsigned char)(x >> 24) | 1; /* never a zero byte: pages are never all zero */
  }
}

struct mana_image_info test_info(void)
{
  struct mana_image_info info = {.rank = 3,
                                 .world_size = 8,
                                 .generation = 42,
                                 .window_base = 0x600000000000,
                                 .window_end = 0x610000000000,
                                 .thread_level = 2,
                                 .vdso_base = 0x7ffff7fc1000,
                                 .created_unix_ns = 1700000000123456789};
  snprintf(info.hostname, sizeof(info.hostname), "node-17");
  snprintf(info.kernel_release, sizeof(info.kernel_release), "6.1.0-test");
  return info;
}

const char *maps_perms(const void *addr)
{
  static char perms[8];
  char line[4352];
  FILE *f = fopen("/proc/self/maps", "r");
  perms[0] = '\0';
  while (f && fgets(line, sizeof(line), f)) {
    uint64_t lo, hi;
    char p[8];
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, p) == 3 && lo <= (uintptr_t)addr &&
        (uintptr_t)addr < hi) {
      snprintf(perms, sizeof(perms), "%s", p);
      break;
    }
  }
  if (f)
    fclose(f);
  return perms;
}

int page_resident(const void *addr)
{
  unsigned char v = 0;
  cr_assert_eq(mincore((void *)addr, PAGE, &v), 0);
  return v & 1;
}

/* Region 0: 40 pages, page kind by index: random data, zero written (present), untouched. */
static char page_kind(size_t i)
{
  static const char pattern[] = "DDDZUUDZDDDUUUUDDZZDUDUDDDDDDDDDUZZZDDDU";
  return pattern[i];
}

void write_std_image(const struct tmpdir *d, const char *name, struct std_image *img)
{
  img->base = reserve(STD_RESERVE);
  img->region0_len = 40 * PAGE;
  img->region1_len = 3 * PAGE;
  img->expect = calloc(1, img->region0_len);
  char *r0 = map_rw_at(img->base, img->region0_len);
  for (size_t i = 0; i < 40; i++) {
    if (page_kind(i) == 'D')
      fill_random(img->expect + i * PAGE, PAGE, i + 1);
    if (page_kind(i) != 'U')
      memcpy(r0 + i * PAGE, img->expect + i * PAGE, PAGE);
  }
  char *r1 = map_rw_at(img->base + 48 * PAGE, img->region1_len);
  fill_random(r1, img->region1_len, 99);
  cr_assert_eq(mprotect(r1, img->region1_len, PROT_READ), 0);

  struct mana_image_writer *w;
  char err[512];
  struct mana_image_info info = test_info();
  cr_assert_eq(mana_image_writer_open(&w, d->fd, name, &info, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(mana_image_add_blob(w, STD_BLOB_TYPE, "hello blob", 10), 0);
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)r0, img->region0_len, PROT_READ | PROT_WRITE, 0, "mixed"),
      0, "%s", mana_image_writer_error(w));
  cr_assert_eq(
      mana_image_add_region(w, (uintptr_t)r1, img->region1_len, PROT_READ, 0x10000, "readonly"), 0,
      "%s", mana_image_writer_error(w));
  cr_assert_eq(mana_image_add_blob(w, 8, "second", 6), 0);
  cr_assert_eq(mana_image_writer_commit(w, &img->file_size, &img->digest, err, sizeof(err)), 0,
               "%s", err);
  rereserve(img->base, STD_RESERVE);
}

void free_std_image(struct std_image *img)
{
  free(img->expect);
  munmap(img->base, STD_RESERVE);
}

static int open_file(const struct tmpdir *d, const char *name, int flags)
{
  int fd = openat(d->fd, name, flags);
  cr_assert_geq(fd, 0, "open %s", name);
  return fd;
}

struct img_header read_header(const struct tmpdir *d, const char *name)
{
  struct img_header h;
  int fd = open_file(d, name, O_RDONLY);
  cr_assert_eq(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
  close(fd);
  return h;
}

void write_header(const struct tmpdir *d, const char *name, struct img_header *h, int rehash)
{
  if (rehash)
    h->header_hash = XXH3_64bits(h, offsetof(struct img_header, header_hash));
  int fd = open_file(d, name, O_WRONLY);
  cr_assert_eq(pwrite(fd, h, sizeof(*h), 0), (ssize_t)sizeof(*h));
  close(fd);
}

void flip_byte(const struct tmpdir *d, const char *name, uint64_t off)
{
  int fd = open_file(d, name, O_RDWR);
  unsigned char c;
  cr_assert_eq(pread(fd, &c, 1, (off_t)off), 1);
  c ^= 0x20;
  cr_assert_eq(pwrite(fd, &c, 1, (off_t)off), 1);
  close(fd);
}

void truncate_file(const struct tmpdir *d, const char *name, uint64_t len)
{
  int fd = open_file(d, name, O_WRONLY);
  cr_assert_eq(ftruncate(fd, (off_t)len), 0);
  close(fd);
}

const char *open_error(const struct tmpdir *d, const char *name)
{
  static char err[1024];
  struct mana_image_reader *r;
  struct mana_image_info info;
  if (mana_image_open(&r, d->fd, name, &info, err, sizeof(err)) == 0) {
    mana_image_close(r);
    return NULL;
  }
  return err;
}
