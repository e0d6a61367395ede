/* Buffered messages: what the drain received for nobody (p2p.h), kept in arrival order in
 * upper-half memory, so a checkpoint saves them and a restart finds them.
 *
 * Matching is MPI's: the oldest message on the communicator whose source and tag the receive
 * names, or any of them with MPI_ANY_SOURCE / MPI_ANY_TAG.  One FIFO for all communicators
 * keeps the per-(communicator, source) order, which is all MPI promises.  Every buffered
 * message from a source was sent before anything MPI still holds from it, so looking here
 * first keeps the non-overtaking rule.
 *
 * Each message is one anonymous mapping, made with a raw system call: the drain runs on the
 * checkpoint thread, which must not use the upper half's malloc.  No MPI here: the unit tests
 * use this file alone. */
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mana/raw_syscall.h"
#include "p2p.h"
#include "stub_lock.h"

struct mana_drained *mana_drained_head;
static struct mana_drained *tail;

struct mana_drained *mana_drained_new(MPI_Count bytes)
{
  if (bytes < 0)
    return NULL;
  uint64_t len = (sizeof(struct mana_drained) + (uint64_t)bytes + 4095) & ~4095ull;
  long p = mana_raw_syscall6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p < 0 && p > -4096)
    return NULL;
  struct mana_drained *m = (struct mana_drained *)p;
  m->map_len = len;
  m->bytes = bytes;
  m->next = NULL;
  return m;
}

void mana_drained_free(struct mana_drained *m)
{
  if (m)
    mana_raw_syscall6(SYS_munmap, (long)m, (long)m->map_len, 0, 0, 0, 0);
}

void mana_drained_append(struct mana_drained *m)
{
  mana_stub_lock_take();
  m->next = NULL;
  if (tail)
    tail->next = m;
  else
    mana_drained_head = m;
  tail = m;
  mana_stub_lock_give();
}

static int matches(const struct mana_drained *m, MPI_Comm comm, int source, int tag)
{
  return m->comm == comm && (source == MPI_ANY_SOURCE || source == m->source) &&
         (tag == MPI_ANY_TAG || tag == m->tag);
}

struct mana_drained *mana_drained_match(MPI_Comm comm, int source, int tag,
                                        struct mana_drained **prev_out)
{
  struct mana_drained *prev = NULL;
  for (struct mana_drained *m = mana_drained_head; m; prev = m, m = m->next)
    if (matches(m, comm, source, tag)) {
      if (prev_out)
        *prev_out = prev;
      return m;
    }
  return NULL;
}

void mana_drained_unlink(struct mana_drained *m, struct mana_drained *prev)
{
  if (prev)
    prev->next = m->next;
  else
    mana_drained_head = m->next;
  if (tail == m)
    tail = prev;
  m->next = NULL;
}

void mana_drained_forget_comm(const void *comm_id)
{
  mana_stub_lock_take();
  struct mana_drained *prev = NULL, *m = mana_drained_head;
  while (m) {
    struct mana_drained *next = m->next;
    if (m->comm_id == comm_id) {
      mana_drained_unlink(m, prev);
      mana_drained_free(m);
    } else {
      prev = m;
    }
    m = next;
  }
  mana_stub_lock_give();
}

size_t mana_drained_count(void)
{
  size_t n = 0;
  for (const struct mana_drained *m = mana_drained_head; m; m = m->next)
    n++;
  return n;
}

/* Found and taken out in one step: two threads receiving at once must not get one message. */
struct mana_drained *mana_drained_take(MPI_Comm comm, int source, int tag)
{
  mana_stub_lock_take();
  struct mana_drained *prev = NULL, *m = mana_drained_match(comm, source, tag, &prev);
  if (m)
    mana_drained_unlink(m, prev);
  mana_stub_lock_give();
  return m;
}
