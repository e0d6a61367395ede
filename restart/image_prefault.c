/* The helper that faults restored pages in ahead of the reads (see image_prefault.h). */
#define _GNU_SOURCE
#include "image_prefault.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mana/signals.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A huge page at a time: a stop request is seen within one step. */
#define STEP (2ull << 20)

int img_prefault_add(struct img_prefault *pf, void *base, uint64_t len)
{
  if (pf->dropped)
    return -1;
  struct img_extent *last = pf->count ? &pf->extents[pf->count - 1] : NULL;
  if (last && (char *)last->base + last->len == (char *)base) {
    last->len += len;
    return 0;
  }
  if (pf->count == pf->room) {
    size_t room = pf->room ? 2 * pf->room : 64;
    struct img_extent *e = realloc(pf->extents, room * sizeof(*e));
    if (!e) {
      pf->dropped = true;
      return -1;
    }
    pf->extents = e;
    pf->room = room;
  }
  pf->extents[pf->count++] = (struct img_extent){base, len};
  return 0;
}

static void walk(struct img_prefault *pf)
{
  for (size_t i = 0; i < pf->count; i++) {
    char *p = pf->extents[i].base, *end = p + pf->extents[i].len;
    while (p < end) {
      if (atomic_load_explicit(&pf->stop, memory_order_relaxed))
        return;
      uint64_t n = (uint64_t)(end - p) < STEP ? (uint64_t)(end - p) : STEP;
      /* Refused (before Linux 5.14, or memory the kernel will not fault): the reads fault
       * the pages in, as without the helper. */
      if (madvise(p, n, MADV_POPULATE_WRITE) < 0)
        return;
      atomic_fetch_add_explicit(&pf->done, n, memory_order_relaxed);
      p += n;
    }
  }
}

static void *helper_main(void *arg)
{
  struct img_prefault *pf = arg;
  pthread_mutex_lock(&pf->lock);
  for (;;) {
    while (!pf->posted && !pf->quit)
      pthread_cond_wait(&pf->cond, &pf->lock);
    if (pf->quit)
      break;
    pthread_mutex_unlock(&pf->lock);
    walk(pf);
    pthread_mutex_lock(&pf->lock);
    pf->posted = false;
    pthread_cond_broadcast(&pf->cond);
  }
  pthread_mutex_unlock(&pf->lock);
  return NULL;
}

struct img_prefault *img_prefault_open(void)
{
  struct img_prefault *pf = calloc(1, sizeof(*pf));
  if (!pf)
    return NULL;
  pthread_mutex_init(&pf->lock, NULL);
  pthread_cond_init(&pf->cond, NULL);
  sigset_t all, old;
  pthread_attr_t attr;
  /* Signals are meant for the program's threads, not for this one. */
  mana_sigset_block_all(&all);
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pf->started = pthread_create(&pf->thread, &attr, helper_main, pf) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return pf;
}

bool img_prefault_start(struct img_prefault *pf)
{
  const char *env = getenv("MANA_IMAGE_PREFAULT");
  if (!pf->started || pf->dropped || !pf->count || (env && strcmp(env, "0") == 0))
    return false;
  atomic_store(&pf->stop, false);
  atomic_store(&pf->done, 0);
  pthread_mutex_lock(&pf->lock);
  pf->posted = true;
  pthread_cond_broadcast(&pf->cond);
  pthread_mutex_unlock(&pf->lock);
  return true;
}

void img_prefault_finish(struct img_prefault *pf)
{
  atomic_store(&pf->stop, true);
  pthread_mutex_lock(&pf->lock);
  while (pf->posted)
    pthread_cond_wait(&pf->cond, &pf->lock);
  pthread_mutex_unlock(&pf->lock);
  pf->count = 0;
  pf->dropped = false;
}

void img_prefault_close(struct img_prefault *pf)
{
  if (!pf)
    return;
  if (pf->started) {
    pthread_mutex_lock(&pf->lock);
    pf->quit = true;
    pthread_cond_broadcast(&pf->cond);
    pthread_mutex_unlock(&pf->lock);
    pthread_join(pf->thread, NULL);
  }
  pthread_mutex_destroy(&pf->lock);
  pthread_cond_destroy(&pf->cond);
  free(pf->extents);
  free(pf);
}
