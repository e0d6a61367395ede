/* Attribute records: the (keyval, value) pairs set on a communicator, a datatype or a window, in the
 * order they were first set, with the representation MPICH stored them in (a C pointer, or a
 * Fortran integer of either size).  Restart sets them again on the rebuilt object, which calls
 * no copy or delete callback: the values are the application's, unchanged. */
#include "records.h"

static struct mana_attr **find(struct mana_attr **list, struct keyval_record *kv)
{
  for (; *list; list = &(*list)->next)
    if ((*list)->keyval == kv)
      return list;
  return NULL;
}

static void put(struct mana_attr **list, struct keyval_record *kv, void *value, int attr_type)
{
  struct mana_attr **at = find(list, kv);
  if (at) {
    (*at)->value = value;
    (*at)->attr_type = attr_type;
    return;
  }
  struct mana_attr *a = malloc(sizeof(*a));
  if (!a)
    return; /* the attribute will be missing after a restart, as its value would be wrong */
  *a = (struct mana_attr){NULL, kv, value, attr_type};
  while (*list)
    list = &(*list)->next;
  *list = a;
}

void mana_attr_set(struct mana_attr **list, int virt_keyval, void *value, int attr_type)
{
  struct keyval_record *kv = mana_keyval_record(virt_keyval);
  if (kv)
    put(list, kv, value, attr_type);
}

void mana_attr_delete(struct mana_attr **list, int virt_keyval)
{
  struct keyval_record *kv = mana_keyval_record(virt_keyval);
  struct mana_attr **at = kv ? find(list, kv) : NULL;
  if (!at)
    return;
  struct mana_attr *a = *at;
  *at = a->next;
  free(a);
}

static int get_real(enum mana_kind kind, uint64_t real, int keyval, void *value, int *flag,
                    int attr_type)
{
  if (kind == MANA_KIND_COMM)
    return MANA_LH_SVC_NOPARK(comm_get_attr, (MPI_Comm)real, keyval, value, flag, attr_type);
  if (kind == MANA_KIND_WIN)
    return MANA_LH_SVC_NOPARK(win_get_attr, (MPI_Win)real, keyval, value, flag, attr_type);
  return MANA_LH_SVC_NOPARK(type_get_attr, (MPI_Datatype)real, keyval, value, flag, attr_type);
}

static int set_real(enum mana_kind kind, uint64_t real, int keyval, void *value, int attr_type)
{
  if (kind == MANA_KIND_COMM)
    return MANA_LH_SVC_NOPARK(comm_set_attr, (MPI_Comm)real, keyval, value, attr_type);
  if (kind == MANA_KIND_WIN)
    return MANA_LH_SVC_NOPARK(win_set_attr, (MPI_Win)real, keyval, value, attr_type);
  return MANA_LH_SVC_NOPARK(type_set_attr, (MPI_Datatype)real, keyval, value, attr_type);
}

/* MPI ran the copy callbacks when it duplicated the object: ask it what they produced.  Asked
 * in the representation it was set in, MPICH returns the value exactly as it stores it. */
void mana_attr_inherit(struct mana_attr **child, const struct mana_attr *parent,
                       enum mana_kind kind, uint64_t real)
{
  for (const struct mana_attr *a = parent; a; a = a->next) {
    int flag = 0;
    void *value = NULL;
    int rc = get_real(kind, real, mana_keyval_real(a->keyval), &value, &flag, a->attr_type);
    if (rc == MPI_SUCCESS && flag)
      put(child, a->keyval, value, a->attr_type);
  }
}

int mana_attr_replay(const struct mana_attr *list, enum mana_kind kind, uint64_t real,
                     const char *what, uint32_t virt)
{
  for (const struct mana_attr *a = list; a; a = a->next) {
    int keyval = mana_keyval_real(a->keyval);
    if (keyval == -1)
      return mana_rebuild_error(what, virt, "MPI_*_create_keyval (for an attribute)",
                                MPI_ERR_KEYVAL);
    int rc = set_real(kind, real, keyval, a->value, a->attr_type);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error(what, virt, "MPI_*_set_attr", rc);
  }
  return MPI_SUCCESS;
}

/* Test mode, for objects that are not freed (predefined ones): take the attributes off. */
void mana_attr_remove_all(const struct mana_attr *list, enum mana_kind kind, uint64_t real)
{
  for (const struct mana_attr *a = list; a; a = a->next) {
    int keyval = mana_keyval_real(a->keyval);
    if (kind == MANA_KIND_COMM)
      MANA_LH_CALL_NOPARK(MPI_Comm_delete_attr, (MPI_Comm)real, keyval);
    else
      MANA_LH_CALL_NOPARK(MPI_Type_delete_attr, (MPI_Datatype)real, keyval);
  }
}

void mana_attr_free(struct mana_attr **list)
{
  while (*list) {
    struct mana_attr *a = *list;
    *list = a->next;
    free(a);
  }
}
