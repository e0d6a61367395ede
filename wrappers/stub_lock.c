/* The stub's bookkeeping lock and the flag that turns it on (stub_lock.h). */
#include "stub_lock.h"

int mana_threads_concurrent;
struct mana_stub_lock mana_stub_lock;

void mana_stub_lock_take_multiple(void)
{
  struct mana_stub_lock *l = &mana_stub_lock;
  uint64_t me = mana_stub_lock_self();
  if (l->owner == me) {
    l->depth++;
    return;
  }
  while (__atomic_exchange_n(&l->word, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&l->word, __ATOMIC_RELAXED))
      mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
  l->owner = me;
  l->depth = 1;
}

void mana_stub_lock_give_multiple(void)
{
  struct mana_stub_lock *l = &mana_stub_lock;
  if (--l->depth == 0) {
    l->owner = 0;
    __atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
  }
}
