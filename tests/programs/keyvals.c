/*
 * keyvals.c - attribute keyvals and callbacks at the edges of the standard:
 *   - a copy callback that fails makes MPI_Comm_dup and MPI_Type_dup fail, and the new handle
 *     is MPI_COMM_NULL / MPI_DATATYPE_NULL;
 *   - a keyval freed while attributes use it stays valid for them: a dup still runs its copy
 *     callback, freeing the object still runs its delete callback, the callbacks receive the
 *     program's keyval handle, keyvals made after it are new ones, deleting the attribute with
 *     a saved copy of the handle works, and freeing the keyval again (from the copy, or from
 *     inside its delete callback) does nothing;
 *   - the same for a datatype keyval.
 * Ranks: 2.
 */
#include "mpitest.h"

static int copy_fails(MPI_Comm c, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)c;
  (void)keyval;
  (void)extra;
  *(void **)out = in;
  *flag = 1;
  return MPI_ERR_OTHER;
}

static int type_copy_fails(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)t;
  (void)keyval;
  (void)extra;
  *(void **)out = in;
  *flag = 1;
  return MPI_ERR_OTHER;
}

/* Callbacks in the style of MPICH's fkeyval test: the attribute is the address of a counter
 * that copies increment and deletes decrement. */
static int saved_keyval = MPI_KEYVAL_INVALID; /* the program's copy of the freed keyval */
static int wrong_keyval, refree_failed;

static int copy_inc(MPI_Comm c, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)c;
  (void)extra;
  if (keyval != saved_keyval)
    wrong_keyval++;
  (*(int *)in)++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* Also frees the keyval it is given, which MPI must take as a no-op once it is freed. */
static int delete_dec(MPI_Comm c, int keyval, void *val, void *extra)
{
  (void)c;
  (void)extra;
  if (keyval != saved_keyval)
    wrong_keyval++;
  (*(int *)val)--;
  if (MPI_Comm_free_keyval(&keyval) != MPI_SUCCESS)
    refree_failed++;
  return MPI_SUCCESS;
}

static int type_copy_inc(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)t;
  (void)extra;
  if (keyval != saved_keyval)
    wrong_keyval++;
  (*(int *)in)++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int type_delete_dec(MPI_Datatype t, int keyval, void *val, void *extra)
{
  (void)t;
  (void)extra;
  if (keyval != saved_keyval)
    wrong_keyval++;
  (*(int *)val)--;
  if (MPI_Type_free_keyval(&keyval) != MPI_SUCCESS)
    refree_failed++;
  return MPI_SUCCESS;
}

static void failing_copies(void)
{
  static int x = 5;
  int kv, rc;
  MPI_Comm a, b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
  MPI_Comm_create_keyval(copy_fails, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
  MPI_Comm_set_attr(a, kv, &x);
  b = MPI_COMM_SELF; /* anything but the null handle */
  rc = MPI_Comm_dup(a, &b);
  mt_check(rc != MPI_SUCCESS, "comm dup with a failing copy callback fails");
  mt_check(b == MPI_COMM_NULL, "and gives MPI_COMM_NULL");
  MPI_Comm_delete_attr(a, kv);
  rc = MPI_Comm_dup(a, &b);
  mt_check(rc == MPI_SUCCESS && b != MPI_COMM_NULL, "comm dup without the attribute works");
  MPI_Comm_free(&b);
  MPI_Comm_free(&a);
  MPI_Comm_free_keyval(&kv);

  /* MPICH raises datatype errors on MPI_COMM_WORLD's handler */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype t, t2;
  MPI_Type_contiguous(2, MPI_INT, &t);
  MPI_Type_create_keyval(type_copy_fails, MPI_TYPE_NULL_DELETE_FN, &kv, NULL);
  MPI_Type_set_attr(t, kv, &x);
  t2 = MPI_INT;
  rc = MPI_Type_dup(t, &t2);
  mt_check(rc != MPI_SUCCESS, "type dup with a failing copy callback fails");
  mt_check(t2 == MPI_DATATYPE_NULL, "and gives MPI_DATATYPE_NULL");
  MPI_Type_delete_attr(t, kv);
  MPI_Type_free(&t);
  MPI_Type_free_keyval(&kv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A keyval freed while an attribute on MPI_COMM_WORLD (on_world) or on a duplicate of it uses
 * it. */
static void freed_comm_keyval(int on_world, const char *what)
{
  int counter = 1, kv, copy, others[8], flag, rc, same = 0;
  void *val;
  MPI_Comm c = MPI_COMM_WORLD, d;
  char line[96];
  mt_log("attribute on %s:", what);
  if (!on_world)
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_create_keyval(copy_inc, delete_dec, &kv, NULL);
  saved_keyval = copy = kv;
  MPI_Comm_set_attr(c, kv, &counter);
  MPI_Comm_free_keyval(&kv);
  mt_check(kv == MPI_KEYVAL_INVALID, "freeing the keyval sets MPI_KEYVAL_INVALID");
  for (int i = 0; i < 8; i++) {
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &others[i], NULL);
    same += others[i] == saved_keyval;
  }
  mt_check_int("keyvals made later with the freed keyval's handle", same, 0);

  MPI_Comm_dup(c, &d);
  mt_check_int("a dup runs the freed keyval's copy callback: counter", counter, 2);
  MPI_Comm_get_attr(d, copy, &val, &flag);
  mt_check(flag && val == (void *)&counter, "the dup has the attribute");
  MPI_Comm_free(&d);
  mt_check_int("freeing the dup runs its delete callback: counter", counter, 1);
  rc = MPI_Comm_free_keyval(&copy);
  mt_check(rc == MPI_SUCCESS && copy == MPI_KEYVAL_INVALID,
           "freeing the keyval again does nothing");

  if (on_world) {
    MPI_Comm_delete_attr(c, saved_keyval);
    snprintf(line, sizeof line, "deleting the attribute with a saved handle: counter");
  } else {
    MPI_Comm_free(&c);
    snprintf(line, sizeof line, "freeing the communicator: counter");
  }
  mt_check_int(line, counter, 0);
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  mt_check_int("a new dup of MPI_COMM_WORLD copies nothing: counter", counter, 0);
  MPI_Comm_free(&d);
  for (int i = 0; i < 8; i++)
    MPI_Comm_free_keyval(&others[i]);
  mt_check_int("callbacks given another keyval", wrong_keyval, 0);
  mt_check_int("frees of the freed keyval that failed", refree_failed, 0);
}

static void freed_type_keyval(void)
{
  int counter = 1, kv, copy, rc;
  MPI_Datatype t, t2;
  mt_log("attribute on a datatype:");
  MPI_Type_contiguous(3, MPI_INT, &t);
  MPI_Type_create_keyval(type_copy_inc, type_delete_dec, &kv, NULL);
  saved_keyval = copy = kv;
  MPI_Type_set_attr(t, kv, &counter);
  MPI_Type_free_keyval(&kv);
  MPI_Type_dup(t, &t2);
  mt_check_int("a type dup runs the freed keyval's copy callback: counter", counter, 2);
  MPI_Type_free(&t2);
  rc = MPI_Type_free_keyval(&copy);
  mt_check(rc == MPI_SUCCESS, "freeing the type keyval again does nothing");
  MPI_Type_free(&t);
  mt_check_int("freeing both types ran both delete callbacks: counter", counter, 0);
  mt_check_int("callbacks given another keyval", wrong_keyval, 0);
  mt_check_int("frees of the freed keyval that failed", refree_failed, 0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("keyvals");
  mt_require_size(2);

  failing_copies();
  freed_comm_keyval(1, "MPI_COMM_WORLD");
  freed_comm_keyval(0, "a duplicate of MPI_COMM_WORLD");
  freed_type_keyval();
  return mt_end();
}
