/* Giving the application back its huge pages after a forked writer or a restart (huge_pages.h).
 *
 * While the writer runs, the application's first write to a 2 MiB page it shares with the
 * writer splits that page's single page-table entry into 512 (Linux copies only the 4 KiB
 * written), and the split stays after the writer is gone. An application that wrote over most
 * of its memory meanwhile is back to 4 KiB entries, and the next fork copies them all: for
 * 1 GiB measured 5.5 to 12 ms instead of 1 to 1.5 ms. MADV_COLLAPSE (Linux 6.1) maps such a
 * range with one entry again; it copies the 2 MiB (about 0.2 ms each) and returns at once for
 * a range still mapped huge. A thread of the writer's nice value does it while the
 * application runs, and stops as soon as the next checkpoint begins. A restart starts it too:
 * it reads the saved pages back into 4 KiB pages (restart/image.h says why).
 *
 * Only ranges whose 512 pages are all present are collapsed: a range the application never
 * filled would grow to 2 MiB of memory. */
#define _GNU_SOURCE
#include "huge_pages.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image_scan.h"
#include "upper_mappings.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGES_PER_HUGE (MANA_HUGE_PAGE / 4096)

static int unsupported; /* the kernel has no MADV_COLLAPSE: do not ask again */

/* One background thread at a time, started and stopped by the checkpoint thread only. */
static pthread_t collapser;
static int collapser_running;
static int collapse_nice;
static int stop_collapse; /* atomic: the next checkpoint begins */

/* One call covers at most this much: a stopped thread may still be in it while the next
 * checkpoint forks, which then waits for the range being copied. */
#define COLLAPSE_STEP MANA_HUGE_PAGE

struct collapse {
  struct img_scan scan;
  uint64_t run_start, run_end; /* fully present 2 MiB ranges not collapsed yet */
};

static int stopping(void)
{
  return __atomic_load_n(&stop_collapse, __ATOMIC_ACQUIRE);
}

static void flush_run(struct collapse *c)
{
  for (uint64_t at = c->run_start; at < c->run_end && !unsupported && !stopping();
       at += COLLAPSE_STEP) {
    uint64_t len = c->run_end - at < COLLAPSE_STEP ? c->run_end - at : COLLAPSE_STEP;
    if (madvise((void *)at, len, MADV_COLLAPSE) != 0 && errno == EINVAL)
      unsupported = 1;
  }
  c->run_start = c->run_end = 0;
}

static int full(const struct img_scan *s, uint64_t first)
{
  const uint64_t present = 1ull << 63;
  for (uint64_t i = first; i < first + PAGES_PER_HUGE; i++)
    if (!(s->entries[i] & present))
      return 0;
  return 1;
}

static int collapse_mapping(const struct mana_mapping *m, void *arg)
{
  struct collapse *c = arg;
  /* the mappings huge_pages_for gives huge pages, as /proc/self/maps shows them */
  if (m->file_backed || m->shared || m->path[0] || m->prot != (PROT_READ | PROT_WRITE))
    return 0;
  uint64_t lo = (m->start + MANA_HUGE_PAGE - 1) & ~(MANA_HUGE_PAGE - 1);
  uint64_t hi = m->end & ~(MANA_HUGE_PAGE - 1);
  for (uint64_t at = lo; at < hi && !stopping();) {
    uint64_t n = (hi - at) / 4096;
    if (n > IMG_SCAN_CHUNK_PAGES)
      n = IMG_SCAN_CHUNK_PAGES;
    if (img_scan_read(&c->scan, at, n) != 0)
      break; /* unmapped meanwhile: the next mapping */
    for (uint64_t first = 0; first < n; first += PAGES_PER_HUGE, at += MANA_HUGE_PAGE) {
      if (!full(&c->scan, first)) {
        flush_run(c);
        continue;
      }
      if (c->run_end != at)
        flush_run(c);
      if (c->run_end == c->run_start)
        c->run_start = at;
      c->run_end = at + MANA_HUGE_PAGE;
    }
  }
  flush_run(c);
  return stopping();
}

static void *collapse_all(void *arg)
{
  (void)arg;
  /* The copying competes with the application like the writer's work does: at its priority
   * (this thread's own nice value; the checkpoint thread keeps its own). */
  setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), collapse_nice);
  struct collapse c = {.run_start = 0};
  if (img_scan_init(&c.scan) != 0)
    return NULL;
  char err[256];
  if (c.scan.pagemap_fd >= 0) /* without pagemap nothing says which ranges are full */
    mana_upper_mappings_each(collapse_mapping, &c, err, sizeof(err));
  img_scan_fini(&c.scan);
  return NULL;
}

void mana_huge_pages_recollapse_start(int nice_value)
{
  if (collapser_running) { /* stopped at the start of the checkpoint that just ended */
    pthread_join(collapser, NULL);
    collapser_running = 0;
  }
  if (!mana_huge_pages_min() || unsupported)
    return;
  collapse_nice = nice_value;
  __atomic_store_n(&stop_collapse, 0, __ATOMIC_RELEASE);
  collapser_running = pthread_create(&collapser, NULL, collapse_all, NULL) == 0;
}

void mana_huge_pages_recollapse_stop(void)
{
  __atomic_store_n(&stop_collapse, 1, __ATOMIC_RELEASE);
}
