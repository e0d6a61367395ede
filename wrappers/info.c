/* Info objects: recorded as their key/value pairs, kept up to date by MPI_Info_set and
 * MPI_Info_delete, read in full when MPI makes one (MPI_Info_dup, MPI_Comm_get_info, ...),
 * rebuilt with MPI_Info_create and MPI_Info_set in the same order, so that
 * MPI_Info_get_nthkey answers as before. */
#include <string.h>

#include "records.h"
#include "stub_hooks.h"

/* ---- key/value lists ---- */

static int find(const struct mana_kvlist *l, const char *key)
{
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->kv[i].key, key) == 0)
      return i;
  return -1;
}

/* MPICH replaces the value of a key already present in place and appends a new key. */
int mana_kvlist_set(struct mana_kvlist *l, const char *key, const char *value)
{
  char *v = strdup(value);
  if (!v)
    return -1;
  int i = find(l, key);
  if (i >= 0) {
    free(l->kv[i].value);
    l->kv[i].value = v;
    return 0;
  }
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 4;
    struct mana_kv *kv = realloc(l->kv, (size_t)cap * sizeof(*kv));
    if (!kv) {
      free(v);
      return -1;
    }
    l->kv = kv;
    l->cap = cap;
  }
  l->kv[l->n].key = strdup(key);
  if (!l->kv[l->n].key) {
    free(v);
    return -1;
  }
  l->kv[l->n++].value = v;
  return 0;
}

void mana_kvlist_delete(struct mana_kvlist *l, const char *key)
{
  int i = find(l, key);
  if (i < 0)
    return;
  free(l->kv[i].key);
  free(l->kv[i].value);
  memmove(&l->kv[i], &l->kv[i + 1], (size_t)(l->n - i - 1) * sizeof(*l->kv));
  l->n--;
}

int mana_kvlist_copy(struct mana_kvlist *dst, const struct mana_kvlist *src)
{
  struct mana_kvlist copy = {0, 0, NULL};
  for (int i = 0; i < src->n; i++)
    if (mana_kvlist_set(&copy, src->kv[i].key, src->kv[i].value) != 0) {
      mana_kvlist_free(&copy);
      return -1;
    }
  mana_kvlist_free(dst);
  *dst = copy;
  return 0;
}

void mana_kvlist_free(struct mana_kvlist *l)
{
  for (int i = 0; i < l->n; i++) {
    free(l->kv[i].key);
    free(l->kv[i].value);
  }
  free(l->kv);
  l->kv = NULL;
  l->n = l->cap = 0;
}

/* ---- reading a real info object ---- */

static int read_real(MPI_Info real, struct mana_kvlist *out)
{
  int n = 0;
  if (MANA_LH_CALL_NOPARK(MPI_Info_get_nkeys, real, &n) != MPI_SUCCESS)
    return -1;
  for (int i = 0; i < n; i++) {
    char key[MPI_MAX_INFO_KEY + 1];
    int len = 0, flag = 0;
    if (MANA_LH_CALL_NOPARK(MPI_Info_get_nthkey, real, i, key) != MPI_SUCCESS ||
        MANA_LH_CALL_NOPARK(MPI_Info_get_valuelen, real, key, &len, &flag) != MPI_SUCCESS || !flag)
      return -1;
    char *value = malloc((size_t)len + 1);
    if (!value)
      return -1;
    int rc = MANA_LH_CALL_NOPARK(MPI_Info_get, real, key, len, value, &flag);
    value[len] = '\0';
    if (rc != MPI_SUCCESS || mana_kvlist_set(out, key, value) != 0) {
      free(value);
      return -1;
    }
    free(value);
  }
  return 0;
}

int mana_info_snapshot(MPI_Info v, struct mana_kvlist *out)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_INFO, (uint32_t)v);
  mana_kvlist_free(out);
  if (s && s->meta)
    return mana_kvlist_copy(out, s->meta);
  if (v == MPI_INFO_NULL)
    return 0;
  return read_real((MPI_Info)(uint32_t)mana_handle_real(MANA_KIND_INFO, (uint32_t)v), out);
}

int mana_kvlist_to_real(const struct mana_kvlist *l, MPI_Info *real)
{
  int rc = MANA_LH_CALL_NOPARK(MPI_Info_create, real);
  for (int i = 0; i < l->n && rc == MPI_SUCCESS; i++)
    rc = MANA_LH_CALL_NOPARK(MPI_Info_set, *real, l->kv[i].key, l->kv[i].value);
  return rc;
}

/* ---- records ---- */

void mana_info_created(MPI_Info v, MPI_Info parent)
{
  (void)parent;
  struct mana_slot *s = mana_handle_slot(MANA_KIND_INFO, (uint32_t)v);
  if (!s)
    return;
  struct mana_kvlist *l = calloc(1, sizeof(*l));
  if (!l)
    return;
  if (read_real((MPI_Info)s->real, l) != 0) {
    mana_kvlist_free(l);
    free(l);
    return;
  }
  s->meta = l;
}

void mana_after_Info_set(MPI_Info info, const char *key, const char *value)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_INFO, (uint32_t)info);
  if (s && s->meta && mana_kvlist_set(s->meta, key, value) != 0) {
    mana_kvlist_free(s->meta); /* unknown contents: no record rather than a wrong one */
    free(s->meta);
    s->meta = NULL;
  }
}

void mana_after_Info_delete(MPI_Info info, const char *key)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_INFO, (uint32_t)info);
  if (s && s->meta)
    mana_kvlist_delete(s->meta, key);
}

static void release(struct mana_slot *s)
{
  mana_kvlist_free(s->meta);
  free(s->meta);
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_INFO];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->meta) {
      mana_reason(reason, len, "no record of", "info object", mana_handle_make(MANA_KIND_INFO, i));
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_INFO];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Info real = (MPI_Info)s->real;
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real))
      MANA_LH_CALL_NOPARK(MPI_Info_free, &real);
  }
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_INFO];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED) || !s->meta)
      continue;
    MPI_Info real;
    int rc = mana_kvlist_to_real(s->meta, &real);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("info object", mana_handle_make(MANA_KIND_INFO, i),
                                "MPI_Info_create/MPI_Info_set", rc);
    s->real = (uint32_t)real;
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_info_ops = {
    .name = "info object",
    .kind = MANA_KIND_INFO,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
