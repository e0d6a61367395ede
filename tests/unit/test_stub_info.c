/* Info records (wrappers/info.c) against a fake lower half: a boundary page at the window's
 * address whose function table points at a small in-test MPI_Info implementation that keeps
 * keys the way MPICH does (a new key is appended, a set key keeps its place).  The records
 * must follow MPI_Info_set/MPI_Info_delete, read existing objects in full, and rebuild equal
 * objects, in the same key order, after the real ones are gone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fake_boundary.h"
#include "records.h"
#include "stub_hooks.h"

/* ---- a fake MPI_Info ---- */

enum { INFOS = 32, KEYS = 16 };
static struct fake_info {
  int used, n;
  char key[KEYS][MPI_MAX_INFO_KEY + 1], value[KEYS][64];
} infos[INFOS];
static int creates, sets;

#define FAKE(i) ((MPI_Info)(0xdc000000u | (unsigned)(i)))
static struct fake_info *lookup(MPI_Info h)
{
  unsigned i = (unsigned)h & 0xffffu;
  return ((unsigned)h & 0xffff0000u) == 0xdc000000u && i < INFOS && infos[i].used ? &infos[i]
                                                                                  : NULL;
}

static int find(const struct fake_info *f, const char *key)
{
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->key[i], key))
      return i;
  return -1;
}

static int f_create(MPI_Info *out)
{
  for (int i = 1; i < INFOS; i++)
    if (!infos[i].used) {
      memset(&infos[i], 0, sizeof(infos[i]));
      infos[i].used = 1;
      *out = FAKE(i);
      creates++;
      return MPI_SUCCESS;
    }
  return MPI_ERR_NO_MEM;
}

static int f_set(MPI_Info h, const char *key, const char *value)
{
  struct fake_info *f = lookup(h);
  if (!f)
    return MPI_ERR_INFO;
  int i = find(f, key);
  if (i < 0)
    i = f->n++;
  snprintf(f->key[i], sizeof(f->key[i]), "%s", key);
  snprintf(f->value[i], sizeof(f->value[i]), "%s", value);
  sets++;
  return MPI_SUCCESS;
}

static int f_delete(MPI_Info h, const char *key)
{
  struct fake_info *f = lookup(h);
  int i = f ? find(f, key) : -1;
  if (i < 0)
    return MPI_ERR_INFO_NOKEY;
  for (; i + 1 < f->n; i++) {
    strcpy(f->key[i], f->key[i + 1]);
    strcpy(f->value[i], f->value[i + 1]);
  }
  f->n--;
  return MPI_SUCCESS;
}

static int f_nkeys(MPI_Info h, int *n)
{
  struct fake_info *f = lookup(h);
  if (!f)
    return MPI_ERR_INFO;
  *n = f->n;
  return MPI_SUCCESS;
}

static int f_nthkey(MPI_Info h, int n, char *key)
{
  struct fake_info *f = lookup(h);
  if (!f || n < 0 || n >= f->n)
    return MPI_ERR_ARG;
  strcpy(key, f->key[n]);
  return MPI_SUCCESS;
}

static int f_valuelen(MPI_Info h, const char *key, int *len, int *flag)
{
  struct fake_info *f = lookup(h);
  int i = f ? find(f, key) : -1;
  *flag = i >= 0;
  if (i >= 0)
    *len = (int)strlen(f->value[i]);
  return f ? MPI_SUCCESS : MPI_ERR_INFO;
}

static int f_get(MPI_Info h, const char *key, int len, char *value, int *flag)
{
  struct fake_info *f = lookup(h);
  int i = f ? find(f, key) : -1;
  *flag = i >= 0;
  if (i >= 0)
    snprintf(value, (size_t)len + 1, "%s", f->value[i]);
  return f ? MPI_SUCCESS : MPI_ERR_INFO;
}

static int f_free(MPI_Info *h)
{
  struct fake_info *f = lookup(*h);
  if (!f)
    return MPI_ERR_INFO;
  f->used = 0;
  *h = MPI_INFO_NULL;
  return MPI_SUCCESS;
}

/* ---- the fake lower half, and what info.c needs from the rest of the stub ---- */

static struct mana_lh_table table;

static void boundary_up(void)
{
  table.MPI_Info_create = f_create;
  table.MPI_Info_set = f_set;
  table.MPI_Info_delete = f_delete;
  table.MPI_Info_get_nkeys = f_nkeys;
  table.MPI_Info_get_nthkey = f_nthkey;
  table.MPI_Info_get_valuelen = f_valuelen;
  table.MPI_Info_get = f_get;
  table.MPI_Info_free = f_free;
  fake_boundary_up(&table);
  mana_handles_init();
  mana_slot_release[MANA_KIND_INFO] = mana_info_ops.release;
}

void mana_park_point(void)
{
}

/* The crossing macros run on this thread's MPI slot; here both "halves" are this thread. */
__thread struct mana_mpi_thread *mana_self_thread;
static struct mana_mpi_thread self_slot;
struct mana_mpi_thread *mana_thread_attach(void)
{
  self_slot.upper_fs = self_slot.lower_fs = mana_get_fs((int)MANA_BOUNDARY->have_fsgsbase);
  return mana_self_thread = &self_slot;
}
uint32_t mana_rebuild_epoch;
int mana_rebuilding;

void mana_reason(char *reason, size_t len, const char *text, const char *what, uint32_t handle)
{
  snprintf(reason, len, "%s %s %#x", text, what, handle);
}

int mana_rebuild_error(const char *what, uint32_t handle, const char *call, int rc)
{
  cr_log_error("rebuild error: %s %#x %s %d", what, handle, call, rc);
  return rc ? rc : MPI_ERR_INTERN;
}

TestSuite(stub_info, .init = boundary_up);

/* ---- helpers ---- */

/* What the application would get from MPI_Info_create plus its record. */
static MPI_Info app_info(void)
{
  MPI_Info real = MPI_INFO_NULL; /* set by f_create; NDEBUG builds cannot see that */
  cr_assert_eq(f_create(&real), MPI_SUCCESS);
  MPI_Info v = (MPI_Info)mana_handle_new(MANA_KIND_INFO, (uint32_t)real);
  mana_info_created(v, MPI_INFO_NULL);
  return v;
}

/* MPI_Info_set / MPI_Info_delete as the generated wrappers make them. */
static void app_set(MPI_Info v, const char *key, const char *value)
{
  cr_assert_eq(f_set((MPI_Info)(uint32_t)mana_handle_real(MANA_KIND_INFO, (uint32_t)v), key, value),
               MPI_SUCCESS);
  mana_after_Info_set(v, key, value);
}

static void app_delete(MPI_Info v, const char *key)
{
  cr_assert_eq(f_delete((MPI_Info)(uint32_t)mana_handle_real(MANA_KIND_INFO, (uint32_t)v), key),
               MPI_SUCCESS);
  mana_after_Info_delete(v, key);
}

static const struct mana_kvlist *record(MPI_Info v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_INFO, (uint32_t)v);
  cr_assert_not_null(s);
  cr_assert_not_null(s->meta, "every info object has a record");
  return s->meta;
}

/* The record and the real object hold the same keys in the same order. */
static void assert_same(MPI_Info v, const char *expect)
{
  const struct mana_kvlist *l = record(v);
  MPI_Info real_info = (MPI_Info)(uint32_t)mana_handle_real(MANA_KIND_INFO, (uint32_t)v);
  const struct fake_info *f = lookup(real_info);
  char rec[256] = "", real[256] = "";
  cr_assert_not_null(f);
  for (int i = 0; i < l->n; i++)
    snprintf(rec + strlen(rec), sizeof(rec) - strlen(rec), "%s=%s;", l->kv[i].key, l->kv[i].value);
  for (int i = 0; i < f->n; i++)
    snprintf(real + strlen(real), sizeof(real) - strlen(real), "%s=%s;", f->key[i], f->value[i]);
  cr_assert_str_eq(rec, expect);
  cr_assert_str_eq(real, expect);
}

/* ---- tests ---- */

Test(stub_info, an_existing_object_is_read_in_full)
{
  MPI_Info real = MPI_INFO_NULL; /* set by f_create; NDEBUG builds cannot see that */
  f_create(&real);
  f_set(real, "b", "2");
  f_set(real, "a", "1");
  MPI_Info v = (MPI_Info)mana_handle_new(MANA_KIND_INFO, (uint32_t)real); /* e.g. Comm_get_info */
  mana_info_created(v, MPI_INFO_NULL);
  assert_same(v, "b=2;a=1;");
}

Test(stub_info, set_and_delete_keep_mpich_order)
{
  MPI_Info v = app_info();
  assert_same(v, "");
  app_set(v, "alpha", "1");
  app_set(v, "beta", "2");
  app_set(v, "gamma", "3");
  app_delete(v, "beta");
  app_set(v, "alpha", "10"); /* replaced in place */
  app_set(v, "delta", "4");
  assert_same(v, "alpha=10;gamma=3;delta=4;");
}

Test(stub_info, rebuild_makes_equal_objects_from_the_records)
{
  MPI_Info v = app_info(), w = app_info();
  app_set(v, "x", "1");
  app_set(v, "y", "2");
  app_set(w, "only", "here");
  app_delete(w, "only");
  /* The old objects are gone, as in a new process. */
  cr_assert_eq(mana_info_ops.discard(), MPI_SUCCESS);
  cr_assert_null(lookup((MPI_Info)(uint32_t)mana_handle_real(MANA_KIND_INFO, (uint32_t)v)));
  creates = sets = 0;
  cr_assert_eq(mana_info_ops.rebuild(), MPI_SUCCESS);
  cr_assert_eq(creates, 2);
  cr_assert_eq(sets, 2, "only the recorded keys are set");
  assert_same(v, "x=1;y=2;");
  assert_same(w, "");
  /* and the records keep working on the new objects */
  app_set(w, "later", "yes");
  assert_same(w, "later=yes;");
}

Test(stub_info, snapshots_copy_the_record)
{
  MPI_Info v = app_info();
  app_set(v, "k", "v");
  struct mana_kvlist snap = {0, 0, NULL};
  cr_assert_eq(mana_info_snapshot(v, &snap), 0);
  app_set(v, "k", "changed");
  cr_assert_eq(snap.n, 1);
  cr_assert_str_eq(snap.kv[0].value, "v", "a snapshot does not follow later changes");
  cr_assert_eq(mana_info_snapshot(MPI_INFO_NULL, &snap), 0);
  cr_assert_eq(snap.n, 0);
  mana_kvlist_free(&snap);
}

Test(stub_info, kvlist_copy_and_delete)
{
  struct mana_kvlist a = {0, 0, NULL}, b = {0, 0, NULL};
  for (int i = 0; i < 20; i++) {
    char k[8], val[8];
    snprintf(k, sizeof(k), "k%d", i);
    snprintf(val, sizeof(val), "%d", i * i);
    cr_assert_eq(mana_kvlist_set(&a, k, val), 0);
  }
  mana_kvlist_delete(&a, "k0");
  mana_kvlist_delete(&a, "missing");
  cr_assert_eq(mana_kvlist_copy(&b, &a), 0);
  cr_assert_eq(b.n, 19);
  cr_assert_str_eq(b.kv[0].key, "k1");
  cr_assert_str_eq(b.kv[18].value, "361");
  mana_kvlist_free(&a);
  mana_kvlist_free(&b);
  cr_assert_eq(b.n, 0);
}

Test(stub_info, an_object_without_record_refuses_a_checkpoint)
{
  char reason[128];
  MPI_Info v = app_info();
  cr_assert_eq(mana_info_ops.check(reason, sizeof(reason)), 1);
  MPI_Info real = MPI_INFO_NULL; /* set by f_create; NDEBUG builds cannot see that */
  f_create(&real);
  MPI_Info bare = (MPI_Info)mana_handle_new(MANA_KIND_INFO, (uint32_t)real); /* no hook ran */
  cr_assert_eq(mana_info_ops.check(reason, sizeof(reason)), 0);
  cr_assert(strstr(reason, "info object") != NULL, "reason: %s", reason);
  mana_handle_retire(MANA_KIND_INFO, (uint32_t)bare);
  mana_handle_retire(MANA_KIND_INFO, (uint32_t)v); /* releases the record */
  cr_assert_eq(mana_info_ops.check(reason, sizeof(reason)), 1);
}
