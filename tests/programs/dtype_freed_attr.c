/*
 * dtype_freed_attr.c - attributes on datatypes the program frees while a type made from them
 * lives on (as MPICH's attr/attr2type does): MPI keeps such a type, with its attributes, until
 * the last type made from it goes, and runs their delete callbacks then.  Two parents with an
 * attribute each: one duplicated (MPI_Type_dup, whose copy callback runs), one used as the
 * component of a contiguous type.  Each parent is freed first, then the program makes several
 * calls on the survivors before freeing them, and logs how many copy and delete callbacks ran
 * after every step; a checkpoint at any of those calls must not change the counts.
 * Ranks: 1 (or any; every rank does the same).
 */
#include "mpitest.h"

static int copies, deletes;
static int keyval = MPI_KEYVAL_INVALID;

static int copy_fn(MPI_Datatype type, int kv, void *extra, void *in, void *out, int *flag)
{
  (void)type;
  (void)kv;
  (void)extra;
  copies++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_fn(MPI_Datatype type, int kv, void *value, void *extra)
{
  (void)type;
  (void)kv;
  (void)value;
  (void)extra;
  deletes++;
  return MPI_SUCCESS;
}

static void step(const char *what)
{
  mt_log("%-34s copies %d deletes %d", what, copies, deletes);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dtype_freed_attr");
  static int a = 1, b = 2;
  MPI_Datatype parent, dup, base, vec;
  int size = 0, flag = 0;
  void *value = NULL;

  MPI_Type_create_keyval(copy_fn, delete_fn, &keyval, NULL);
  MPI_Type_contiguous(2, MPI_INT, &parent);
  MPI_Type_set_attr(parent, keyval, &a);
  MPI_Type_dup(parent, &dup);
  step("dup made");
  MPI_Type_free(&parent);
  step("parent of the dup freed");
  MPI_Type_size(dup, &size);
  MPI_Type_get_attr(dup, keyval, &value, &flag);
  mt_check(flag && value == &a && size == 2 * (int)sizeof(int), "the dup keeps its attribute");

  MPI_Type_contiguous(3, MPI_INT, &base);
  MPI_Type_set_attr(base, keyval, &b);
  MPI_Type_contiguous(4, base, &vec);
  MPI_Type_commit(&vec);
  step("contiguous of base made");
  MPI_Type_free(&base);
  step("base freed");
  MPI_Type_size(vec, &size);
  mt_check_int("size of the contiguous of the freed base", size, 12 * (int)sizeof(int));

  MPI_Type_free(&dup);
  step("dup freed");
  MPI_Type_free(&vec);
  step("contiguous freed");
  MPI_Type_free_keyval(&keyval);
  mt_check_int("copy callbacks", copies, 1);
  mt_check_int("delete callbacks", deletes, 3);
  return mt_end();
}
