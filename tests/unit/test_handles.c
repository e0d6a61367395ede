/* Virtual handle tables: encoding, translation, retirement and slot reuse, growth across chunks. */
#include <criterion/criterion.h>

#include "../../wrappers/handles.h"

TestSuite(handles, .init = mana_handles_init);

Test(handles, predefined_and_null_values_pass_through)
{
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x44000000u), 0x44000000u);     /* COMM_WORLD */
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x04000000u), 0x04000000u);     /* COMM_NULL */
  cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, 0x4c000405u), 0x4c000405u); /* MPI_INT */
  cr_assert_null(mana_handle_slot(MANA_KIND_COMM, 0x44000000u));
}

Test(handles, new_handles_look_like_mpich_handles_of_their_kind)
{
  uint32_t v = mana_handle_new(MANA_KIND_COMM, 0x84000003u);
  cr_assert_eq(v & 0xc0000000u, 0x80000000u);
  cr_assert_eq((v >> 26) & 0xf, MANA_KIND_COMM);
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, v), 0x84000003u);
  /* The same bits are not a handle of another kind: they pass through untranslated. */
  cr_assert_eq(mana_handle_real(MANA_KIND_GROUP, v), v);
}

Test(handles, retire_then_reuse_without_growth)
{
  uint32_t a = mana_handle_new(MANA_KIND_REQUEST, 0xac000001u);
  uint32_t cap = mana_tables[MANA_KIND_REQUEST].capacity;
  mana_handle_retire(MANA_KIND_REQUEST, a);
  cr_assert_null(mana_handle_slot(MANA_KIND_REQUEST, a), "a retired handle is dead");
  cr_assert_eq(mana_handle_real(MANA_KIND_REQUEST, a), a & ~0xc0000000u,
               "and reaches MPI as the invalid handle of its kind, not as a handle MPI may have");
  for (int i = 0; i < 100000; i++) {
    uint32_t v = mana_handle_new(MANA_KIND_REQUEST, 0xac000000u + (uint32_t)i);
    cr_assert_eq(mana_handle_real(MANA_KIND_REQUEST, v), 0xac000000u + (uint32_t)i);
    mana_handle_retire(MANA_KIND_REQUEST, v);
  }
  cr_assert_eq(mana_tables[MANA_KIND_REQUEST].capacity, cap,
               "a steady stream of short-lived requests never grows the table");
}

Test(handles, grows_across_chunks_and_keeps_every_mapping)
{
  enum { N = 5000 }; /* several chunks of MANA_CHUNK_SLOTS */
  static uint32_t v[N];
  for (uint32_t i = 0; i < N; i++)
    v[i] = mana_handle_new(MANA_KIND_DATATYPE, 0x8c000000u | i);
  cr_assert_geq(mana_tables[MANA_KIND_DATATYPE].capacity, N);
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, v[i]), 0x8c000000u | i);
  cr_assert_eq(mana_handle_virtual_of(MANA_KIND_DATATYPE, 0x8c000000u | 4321), v[4321]);
  cr_assert_eq(mana_handle_virtual_of(MANA_KIND_DATATYPE, 0x4c000405u), 0x4c000405u);
  for (uint32_t i = 0; i < N; i++)
    mana_handle_retire(MANA_KIND_DATATYPE, v[i]);
  cr_assert_eq(mana_tables[MANA_KIND_DATATYPE].in_use, 0);
}

Test(handles, update_changes_the_real_handle_only)
{
  uint32_t v = mana_handle_new(MANA_KIND_DATATYPE, 0x8c000010u);
  mana_handle_update(MANA_KIND_DATATYPE, v, 0x8c000020u);
  cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, v), 0x8c000020u);
  mana_handle_retire(MANA_KIND_DATATYPE, v);
}

Test(handles, dead_virtual_handles_become_invalid_handles)
{
  /* an index no table has: MPI's invalid handle of the kind (bits 31-30 cleared) */
  uint32_t bogus = 0x80000000u | (MANA_KIND_WIN << 26) | 0x3fffff0u;
  cr_assert_eq(mana_handle_real(MANA_KIND_WIN, bogus), bogus & 0x3fffffffu);
  /* the pair types are predefined handles with the bits of virtual datatypes */
  cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, 0x8c000001u), 0x8c000001u); /* DOUBLE_INT */
  /* a file is a pointer ROMIO dereferences: never made into another value */
  uint32_t file = 0x80000000u | (MANA_KIND_FILE << 26) | 0x3fffff0u;
  cr_assert_eq(mana_handle_real(MANA_KIND_FILE, file), file);
  /* predefined and null handles pass through (MPICH's MPI_COMM_WORLD, MPI_COMM_NULL) */
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x44000000u), 0x44000000u);
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x04000000u), 0x04000000u);
}

/* ---- MPI_THREAD_MULTIPLE: several threads make and retire handles at once ---- */

#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "../../wrappers/stub_lock.h"

#define MT_THREADS 4
#define MT_LIVE 512
#define MT_ROUNDS 5000

/* Which virtual handle each thread holds: two threads must never be given the same one. */
static volatile uint32_t mt_owner[1u << 16];
static volatile int mt_errors;

static void *mt_churn(void *arg)
{
  uint32_t me = (uint32_t)(uintptr_t)arg + 1, held[MT_LIVE];
  for (int r = 0; r < MT_ROUNDS; r++) {
    for (int i = 0; i < MT_LIVE; i++) {
      held[i] = mana_handle_new(MANA_KIND_REQUEST, 0xac000000u + me);
      uint32_t index = held[i] & MANA_HANDLE_INDEX_MASK, none = 0;
      if (index >= (1u << 16) || !__atomic_compare_exchange_n(&mt_owner[index], &none, me, 0,
                                                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        __atomic_add_fetch(&mt_errors, 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < MT_LIVE; i++) {
      uint32_t index = held[i] & MANA_HANDLE_INDEX_MASK;
      if (mana_handle_real(MANA_KIND_REQUEST, held[i]) != 0xac000000u + me)
        __atomic_add_fetch(&mt_errors, 1, __ATOMIC_RELAXED);
      if (index < (1u << 16))
        __atomic_store_n(&mt_owner[index], 0, __ATOMIC_RELEASE);
      mana_handle_retire(MANA_KIND_REQUEST, held[i]);
    }
  }
  return NULL;
}

Test(handles, threads_never_share_a_handle_under_thread_multiple, .timeout = 120)
{
  /* The lock tells its owners apart by thread pointer; it reads the boundary page for how. */
  void *page = mmap((void *)MANA_WINDOW_BASE, 4096, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  cr_assert_eq(page, (void *)MANA_WINDOW_BASE, "the window's first page must be free");
  MANA_BOUNDARY->have_fsgsbase = (getauxval(AT_HWCAP2) & 2) != 0;
  mana_threads_concurrent = 1;
  pthread_t t[MT_THREADS];
  for (int i = 0; i < MT_THREADS; i++)
    pthread_create(&t[i], NULL, mt_churn, (void *)(uintptr_t)i);
  for (int i = 0; i < MT_THREADS; i++)
    pthread_join(t[i], NULL);
  cr_assert_eq(mt_errors, 0, "%d handles given to two threads or lost their mapping", mt_errors);
  cr_assert_eq(mana_tables[MANA_KIND_REQUEST].in_use, 0);
}

/* MPICH's pair types (MPI_FLOAT_INT 0x8c000000 .. MPI_LONG_DOUBLE_INT 0x8c000004) are direct
 * datatype handles compiled into applications: no virtual datatype may take their values, or
 * the application's MPI_FLOAT_INT would name one of its own types. */
Test(handles, datatype_handles_never_take_the_pair_types)
{
  enum { N = 2 * MANA_CHUNK_SLOTS };
  static uint32_t v[N];
  for (uint32_t i = 0; i < N; i++) {
    v[i] = mana_handle_new(MANA_KIND_DATATYPE, 0x8c001000u | i);
    cr_assert(!mana_handle_is_pair_type(v[i]), "datatype %#x is a pair type's value", v[i]);
  }
  for (uint32_t pair = 0x8c000000u; pair <= 0x8c000004u; pair++) {
    cr_assert(mana_handle_is_pair_type(pair));
    cr_assert_null(mana_handle_slot(MANA_KIND_DATATYPE, pair));
    cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, pair), pair, "passes through");
  }
  cr_assert(!mana_handle_is_pair_type(0x8c000005u));
  cr_assert(!mana_handle_is_pair_type(0x4c000405u)); /* MPI_INT */
  for (uint32_t i = 0; i < N; i++)
    mana_handle_retire(MANA_KIND_DATATYPE, v[i]);
  /* Other kinds start at slot 0: their handles collide with nothing predefined. */
  uint32_t c = mana_handle_new(MANA_KIND_GROUP, 0x88000001u);
  cr_assert_eq(c & MANA_HANDLE_INDEX_MASK, 0);
  mana_handle_retire(MANA_KIND_GROUP, c);
}
