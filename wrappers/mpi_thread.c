/* Each application thread that calls MPI gets a slot of its own (mana/mpi_threads.h): the
 * lower-half thread pointer it crosses with, and the words the checkpoint machinery reads.
 * The main thread takes slot 0 (the lower half's main thread pointer) when the stub is loaded;
 * any other thread claims a free slot at its first MPI call and gives it back when it exits
 * (a key destructor of the upper half's libc runs then). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mana/raw_syscall.h"
#include "stub.h"

__thread struct mana_mpi_thread *mana_self_thread __attribute__((tls_model("initial-exec")));
static pthread_key_t release_key;

/* The table's lock is taken with the park signal blocked: a thread parked while it holds it
 * would keep every other new thread out until the checkpoint is over. */
static void table_lock(uint64_t *saved)
{
  uint64_t park = 1ull << (MANA_PARK_SIGNAL - 1);
  MANA_BOUNDARY->lh->svc.sigprocmask_raw(SIG_BLOCK, &park, saved);
  while (__atomic_exchange_n(&MANA_MPI_THREADS->lock, 1, __ATOMIC_ACQUIRE))
    mana_raw_syscall4(SYS_sched_yield, 0, 0, 0, 0);
}

static void table_unlock(const uint64_t *saved)
{
  __atomic_store_n(&MANA_MPI_THREADS->lock, 0, __ATOMIC_RELEASE);
  MANA_BOUNDARY->lh->svc.sigprocmask_raw(SIG_SETMASK, saved, NULL);
}

static void reset(struct mana_mpi_thread *t, uint64_t upper_fs)
{
  t->in_lower = 0;
  t->in_callback = 0;
  t->cc_window = 0;
  t->waiting_ggid = t->waiting_seq = 0;
  __atomic_store_n(&t->upper_fs, upper_fs, __ATOMIC_RELEASE);
}

static void release(void *p)
{
  struct mana_mpi_thread *t = p;
  if (t && t != &MANA_MPI_THREADS->slot[0])
    __atomic_store_n(&t->upper_fs, 0, __ATOMIC_RELEASE); /* the holder stays, for reuse */
}

static _Noreturn void out_of_slots(const char *why)
{
  static const char head[] = "mana: a thread of the application cannot call MPI: ";
  (void)!write(2, head, sizeof(head) - 1);
  for (const char *p = why; *p; p++)
    (void)!write(2, p, 1);
  (void)!write(2, "\n", 1);
  abort();
}

struct mana_mpi_thread *mana_thread_attach(void)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  uint64_t fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase), saved;
  struct mana_mpi_thread *t = NULL;
  table_lock(&saved);
  for (uint32_t i = 1; i < a->n_used && !t; i++)
    if (!a->slot[i].upper_fs)
      t = &a->slot[i];
  if (!t && a->n_used < MANA_MAX_MPI_THREADS) {
    t = &a->slot[a->n_used];
    __atomic_store_n(&a->n_used, a->n_used + 1, __ATOMIC_RELEASE);
  }
  if (t) {
    reset(t, fs);
    if (!t->lower_fs)
      t->lower_fs = MANA_BOUNDARY->lh->svc.mpi_thread_lower_fs((uint32_t)(t - a->slot));
  }
  table_unlock(&saved);
  if (!t)
    out_of_slots("more than 255 threads of this process call MPI");
  if (!t->lower_fs)
    out_of_slots("the lower half could not make a thread for it (see above)");
  mana_self_thread = t;
  pthread_setspecific(release_key, t);
  return t;
}

void mana_thread_attach_main(void)
{
  struct mana_mpi_threads *a = MANA_MPI_THREADS;
  pthread_key_create(&release_key, release);
  reset(&a->slot[0], mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase));
  if (a->n_used == 0)
    __atomic_store_n(&a->n_used, 1, __ATOMIC_RELEASE);
  mana_self_thread = &a->slot[0];
}
