/* Faulting a restored region's pages in ahead of the reads that fill them.
 *
 * A restore writes into memory the process never had: before a page can take the image's
 * bytes, the kernel allocates and zeroes it, which costs more CPU than checksumming it and,
 * where the host backs guest memory lazily (free page reporting on VMs), can cost more than
 * reading it from the storage. Done by the thread that checksums, it made that thread nearly
 * the slowest stage of the restore. A helper thread walks the stored extents in file order
 * with MADV_POPULATE_WRITE while the reader's worker reads and the caller checksums; where the
 * helper falls behind, the read faults the pages itself, so nothing waits for it. Only the
 * extents given are touched: pages the image does not store stay unallocated.
 *
 * The helper is started once, with the reader's other thread, and waits between regions: a
 * thread created later would get a stack wherever the kernel puts it, perhaps where a region
 * still to be restored belongs. */
#ifndef MANA_IMAGE_PREFAULT_H
#define MANA_IMAGE_PREFAULT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct img_extent {
  void *base;
  uint64_t len;
};

struct img_prefault {
  struct img_extent *extents; /* the plan, in the order the pages are read */
  size_t count, room;
  bool dropped; /* no memory for the plan: nothing is prefaulted */

  pthread_t thread;
  bool started;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool posted; /* a plan is the helper's (from start until the helper is done with it) */
  bool quit;
  atomic_bool stop;      /* finish wants the walk over now */
  _Atomic uint64_t done; /* bytes of the current plan faulted in so far */
};

/* Regions whose pages to read come to less than this get no plan: the caller faults each piece
 * in as it adds it to a batch (image_io.c), as without the helper. */
#define IMG_PREFAULT_MIN (64ull << 20)

/* Makes the helper; NULL without memory. If its thread cannot be created, start always says
 * no and the caller faults pages in itself. */
struct img_prefault *img_prefault_open(void);

/* Adds an extent to the next plan (while no plan runs). Returns -1 without memory: the plan
 * is then dropped, which costs speed only. */
int img_prefault_add(struct img_prefault *pf, void *base, uint64_t len);

/* Hands the plan to the helper. Returns true if it walks it; false (no plan, no thread,
 * MANA_IMAGE_PREFAULT=0 in the environment) means the caller faults pages in itself. */
bool img_prefault_start(struct img_prefault *pf);

/* Ends the plan (the helper stops walking at once if it still is), waits until the helper
 * has let go of it, and forgets it. */
void img_prefault_finish(struct img_prefault *pf);

/* Stops the thread and frees everything. */
void img_prefault_close(struct img_prefault *pf);

#endif
