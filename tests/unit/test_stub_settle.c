/* The stub's bookkeeping done before the switch back (wrappers/stub.h, MANA_LH_CALL_SETTLE and
 * mana_new_request_lower) against a fake lower half whose thread pointer differs from the
 * test's: a copy of the test thread's TCB header, so that the FS the code runs on tells the
 * halves apart.  The new request must be made while FS is still the lower half's, and only
 * for a call that succeeded, outside MPI_THREAD_MULTIPLE, with a free slot; in every other
 * case the wrapper's own path after the switch must be left to do it. */
#include <criterion/criterion.h>
#include <string.h>

#include "fake_boundary.h"
#include "stub.h"

static struct mana_lh_table table;

void mana_park_point(void)
{
}

__thread struct mana_mpi_thread *mana_self_thread;
static struct mana_mpi_thread self_slot;

/* The lower half's "TCB": the test thread's header copied, its self pointers made its own.
 * Nothing between the switches may read TLS (the test is built without stack protector). */
static uint64_t lower_tcb[64] __attribute__((aligned(64)));

struct mana_mpi_thread *mana_thread_attach(void)
{
  int fsgs = (int)MANA_BOUNDARY->have_fsgsbase;
  self_slot.upper_fs = mana_get_fs(fsgs);
  memcpy(lower_tcb, (const void *)self_slot.upper_fs, sizeof(lower_tcb));
  lower_tcb[0] = lower_tcb[2] = (uint64_t)(uintptr_t)lower_tcb; /* tcb, self */
  self_slot.lower_fs = (uint64_t)(uintptr_t)lower_tcb;
  return mana_self_thread = &self_slot;
}

/* What the fake MPI_Ibarrier hands out, and the FS it ran on. */
static int ibarrier_rc = MPI_SUCCESS;
static MPI_Request ibarrier_request;
static uint64_t fs_in_mpi;

static int f_ibarrier(MPI_Comm comm, MPI_Request *request)
{
  (void)comm;
  fs_in_mpi = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  *request = ibarrier_request;
  return ibarrier_rc;
}

static void boundary_up(void)
{
  table.MPI_Ibarrier = f_ibarrier;
  fake_boundary_up(&table);
  mana_handles_init();
  mana_thread_attach();
}

TestSuite(stub_settle, .init = boundary_up);

static uint64_t fs_in_settle;
static int settle_runs;

static int settle_request(MPI_Request real, MPI_Request *out)
{
  settle_runs++;
  fs_in_settle = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  return mana_new_request_lower((uint32_t)real, out, MANA_SLOT_REQ_COLL);
}

/* The generated wrappers' shape (gen_wrappers.py): settle, else MANA_NEW after the switch. */
static int ibarrier(MPI_Request *request, int *settled)
{
  MPI_Request r_request = *request;
  *settled = 0;
  int rc = MANA_LH_CALL_SETTLE(*settled, settle_request(r_request, request), MPI_Ibarrier,
                               MPI_COMM_WORLD, &r_request);
  if (rc == MPI_SUCCESS && !*settled) {
    *request = MANA_NEW(REQUEST, MPI_Request, r_request);
    mana_request_mark((uint32_t)*request, MANA_SLOT_REQ_COLL);
  }
  return rc;
}

static uint64_t upper_fs(void)
{
  return mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
}

Test(stub_settle, the_request_is_made_on_the_lower_half_thread_pointer)
{
  MPI_Request req = MPI_REQUEST_NULL;
  int settled = 0;
  ibarrier_request = (MPI_Request)0xac000011u;
  /* A first request grows the empty table after the switch; its retirement leaves a slot. */
  cr_assert_eq(ibarrier(&req, &settled), MPI_SUCCESS);
  cr_assert_eq(settled, 0, "an empty table is grown after the switch, not on the lower FS");
  mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)req);

  settle_runs = 0;
  ibarrier_request = (MPI_Request)0xac000012u;
  cr_assert_eq(ibarrier(&req, &settled), MPI_SUCCESS);
  cr_assert_eq(settled, 1, "a free slot is taken before the switch back");
  cr_assert_eq(settle_runs, 1);
  cr_assert_eq(fs_in_mpi, (uint64_t)(uintptr_t)lower_tcb);
  cr_assert_eq(fs_in_settle, (uint64_t)(uintptr_t)lower_tcb,
               "the bookkeeping ran on the lower half's thread pointer (%#lx), not %#lx",
               (unsigned long)(uintptr_t)lower_tcb, (unsigned long)fs_in_settle);
  cr_assert_eq(upper_fs(), self_slot.upper_fs, "and the crossing switched back after it");
  cr_assert_eq(self_slot.in_lower, 0);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_REQUEST, (uint32_t)req);
  cr_assert_not_null(s, "the application holds a live virtual request");
  cr_assert_neq((uint32_t)req, 0xac000012u);
  cr_assert_eq(mana_handle_real(MANA_KIND_REQUEST, (uint32_t)req), 0xac000012u);
  cr_assert_eq(s->flags & (MANA_SLOT_USED | MANA_SLOT_REQ_COLL),
               MANA_SLOT_USED | MANA_SLOT_REQ_COLL);
  cr_assert_null(s->meta);
  mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)req);
}

Test(stub_settle, a_predefined_request_is_left_to_the_wrapper)
{
  MPI_Request req = MPI_REQUEST_NULL;
  int settled = 1;
  uint32_t in_use = mana_tables[MANA_KIND_REQUEST].in_use;
  ibarrier_request = MPI_REQUEST_NULL;
  cr_assert_eq(ibarrier(&req, &settled), MPI_SUCCESS);
  cr_assert_eq(settled, 0);
  cr_assert_eq(req, MPI_REQUEST_NULL, "a predefined request passes through untranslated");
  cr_assert_eq(mana_tables[MANA_KIND_REQUEST].in_use, in_use);
}

Test(stub_settle, nothing_is_settled_after_a_failed_call)
{
  MPI_Request req = (MPI_Request)0x1234;
  int settled = 0;
  uint32_t in_use = mana_tables[MANA_KIND_REQUEST].in_use;
  settle_runs = 0;
  ibarrier_request = (MPI_Request)0xac000013u;
  ibarrier_rc = MPI_ERR_COMM;
  cr_assert_eq(ibarrier(&req, &settled), MPI_ERR_COMM);
  ibarrier_rc = MPI_SUCCESS;
  cr_assert_eq(settle_runs, 0);
  cr_assert_eq(settled, 0);
  cr_assert_eq(req, (MPI_Request)0x1234, "the application's handle is the wrapper's to set");
  cr_assert_eq(mana_tables[MANA_KIND_REQUEST].in_use, in_use);
  cr_assert_eq(upper_fs(), self_slot.upper_fs);
}

Test(stub_settle, thread_multiple_settles_after_the_switch_under_the_lock)
{
  MPI_Request req = MPI_REQUEST_NULL;
  int settled = 0;
  ibarrier_request = (MPI_Request)0xac000014u;
  ibarrier(&req, &settled); /* a free slot for the next one */
  mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)req);
  settle_runs = 0;
  mana_threads_concurrent = 1; /* the stub lock tells owners by thread pointer */
  cr_assert_eq(ibarrier(&req, &settled), MPI_SUCCESS);
  mana_threads_concurrent = 0;
  cr_assert_eq(settle_runs, 0);
  cr_assert_eq(settled, 0);
  cr_assert_eq(mana_handle_real(MANA_KIND_REQUEST, (uint32_t)req), 0xac000014u);
  mana_handle_retire(MANA_KIND_REQUEST, (uint32_t)req);
}
