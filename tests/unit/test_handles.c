/* Virtual handle tables: encoding, translation, retirement and slot reuse, growth across chunks. */
#include <criterion/criterion.h>

#include "../../wrappers/handles.h"

TestSuite(handles, .init = mana_handles_init);

Test(handles, predefined_and_null_values_pass_through)
{
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x44000000u), 0x44000000u); /* COMM_WORLD */
  cr_assert_eq(mana_handle_real(MANA_KIND_COMM, 0x04000000u), 0x04000000u); /* COMM_NULL */
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
  cr_assert_eq(mana_handle_real(MANA_KIND_REQUEST, a), a, "and passes through untranslated");
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

Test(handles, out_of_range_indices_pass_through)
{
  uint32_t bogus = 0x80000000u | (MANA_KIND_WIN << 26) | 0x3fffff0u;
  cr_assert_eq(mana_handle_real(MANA_KIND_WIN, bogus), bogus);
}

/* MPI_FLOAT_INT .. MPI_LONG_DOUBLE_INT are 0x8c000000 .. 0x8c000004 in MPICH: no datatype
 * slot may have those virtual handles, or the application's pair types would be translated
 * to its own derived types (an MPI_Type_vector of MPI_LONG_DOUBLE_INT aborted in
 * MPI_Type_free: "Cannot free permanent data type"). */
Test(handles, mpich_pair_types_are_never_virtual_datatypes)
{
  for (int i = 0; i < 16; i++) {
    uint32_t v = mana_handle_new(MANA_KIND_DATATYPE, 0x8c000100u + (uint32_t)i);
    cr_assert(v - 0x8c000000u >= MANA_PAIR_TYPES, "slot %u handed out", v & 0xffffffu);
  }
  for (uint32_t p = 0x8c000000u; p <= 0x8c000004u; p++)
    cr_assert_eq(mana_handle_real(MANA_KIND_DATATYPE, p), p);
}
