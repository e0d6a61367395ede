/*
 * dirty_tracking.c - the two ways an incremental checkpoint can find the pages that changed,
 * measured on this machine: hashing every page (what mana does) against userfaultfd
 * asynchronous write-protection read back with PAGEMAP_SCAN (Linux 6.7+).
 *
 *   usage: dirty_tracking [MIB]      (default 1024)
 *
 * Fills MIB MiB, then prints:
 *   - XXH3_64bits of every page: what the writer of an incremental image spends on reading
 *     (in the forked writer, off the application's path);
 *   - write-protecting the range (UFFDIO_WRITEPROTECT, at each checkpoint), then for 1, 10 and
 *     100 % of the pages written by the "application": the time of those writes (each first
 *     write to a protected page takes a fault the kernel resolves itself: this is what the
 *     application would pay, on its own path, once per page per checkpoint interval), and the
 *     time of one PAGEMAP_SCAN that lists the written pages and protects them again.
 * Needs UFFD_FEATURE_WP_ASYNC (Linux 6.7+) and a userfaultfd the process may open
 * (vm.unprivileged_userfaultfd, or root); says so and stops otherwise.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* From the uapi headers of Linux 6.7, which Debian 12's are older than. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
struct scan_arg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
  uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct scan_region {
  uint64_t start, end, categories;
};
#define SCAN_IOCTL _IOWR('f', 16, struct scan_arg)
#define SCAN_WP_MATCHING (1 << 0)
#define IS_WRITTEN (1 << 1)
#define PAGE 4096

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct scan_region regions[1 << 16];

/* Written pages of [p, p + len), protected again; -1 on error. */
static long scan_written(int pagemap, char *p, size_t len)
{
  struct scan_arg a = {.size = sizeof(a),
                       .flags = SCAN_WP_MATCHING,
                       .start = (uint64_t)(uintptr_t)p,
                       .end = (uint64_t)(uintptr_t)p + len,
                       .vec = (uint64_t)(uintptr_t)regions,
                       .vec_len = 1 << 16,
                       .category_mask = IS_WRITTEN,
                       .return_mask = IS_WRITTEN};
  long n = ioctl(pagemap, SCAN_IOCTL, &a);
  if (n < 0)
    return -1;
  long pages = 0;
  for (long i = 0; i < n; i++)
    pages += (long)((regions[i].end - regions[i].start) / PAGE);
  return pages;
}

int main(int argc, char **argv)
{
  size_t len = (size_t)(argc > 1 ? atoi(argv[1]) : 1024) << 20, npages = len / PAGE;
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || npages == 0)
    return perror("mmap"), 1;
  memset(p, 1, len);
  for (size_t i = 0; i < npages; i++) /* pages of different content, as in a real heap */
    memcpy(p + i * PAGE, &i, sizeof(i));

  double t = now();
  uint64_t h = 0;
  for (size_t i = 0; i < npages; i++)
    h ^= XXH3_64bits(p + i * PAGE, PAGE);
  printf("hash every page (XXH3_64bits): %.1f ms for %zu MiB [%016llx]\n", (now() - t) * 1e3,
         len >> 20, (unsigned long long)h);

  int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  struct uffdio_api api = {.api = UFFD_API,
                           .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
  struct uffdio_register reg = {.range = {(uint64_t)(uintptr_t)p, len},
                                .mode = UFFDIO_REGISTER_MODE_WP};
  if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
    perror("userfaultfd with asynchronous write-protection");
    return 2;
  }
  int pagemap = open("/proc/self/pagemap", O_RDONLY);
  t = now();
  struct uffdio_writeprotect wp = {.range = {(uint64_t)(uintptr_t)p, len},
                                   .mode = UFFDIO_WRITEPROTECT_MODE_WP};
  if (pagemap < 0 || ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
    return perror("write-protect"), 2;
  printf("write-protect the range: %.1f ms\n", (now() - t) * 1e3);
  for (int pct = 1; pct <= 100; pct *= 10) {
    size_t n = npages * (size_t)pct / 100;
    t = now();
    for (size_t i = 0; i < n; i++)
      p[(i * npages / n) * PAGE] += 1;
    double writes = now() - t;
    t = now();
    long found = scan_written(pagemap, p, len);
    if (found < 0)
      return perror("PAGEMAP_SCAN"), 2;
    printf("%3d %% of the pages written: the writes took %.1f ms (%.0f ns per page, a fault "
           "each); PAGEMAP_SCAN found %ld pages and protected them again in %.2f ms\n",
           pct, writes * 1e3, writes * 1e9 / (double)n, found, (now() - t) * 1e3);
  }
  return 0;
}
