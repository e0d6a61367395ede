/* Checkpoint image speed against the storage's own speed, measured in the same run.
 *
 * Each round fills a fresh memory region (random data, zero pages, untouched pages, in
 * clusters), writes it as an image, and times `dd` writing as many bytes to the same
 * directory (conv=fdatasync, and oflag=direct); then restores the image into place twice, as
 * a restart does by default and as a restart with forked writers does (lower-half/huge_pages.h:
 * the same reads into 4 KiB pages, the region then advised MADV_HUGEPAGE; the collapse into
 * huge pages that follows it in the background is timed apart), and times `dd` reading the
 * image file itself (cold cache, and iflag=direct) and the same 1 MiB direct reads as dd's but
 * each into its own place in a mapping of the file's size (no mana code: what placing the bytes
 * in memory costs on this machine, which dd, reading into one reused buffer, never pays): once
 * into fresh memory, which the reads fault in, and once into memory made present before the
 * clock starts; and times making as much fresh memory present with MADV_POPULATE_WRITE, without
 * reading anything (the part of that cost the storage plays no part in). The order of the
 * contenders rotates from round to round. Medians are compared at the end:
 *
 *   write   image bytes / (open + add_region + commit)   >= 90 % of the faster dd write
 *   size    image bytes                                  <= 1.02 x the region's resident bytes
 *   restore image bytes / (open + restore_region)        reported against dd read, both as a
 *           ratio of medians and as the median over rounds of the ratio to the faster dd read
 *           of the same round (the figures run_all.sh judges: the storage drifts between
 *           rounds), for both restores; the fresh-memory reads are reported the same way
 *
 * A first warm-up round (not counted) lets the page cache and the storage reach their steady
 * state; the first write of a gigabyte into a fresh page cache is slower for everyone.
 *
 * Usage: image_bench [-s MiB] [-r rounds] [-w warm-up rounds] [-z zero%] [-u untouched%] [DIR]
 * Exit: 0 targets met, 1 a target missed, 2 error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "image.h"

#define PAGE 4096UL
#define MIB (1UL << 20)
#define HUGE (2UL << 20)
#define MAX_ROUNDS 15
#define WRITE_TARGET 0.90
#define SIZE_TARGET 1.02

extern char **environ;

struct options {
  uint64_t mib;
  int rounds, warmup;
  int zero_pct, untouched_pct;
  const char *dir;
};

/* One round's figures, in seconds and bytes. */
struct round {
  double image_write, dd_write, dd_direct_write;
  double restore, restore_forked, fresh_read, present_read, dd_read, dd_direct_read;
  double populate;     /* MADV_POPULATE_WRITE of as much fresh memory as the image's size */
  double collapse;     /* after the forked-writer restore: MADV_COLLAPSE of its full ranges */
  uint64_t huge_bytes; /* AnonHugePages after that collapse */
  uint64_t image_bytes, resident_bytes;
  uint64_t dd_bytes; /* what the dd writes move: the resident bytes in whole MiB */
  struct mana_image_stats stats;
};

static struct options opt = {
    .mib = 1024, .rounds = 5, .warmup = 1, .zero_pct = 10, .untouched_pct = 10};
static char workdir[4096];
static int dirfd_ = -1;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "image_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(2);
}

/* ---- the region ------------------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Page kinds come in clusters of 1-64 pages, as in a real heap: 'D' data, 'Z' zero (written,
 * so resident), 'U' never touched. */
static void plan_pages(char *kind, uint64_t npages)
{
  for (uint64_t i = 0; i < npages;) {
    uint64_t len = 1 + next_random() % 64;
    int pick = (int)(next_random() % 100);
    char k = pick < opt.zero_pct ? 'Z' : pick < opt.zero_pct + opt.untouched_pct ? 'U' : 'D';
    for (uint64_t j = 0; j < len && i < npages; j++)
      kind[i++] = k;
  }
}

static void fill_page(uint64_t *p)
{
  for (size_t i = 0; i < PAGE / 8; i++)
    p[i] = next_random();
}

/* XXH3 over (index, page hash) of the data pages: the reference the restore must match. */
static uint64_t reference_hash(const char *base, const char *kind, uint64_t npages)
{
  XXH3_state_t *st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (uint64_t i = 0; i < npages; i++) {
    if (kind[i] != 'D')
      continue;
    uint64_t pair[2] = {i, XXH3_64bits(base + i * PAGE, PAGE)};
    XXH3_64bits_update(st, pair, sizeof(pair));
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

/* At a 2 MiB boundary, as mana's window places a large mapping under forked writers: the
 * forked-writer restore's collapse can then map its full ranges with huge pages. */
static char *make_region(const char *kind, uint64_t npages)
{
  uint64_t len = npages * PAGE;
  char *raw = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    die("cannot map the region: %s", strerror(errno));
  char *base = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
  if (base > raw)
    munmap(raw, (size_t)(base - raw));
  munmap(base + len, (size_t)(raw + HUGE - base));
  for (uint64_t i = 0; i < npages; i++) {
    if (kind[i] == 'D')
      fill_page((uint64_t *)(base + i * PAGE));
    else if (kind[i] == 'Z')
      memset(base + i * PAGE, 0, PAGE);
  }
  return base;
}

static uint64_t resident_bytes(const char *base, uint64_t npages)
{
  unsigned char *vec = malloc(npages);
  if (!vec || mincore((void *)base, npages * PAGE, vec) < 0)
    die("mincore: %s", strerror(errno));
  uint64_t n = 0;
  for (uint64_t i = 0; i < npages; i++)
    n += vec[i] & 1;
  free(vec);
  return n * PAGE;
}

/* After the restore: data pages as written, every other page zero. */
static void check_restored(const char *base, const char *kind, uint64_t npages, uint64_t ref)
{
  if (reference_hash(base, kind, npages) != ref)
    die("restored data pages differ from the original");
  for (uint64_t i = 0; i < npages; i++) {
    const uint64_t *w = (const uint64_t *)(base + i * PAGE);
    if (kind[i] != 'D' && (w[0] || w[PAGE / 8 - 1] || memcmp(w, w + 1, PAGE - 8)))
      die("page %llu ('%c') came back non-zero", (unsigned long long)i, kind[i]);
  }
}

/* ---- the contenders --------------------------------------------------------------------- */

static void settle(void)
{
  syncfs(dirfd_); /* earlier deletes and writes do not land inside the next measurement */
}

static void evict(const char *name)
{
  int fd = openat(dirfd_, name, O_RDONLY);
  if (fd < 0)
    return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

static double run_dd(const char *const args[])
{
  char *argv[16];
  int n = 0;
  argv[n++] = "dd";
  for (; args[n - 1] && n < 15; n++)
    argv[n] = (char *)args[n - 1];
  argv[n] = NULL;
  double t0 = now();
  pid_t pid;
  if (posix_spawnp(&pid, "dd", NULL, NULL, argv, environ) != 0)
    die("cannot run dd");
  int status;
  waitpid(pid, &status, 0);
  double t = now() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("dd %s failed", args[0]);
  return t;
}

static double dd_write(uint64_t bytes, bool direct)
{
  char of[4200], count[32];
  snprintf(of, sizeof(of), "of=%s/ddtest", workdir);
  snprintf(count, sizeof(count), "count=%llu", (unsigned long long)((bytes + MIB - 1) / MIB));
  unlinkat(dirfd_, "ddtest", 0);
  settle();
  const char *args[] = {
      "if=/dev/zero", of,  "bs=1M", count, direct ? "oflag=direct" : "conv=fdatasync",
      "status=none",  NULL};
  return run_dd(args);
}

/* The image file, as the restore reads it (dd reading the same file). */
static double dd_read(bool direct)
{
  char in[4200];
  snprintf(in, sizeof(in), "if=%s/bench.img", workdir);
  evict("bench.img");
  const char *args[] = {in,  "of=/dev/null", "bs=1M", "status=none", direct ? "iflag=direct" : NULL,
                        NULL};
  return run_dd(args);
}

static double image_write(char *base, uint64_t npages, struct round *r)
{
  char err[512];
  struct mana_image_writer *w;
  struct mana_image_info info = {.rank = 0, .world_size = 1, .generation = 1};
  unlinkat(dirfd_, "bench.img", 0);
  settle();
  double t0 = now();
  if (mana_image_writer_open(&w, dirfd_, "bench.img", &info, err, sizeof(err)) < 0)
    die("%s", err);
  if (mana_image_add_region(w, (uintptr_t)base, npages * PAGE, PROT_READ | PROT_WRITE, 0, "bench") <
      0)
    die("%s", mana_image_writer_error(w));
  mana_image_writer_stats(w, &r->stats);
  if (mana_image_writer_commit(w, &r->image_bytes, NULL, err, sizeof(err)) < 0)
    die("%s", err);
  return now() - t0;
}

/* The kernel's count of anonymous huge pages in this process, in bytes (0 if unknown). */
static uint64_t anon_huge_bytes(void)
{
  char line[256];
  unsigned long long kb = 0;
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return (uint64_t)kb << 10;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* What the lower half's thread does in the background after a restart with forked writers
 * (lower-half/huge_pages_collapse.c): MADV_COLLAPSE on every 2 MiB range whose pages are all
 * present. Not part of the restore's time; reported beside it. */
static double collapse_full_ranges(char *base, uint64_t npages)
{
  const uint64_t per = HUGE / PAGE;
  unsigned char *vec = malloc(npages);
  if (!vec || mincore(base, npages * PAGE, vec) < 0)
    die("mincore: %s", strerror(errno));
  double t0 = now();
  for (uint64_t first = 0; first + per <= npages; first += per) {
    uint64_t i = first;
    while (i < first + per && (vec[i] & 1))
      i++;
    if (i == first + per && madvise(base + first * PAGE, HUGE, MADV_COLLAPSE) < 0 &&
        errno == EINVAL)
      break; /* before Linux 6.1 */
  }
  double t = now() - t0;
  free(vec);
  return t;
}

/* `forked`: as a restart with forked writers does (lower-half/state_memory.c): regions of at
 * least 2 MiB are advised MADV_HUGEPAGE once their pages are read in; then the background
 * collapse, timed on its own. */
static double image_restore(char *base, const char *kind, uint64_t npages, uint64_t ref,
                            bool forked, struct round *r)
{
  char err[512];
  struct mana_image_reader *rd;
  munmap(base, npages * PAGE);
  evict("bench.img");
  double t0 = now();
  if (mana_image_open(&rd, dirfd_, "bench.img", NULL, err, sizeof(err)) < 0)
    die("%s", err);
  if (forked)
    mana_image_set_huge_pages(rd, HUGE);
  if (mana_image_restore_region(rd, 0, MAP_NORESERVE, err, sizeof(err)) < 0)
    die("%s", err);
  mana_image_close(rd);
  double t = now() - t0;
  /* Before the check, which reads the untouched pages and so would make every range look full. */
  if (forked) {
    r->collapse = collapse_full_ranges(base, npages);
    r->huge_bytes = anon_huge_bytes();
  }
  check_restored(base, kind, npages, ref);
  return t;
}

static char *map_for_reads(uint64_t room, int extra)
{
  char *dst = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
  if (dst == MAP_FAILED)
    die("cannot map %llu bytes: %s", (unsigned long long)room, strerror(errno));
  return dst;
}

/* dd iflag=direct's reads of the image file, 1 MiB each, but each into its own place in a
 * mapping of the file's size, as a restore places pages: the rate the storage and the
 * machine's memory together allow, with no mana code involved.  `present`: the mapping is made
 * present before the clock starts, so only the reads are timed. */
static double placed_read(uint64_t bytes, bool present)
{
  uint64_t room = (bytes + PAGE - 1) / PAGE * PAGE;
  evict("bench.img");
  char *dst = present ? map_for_reads(room, MAP_POPULATE) : NULL;
  double t0 = now();
  int fd = openat(dirfd_, "bench.img", O_RDONLY | O_DIRECT);
  if (fd < 0)
    die("cannot open bench.img with O_DIRECT: %s", strerror(errno));
  if (!present)
    dst = map_for_reads(room, MAP_NORESERVE);
  for (uint64_t off = 0; off < bytes;) {
    /* O_DIRECT reads whole blocks: the last one comes back short at the end of the file */
    ssize_t n = pread(fd, dst + off, room - off < MIB ? room - off : MIB, (off_t)off);
    if (n <= 0)
      die("reading bench.img at %llu: %s", (unsigned long long)off,
          n ? strerror(errno) : "end of file");
    off += (uint64_t)n;
  }
  close(fd);
  double t = now() - t0;
  munmap(dst, room);
  return t;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Fresh memory of that size made present, one thread, no reads: what a restore pays for its
 * pages before any byte arrives.  On a VM whose host backs guest memory lazily (free page
 * reporting) this can be slower than the storage.  0 when the kernel has no
 * MADV_POPULATE_WRITE (before 5.14). */
static double populate(uint64_t bytes)
{
  char *dst =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (dst == MAP_FAILED)
    die("cannot map %llu bytes: %s", (unsigned long long)bytes, strerror(errno));
  double t0 = now();
  int rc = madvise(dst, bytes, MADV_POPULATE_WRITE);
  double t = now() - t0;
  munmap(dst, bytes);
  return rc == 0 ? t : 0;
}

/* ---- one round -------------------------------------------------------------------------- */

static void one_round(int n, struct round *r)
{
  uint64_t npages = opt.mib * MIB / PAGE;
  char *kind = malloc(npages);
  if (!kind)
    die("no memory for the page plan");
  plan_pages(kind, npages);
  char *base = make_region(kind, npages);
  uint64_t ref = reference_hash(base, kind, npages);
  r->resident_bytes = resident_bytes(base, npages);
  r->dd_bytes = (r->resident_bytes + MIB - 1) / MIB * MIB;

  /* Writes, in an order that rotates with the round. */
  for (int k = 0; k < 3; k++) {
    switch ((k + n) % 3) {
    case 0:
      r->image_write = image_write(base, npages, r);
      break;
    case 1:
      r->dd_write = dd_write(r->dd_bytes, false);
      break;
    case 2:
      r->dd_direct_write = dd_write(r->dd_bytes, true);
      break;
    }
  }
  for (int k = 0; k < 7; k++) {
    switch ((k + n) % 7) {
    case 0:
      r->restore = image_restore(base, kind, npages, ref, false, r);
      break;
    case 1:
      r->dd_read = dd_read(false);
      break;
    case 2:
      r->restore_forked = image_restore(base, kind, npages, ref, true, r);
      break;
    case 3:
      r->dd_direct_read = dd_read(true);
      break;
    case 4:
      r->fresh_read = placed_read(r->image_bytes, false);
      break;
    case 5:
      r->populate = populate(r->image_bytes);
      break;
    case 6:
      r->present_read = placed_read(r->image_bytes, true);
      break;
    }
  }
  munmap(base, npages * PAGE);
  free(kind);
  unlinkat(dirfd_, "bench.img", 0);
}

/* ---- reporting -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median over the rounds of bytes/seconds, in MB/s (10^6): the bytes of the image (what every
 * read moves) or of the dd file (what the dd writes move). */
static double median_rate(const struct round *r, int n, size_t field, bool image_bytes)
{
  double v[MAX_ROUNDS];
  for (int i = 0; i < n; i++) {
    double secs = *(const double *)((const char *)&r[i] + field);
    double bytes = image_bytes ? (double)r[i].image_bytes : (double)r[i].dd_bytes;
    v[i] = bytes / secs / 1e6;
  }
  return median(v, n);
}

static double mbs(double bytes, double secs)
{
  return bytes / secs / 1e6;
}

/* The read figures a round compares with its dd reads; all of them move the image's bytes. */
enum reader { RESTORE, RESTORE_FORKED, FRESH_READ, PRESENT_READ };

static double read_seconds(const struct round *r, enum reader who)
{
  return who == RESTORE          ? r->restore
         : who == RESTORE_FORKED ? r->restore_forked
         : who == FRESH_READ     ? r->fresh_read
                                 : r->present_read;
}

/* A reader's rate over the faster of the two dd reads of the same round: they ran seconds
 * apart, while the storage's speed drifts by a factor of two between rounds. */
static double read_ratio(const struct round *r, enum reader who)
{
  double best = r->dd_read < r->dd_direct_read ? r->dd_read : r->dd_direct_read;
  return best / read_seconds(r, who);
}

/* The restore's rate over that of dd's direct reads placed into present memory. */
static double placed_ratio(const struct round *r)
{
  return r->present_read / r->restore;
}

static void print_round(int i, const struct round *r)
{
  double dd_bytes = (double)r->dd_bytes, img = (double)r->image_bytes;
  printf("round %d: write image %7.0f  dd fdatasync %7.0f  dd direct %7.0f (MB/s)\n", i + 1,
         mbs(img, r->image_write), mbs(dd_bytes, r->dd_write), mbs(dd_bytes, r->dd_direct_write));
  printf("         read restore %7.0f  forked %7.0f  fresh %7.0f  present %7.0f  dd %7.0f  "
         "dd direct %7.0f (MB/s)\n",
         mbs(img, r->restore), mbs(img, r->restore_forked), mbs(img, r->fresh_read),
         mbs(img, r->present_read), mbs(img, r->dd_read), mbs(img, r->dd_direct_read));
  printf("         over best dd: restore %.3f  forked %.3f  fresh %.3f  present %.3f; "
         "restore over present %.3f\n",
         read_ratio(r, RESTORE), read_ratio(r, RESTORE_FORKED), read_ratio(r, FRESH_READ),
         read_ratio(r, PRESENT_READ), placed_ratio(r));
  if (r->populate > 0)
    printf("         fresh memory made present, one thread, no reads: %.0f MB/s\n",
           mbs(img, r->populate));
}

static double median_read_ratio(const struct round *r, int n, enum reader who)
{
  double v[MAX_ROUNDS];
  for (int i = 0; i < n; i++)
    v[i] = read_ratio(&r[i], who);
  return median(v, n);
}

static double median_placed_ratio(const struct round *r, int n)
{
  double v[MAX_ROUNDS];
  for (int i = 0; i < n; i++)
    v[i] = placed_ratio(&r[i]);
  return median(v, n);
}

/* CPU seconds the whole machine spent busy so far (from /proc/stat). */
static double machine_busy(void)
{
  unsigned long long u, ni, sy, id, io, irq, sirq, st;
  FILE *f = fopen("/proc/stat", "r");
  if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &ni, &sy, &id, &io, &irq,
                   &sirq, &st) != 8) {
    if (f)
      fclose(f);
    return 0;
  }
  fclose(f);
  return (double)(u + ni + sy + irq + sirq + st) / (double)sysconf(_SC_CLK_TCK);
}

static double own_cpu(void)
{
  struct rusage self, kids;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &kids);
  return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
                  kids.ru_stime.tv_sec) +
         (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
                  kids.ru_stime.tv_usec) *
             1e-6;
}

static void print_loadavg(const char *when)
{
  char buf[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fgets(buf, sizeof(buf), f))
    buf[strcspn(buf, "\n")] = '\0';
  if (f)
    fclose(f);
  printf("load average %s: %s\n", when, buf);
}

static int verdicts(const struct round *r, int n)
{
  double w_img = median_rate(r, n, offsetof(struct round, image_write), true);
  double w_dd = median_rate(r, n, offsetof(struct round, dd_write), false);
  double w_ddd = median_rate(r, n, offsetof(struct round, dd_direct_write), false);
  double rd_img = median_rate(r, n, offsetof(struct round, restore), true);
  double rd_forked = median_rate(r, n, offsetof(struct round, restore_forked), true);
  double rd_fresh = median_rate(r, n, offsetof(struct round, fresh_read), true);
  double rd_present = median_rate(r, n, offsetof(struct round, present_read), true);
  double rd_dd = median_rate(r, n, offsetof(struct round, dd_read), true);
  double rd_ddd = median_rate(r, n, offsetof(struct round, dd_direct_read), true);
  double w_best = w_dd > w_ddd ? w_dd : w_ddd, rd_best = rd_dd > rd_ddd ? rd_dd : rd_ddd;
  double size_ratio = (double)r[0].image_bytes / (double)r[0].resident_bytes;
  const struct mana_image_stats *s = &r[0].stats;

  printf("\nmedians over %d rounds (MB/s = 10^6 bytes/s)\n", n);
  printf("  write:   image %.0f | dd conv=fdatasync %.0f, oflag=direct %.0f\n", w_img, w_dd, w_ddd);
  printf("  restore: image %.0f, with forked writers %.0f | dd read of the image (cold) %.0f, "
         "iflag=direct %.0f | dd's direct reads into fresh memory %.0f, into present memory "
         "%.0f\n",
         rd_img, rd_forked, rd_dd, rd_ddd, rd_fresh, rd_present);
  if (r[0].populate > 0)
    printf("  fresh memory made present (MADV_POPULATE_WRITE, one thread, no reads): %.0f; the "
           "restore reads into such memory, dd into its one warm buffer\n",
           median_rate(r, n, offsetof(struct round, populate), true));
  double coll[MAX_ROUNDS];
  for (int i = 0; i < n; i++)
    coll[i] = r[i].collapse * 1e3;
  printf("  after each forked-writer restore, collapsing its full 2 MiB ranges (in a restart: in "
         "the background) took %.0f ms (median), %llu MiB of huge pages then (0: no full range, or "
         "the "
         "kernel gave none)\n",
         median(coll, n), (unsigned long long)(r[0].huge_bytes >> 20));
  printf("  image %llu bytes = %llu saved pages + %llu bytes of header and tables; "
         "region %llu pages: %llu resident (%llu zero), %llu untouched, %llu runs\n",
         (unsigned long long)r[0].image_bytes, (unsigned long long)s->pages_saved,
         (unsigned long long)(r[0].image_bytes - s->pages_saved * PAGE),
         (unsigned long long)s->pages, (unsigned long long)(r[0].resident_bytes / PAGE),
         (unsigned long long)s->pages_zero, (unsigned long long)s->pages_absent,
         (unsigned long long)s->runs);
  bool w_ok = w_img >= WRITE_TARGET * w_best, s_ok = size_ratio <= SIZE_TARGET;
  printf("verdict write    %s  image/best dd = %.3f (target >= %.2f); vs fdatasync %.3f, "
         "vs direct %.3f\n",
         w_ok ? "PASS" : "FAIL", w_img / w_best, WRITE_TARGET, w_img / w_dd, w_img / w_ddd);
  printf("verdict size     %s  image/resident = %.4f (target <= %.2f)\n", s_ok ? "PASS" : "FAIL",
         size_ratio, SIZE_TARGET);
  printf("info    restore        image/best dd = %.3f; vs dd %.3f, vs direct %.3f\n",
         rd_img / rd_best, rd_img / rd_dd, rd_img / rd_ddd);
  printf("info    restore paired median over rounds of image/best dd of the round = %.3f\n",
         median_read_ratio(r, n, RESTORE));
  printf("info    restore-forked paired median over rounds of image/best dd of the round = %.3f\n",
         median_read_ratio(r, n, RESTORE_FORKED));
  printf("info    fresh-memory reads paired median over rounds of fresh/best dd of the round = "
         "%.3f\n",
         median_read_ratio(r, n, FRESH_READ));
  printf("info    present-memory reads paired median over rounds of present/best dd of the round "
         "= %.3f\n",
         median_read_ratio(r, n, PRESENT_READ));
  printf("info    restore-over-present paired median over rounds of image/present-memory reads "
         "of the round = %.3f\n",
         median_placed_ratio(r, n));
  return w_ok && s_ok ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------------------- */

static void parse(int argc, char **argv)
{
  int c;
  while ((c = getopt(argc, argv, "s:r:w:z:u:h")) != -1) {
    switch (c) {
    case 's':
      opt.mib = strtoull(optarg, NULL, 10);
      break;
    case 'r':
      opt.rounds = atoi(optarg);
      break;
    case 'w':
      opt.warmup = atoi(optarg);
      break;
    case 'z':
      opt.zero_pct = atoi(optarg);
      break;
    case 'u':
      opt.untouched_pct = atoi(optarg);
      break;
    default:
      fprintf(stderr, "usage: image_bench [-s MiB] [-r rounds] [-w warm-up rounds] [-z zero%%] "
                      "[-u untouched%%] [DIR]\n");
      exit(c == 'h' ? 0 : 2);
    }
  }
  opt.dir = optind < argc ? argv[optind] : "/tmp";
  if (opt.mib == 0 || opt.rounds < 1 || opt.rounds > MAX_ROUNDS || opt.warmup < 0 ||
      opt.zero_pct < 0 || opt.untouched_pct < 0 || opt.zero_pct + opt.untouched_pct > 90)
    die("bad options (rounds 1-15; zero%% + untouched%% <= 90)");
}

static void prepare_dir(void)
{
  snprintf(workdir, sizeof(workdir), "%s/mana-image-bench-%d", opt.dir, (int)getpid());
  if (mkdir(workdir, 0700) < 0)
    die("cannot create the work directory: %s", strerror(errno));
  dirfd_ = open(workdir, O_RDONLY | O_DIRECTORY);
  struct statvfs vfs;
  if (dirfd_ < 0 || fstatvfs(dirfd_, &vfs) < 0)
    die("cannot open the work directory: %s", strerror(errno));
  if ((double)vfs.f_bavail * (double)vfs.f_frsize < 2.5 * (double)opt.mib * MIB)
    die("not enough free space in %s for an image and a dd file", opt.dir);
}

static void remove_dir(void)
{
  unlinkat(dirfd_, "bench.img", 0);
  unlinkat(dirfd_, "bench.img.tmp", 0);
  unlinkat(dirfd_, "ddtest", 0);
  rmdir(workdir);
}

int main(int argc, char **argv)
{
  parse(argc, argv);
  prepare_dir();
  atexit(remove_dir);
  printf("image_bench: %llu MiB region, %d%% data / %d%% zero / %d%% untouched pages in "
         "clusters of 1-64; dir %s; %d rounds after %d warm-up; %ld CPUs\n",
         (unsigned long long)opt.mib, 100 - opt.zero_pct - opt.untouched_pct, opt.zero_pct,
         opt.untouched_pct, opt.dir, opt.rounds, opt.warmup, sysconf(_SC_NPROCESSORS_ONLN));
  print_loadavg("before");
  struct round r[MAX_ROUNDS] = {0};
  for (int i = 0; i < opt.warmup; i++)
    one_round(i, &r[0]);
  double busy0 = machine_busy(), own0 = own_cpu(), t0 = now();
  for (int i = 0; i < opt.rounds; i++) {
    one_round(i, &r[i]);
    print_round(i, &r[i]);
  }
  double wall = now() - t0;
  double others = (machine_busy() - busy0) - (own_cpu() - own0);
  print_loadavg("after");
  printf("other processes used %.0f%% of the machine's CPU time during the run (%.1f of %.1f "
         "CPU-seconds)%s\n",
         100 * others / (wall * (double)sysconf(_SC_NPROCESSORS_ONLN)), others,
         wall * (double)sysconf(_SC_NPROCESSORS_ONLN),
         others > 0.05 * wall * (double)sysconf(_SC_NPROCESSORS_ONLN) ? ": figures may be disturbed"
                                                                      : "");
  return verdicts(r, opt.rounds);
}
