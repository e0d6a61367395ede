/*
 * attributes.c - attribute caching on communicators, datatypes and windows:
 *   - Comm_create_keyval with user copy and delete callbacks that log every call; set, get,
 *     overwrite (delete callback runs), delete_attr, Comm_dup (copy callback runs, the copy
 *     gets a new value), Comm_free (delete callback runs), copy callback that declines;
 *     predefined MPI_COMM_NULL_COPY_FN / MPI_COMM_DUP_FN; Comm_free_keyval;
 *   - predefined attributes MPI_TAG_UB, MPI_WTIME_IS_GLOBAL on MPI_COMM_WORLD;
 *   - Type_create_keyval with callbacks, Type_dup copies, Type_free deletes;
 *   - Win_create_keyval with a delete callback, Win_free deletes; MPI_WIN_BASE/SIZE/DISP_UNIT.
 * The callbacks check the object handle they receive is the one the program holds.
 * Ranks: 2.
 */
#include "mpitest.h"

static int copies, deletes;

/* Callback log lines are collected per phase and logged sorted: the order in which MPI runs
 * the callbacks of several attributes during one dup/free is implementation-defined. */
static char notes[16][96];
static int nnotes;
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
  if (nnotes == 16)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(notes[nnotes++], sizeof notes[0], fmt, ap);
  va_end(ap);
}
static int cmp_note(const void *a, const void *b)
{
  return strcmp(a, b);
}
static void flush_notes(void)
{
  qsort(notes, (size_t)nnotes, sizeof notes[0], cmp_note);
  for (int i = 0; i < nnotes; i++)
    mt_log("  %s", notes[i]);
  nnotes = 0;
}
static MPI_Comm expect_comm = MPI_COMM_NULL; /* comm whose attribute is being copied/deleted */
static int handle_mismatch;

static int comm_copy(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)keyval;
  copies++;
  if (old != expect_comm)
    handle_mismatch++;
  int *src = in;
  if (*(int *)extra == 0) { /* declining copier */
    *flag = 0;
    note("comm copy callback declined value %d", *src);
    return MPI_SUCCESS;
  }
  int *n = malloc(sizeof(int));
  *n = *src + 1000;
  *(int **)out = n;
  *flag = 1;
  note("comm copy callback: %d -> %d", *src, *n);
  return MPI_SUCCESS;
}

static int comm_delete(MPI_Comm c, int keyval, void *val, void *extra)
{
  (void)keyval;
  (void)extra;
  deletes++;
  if (expect_comm != MPI_COMM_NULL && c != expect_comm)
    handle_mismatch++;
  note("comm delete callback: value %d", *(int *)val);
  free(val);
  return MPI_SUCCESS;
}

static int type_copy(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)t;
  (void)keyval;
  (void)extra;
  copies++;
  *(void **)out = in; /* share the (static) value */
  *flag = 1;
  note("type copy callback: value %d", *(int *)in);
  return MPI_SUCCESS;
}

static int type_delete(MPI_Datatype t, int keyval, void *val, void *extra)
{
  (void)t;
  (void)keyval;
  (void)extra;
  deletes++;
  note("type delete callback: value %d", *(int *)val);
  return MPI_SUCCESS;
}

static MPI_Win expect_win = MPI_WIN_NULL;
static int win_delete(MPI_Win w, int keyval, void *val, void *extra)
{
  (void)keyval;
  (void)extra;
  deletes++;
  if (w != expect_win)
    handle_mismatch++;
  note("win delete callback: value %d", *(int *)val);
  return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("attributes");
  mt_require_size(2);
  const int me = mt_.rank;
  int flag;
  void *val;

  /* predefined attributes */
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag);
  mt_check(flag && *(int *)val >= 32767, "MPI_TAG_UB present and >= 32767");
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &val, &flag);
  mt_check(flag == 1 && (*(int *)val == 0 || *(int *)val == 1),
           "MPI_WTIME_IS_GLOBAL present (0 or 1)");

  /* communicator keyval with logging callbacks */
  static int yes = 1, no = 0;
  int kv, kv_decline, kv_null, kv_dupfn;
  MPI_Comm_create_keyval(comm_copy, comm_delete, &kv, &yes);
  MPI_Comm_create_keyval(comm_copy, comm_delete, &kv_decline, &no);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_null, NULL);
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dupfn, NULL);

  MPI_Comm a;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  expect_comm = a;
  int *v1 = malloc(sizeof(int));
  *v1 = 10 + me;
  MPI_Comm_set_attr(a, kv, v1);
  MPI_Comm_get_attr(a, kv, &val, &flag);
  mt_check(flag && val == v1 && *(int *)val == 10 + me,
           "get_attr returns the stored pointer (value %d)", *(int *)val);

  mt_log("overwrite the attribute:");
  int *v2 = malloc(sizeof(int));
  *v2 = 20 + me;
  MPI_Comm_set_attr(a, kv, v2); /* deletes v1 through the callback */
  flush_notes();
  mt_check_int("delete callbacks after overwrite", deletes, 1);

  int *vd = malloc(sizeof(int));
  *vd = 30 + me;
  MPI_Comm_set_attr(a, kv_decline, vd);
  static int plain = 77;
  MPI_Comm_set_attr(a, kv_null, &plain);
  MPI_Comm_set_attr(a, kv_dupfn, &plain);

  mt_log("dup the communicator:");
  MPI_Comm b;
  MPI_Comm_dup(a, &b);
  flush_notes();
  mt_check_int("copy callbacks during dup", copies, 2);
  MPI_Comm_get_attr(b, kv, &val, &flag);
  mt_check(flag && *(int *)val == 1020 + me, "dup got the copied value %d",
           flag ? *(int *)val : -1);
  MPI_Comm_get_attr(b, kv_decline, &val, &flag);
  mt_check_int("declined attribute present on dup", flag, 0);
  MPI_Comm_get_attr(b, kv_null, &val, &flag);
  mt_check_int("MPI_COMM_NULL_COPY_FN attribute present on dup", flag, 0);
  MPI_Comm_get_attr(b, kv_dupfn, &val, &flag);
  mt_check(flag && val == &plain, "MPI_COMM_DUP_FN attribute copied as the same pointer");

  mt_log("delete_attr on the original:");
  MPI_Comm_delete_attr(a, kv);
  flush_notes();
  MPI_Comm_get_attr(a, kv, &val, &flag);
  mt_check(flag == 0 && deletes == 2, "deleted attribute is gone (deletes so far %d)", deletes);

  mt_log("free both communicators:");
  MPI_Comm_free(&a); /* deletes vd (kv_decline) */
  expect_comm = b;
  MPI_Comm_free(&b); /* deletes the 1020 copy */
  flush_notes();
  expect_comm = MPI_COMM_NULL;
  mt_check_int("delete callbacks after freeing both", deletes, 4);

  MPI_Comm_free_keyval(&kv);
  MPI_Comm_free_keyval(&kv_decline);
  MPI_Comm_free_keyval(&kv_null);
  MPI_Comm_free_keyval(&kv_dupfn);
  mt_check(kv == MPI_KEYVAL_INVALID, "comm_free_keyval sets MPI_KEYVAL_INVALID");

  /* attribute set on MPI_COMM_WORLD itself */
  {
    int k;
    static int wv = 5;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, k, &wv);
    MPI_Comm_get_attr(MPI_COMM_WORLD, k, &val, &flag);
    mt_check(flag && val == &wv, "attribute on MPI_COMM_WORLD");
    MPI_Comm_delete_attr(MPI_COMM_WORLD, k);
    MPI_Comm_free_keyval(&k);
  }

  /* datatype attributes */
  copies = deletes = 0;
  {
    int tk;
    static int tval = 42;
    MPI_Datatype t, t2;
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_create_keyval(type_copy, type_delete, &tk, NULL);
    MPI_Type_set_attr(t, tk, &tval);
    mt_log("dup the datatype:");
    MPI_Type_dup(t, &t2);
    flush_notes();
    MPI_Type_get_attr(t2, tk, &val, &flag);
    mt_check(flag && val == &tval && copies == 1, "type_dup copied the attribute");
    mt_log("free both datatypes:");
    MPI_Type_free(&t);
    MPI_Type_free(&t2);
    flush_notes();
    mt_check_int("type delete callbacks", deletes, 2);
    MPI_Type_free_keyval(&tk);
  }

  /* window attributes */
  deletes = 0;
  {
    int wk, base[4];
    static int wval = 99;
    MPI_Win win;
    MPI_Win_create(base, sizeof base, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    expect_win = win;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete, &wk, NULL);
    MPI_Win_set_attr(win, wk, &wval);
    MPI_Win_get_attr(win, wk, &val, &flag);
    mt_check(flag && val == &wval, "win get_attr");
    MPI_Win_get_attr(win, MPI_WIN_BASE, &val, &flag);
    mt_check(flag && val == (void *)base, "MPI_WIN_BASE is the window buffer");
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &val, &flag);
    mt_check(flag && *(MPI_Aint *)val == (MPI_Aint)sizeof base, "MPI_WIN_SIZE = %ld",
             (long)*(MPI_Aint *)val);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &val, &flag);
    mt_check(flag && *(int *)val == (int)sizeof(int), "MPI_WIN_DISP_UNIT = %d", *(int *)val);
    mt_log("free the window:");
    MPI_Win_free(&win);
    flush_notes();
    mt_check_int("win delete callbacks", deletes, 1);
    MPI_Win_free_keyval(&wk);
  }

  mt_check_int("callbacks that saw a different object handle", handle_mismatch, 0);
  return mt_end();
}
