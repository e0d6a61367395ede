/* Datatype recipes (wrappers/datatype_recipe.c): which contents layouts are accepted for each
 * combiner, and which constructor a replay calls with which arguments, in the classic and the
 * large-count layouts.  The constructors are fakes that record their arguments. */
#include <criterion/criterion.h>
#include <string.h>

#include "datatype_recipe.h"

/* What the last fake constructor saw. */
static struct {
  const char *fn;
  MPI_Count n, a, b;
  MPI_Count arr1[8], arr2[8], arr3[8];
  int order;
  MPI_Datatype types[4];
} seen;

#define OUT ((MPI_Datatype)0x8c000042)

static void copy_ints(MPI_Count *to, const int *from, MPI_Count n)
{
  for (MPI_Count i = 0; i < n && i < 8; i++)
    to[i] = from[i];
}

static void copy_aints(MPI_Count *to, const MPI_Aint *from, MPI_Count n)
{
  for (MPI_Count i = 0; i < n && i < 8; i++)
    to[i] = from[i];
}

static void copy_counts(MPI_Count *to, const MPI_Count *from, MPI_Count n)
{
  for (MPI_Count i = 0; i < n && i < 8; i++)
    to[i] = from[i];
}

static int made(const char *fn, MPI_Datatype *out)
{
  seen.fn = fn;
  *out = OUT;
  return MPI_SUCCESS;
}

static int f_dup(MPI_Datatype t, MPI_Datatype *o)
{
  seen.types[0] = t;
  return made("dup", o);
}
static int f_contiguous(int n, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.types[0] = t;
  return made("contiguous", o);
}
static int f_vector(int n, int b, int s, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = b, seen.b = s, seen.types[0] = t;
  return made("vector", o);
}
static int f_hvector(int n, int b, MPI_Aint s, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = b, seen.b = s, seen.types[0] = t;
  return made("hvector", o);
}
static int f_indexed(int n, const int b[], const int d[], MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.types[0] = t;
  copy_ints(seen.arr1, b, n);
  copy_ints(seen.arr2, d, n);
  return made("indexed", o);
}
static int f_hindexed(int n, const int b[], const MPI_Aint d[], MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.types[0] = t;
  copy_ints(seen.arr1, b, n);
  copy_aints(seen.arr2, d, n);
  return made("hindexed", o);
}
static int f_indexed_block(int n, int b, const int d[], MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = b, seen.types[0] = t;
  copy_ints(seen.arr2, d, n);
  return made("indexed_block", o);
}
static int f_hindexed_block(int n, int b, const MPI_Aint d[], MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = b, seen.types[0] = t;
  copy_aints(seen.arr2, d, n);
  return made("hindexed_block", o);
}
static int f_struct(int n, const int b[], const MPI_Aint d[], const MPI_Datatype t[],
                    MPI_Datatype *o)
{
  seen.n = n;
  copy_ints(seen.arr1, b, n);
  copy_aints(seen.arr2, d, n);
  memcpy(seen.types, t, (size_t)n * sizeof(*t));
  return made("struct", o);
}
static int f_subarray(int n, const int sz[], const int sub[], const int st[], int order,
                      MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.order = order, seen.types[0] = t;
  copy_ints(seen.arr1, sz, n);
  copy_ints(seen.arr2, sub, n);
  copy_ints(seen.arr3, st, n);
  return made("subarray", o);
}
static int f_darray(int size, int rank, int n, const int g[], const int dist[], const int arg[],
                    const int p[], int order, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = size, seen.b = rank, seen.order = order, seen.types[0] = t;
  copy_ints(seen.arr1, g, n);
  copy_ints(seen.arr2, dist, n);
  copy_ints(seen.arr3, p, n);
  (void)arg;
  return made("darray", o);
}
static int f_resized(MPI_Datatype t, MPI_Aint lb, MPI_Aint e, MPI_Datatype *o)
{
  seen.a = lb, seen.b = e, seen.types[0] = t;
  return made("resized", o);
}
static int f_f90_real(int p, int r, MPI_Datatype *o)
{
  seen.a = p, seen.b = r;
  return made("f90_real", o);
}
static int f_f90_integer(int r, MPI_Datatype *o)
{
  seen.b = r;
  return made("f90_integer", o);
}
static int f_vector_c(MPI_Count n, MPI_Count b, MPI_Count s, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = b, seen.b = s, seen.types[0] = t;
  return made("vector_c", o);
}
static int f_hindexed_c(MPI_Count n, const MPI_Count b[], const MPI_Count d[], MPI_Datatype t,
                        MPI_Datatype *o)
{
  seen.n = n, seen.types[0] = t;
  copy_counts(seen.arr1, b, n);
  copy_counts(seen.arr2, d, n);
  return made("hindexed_c", o);
}
static int f_struct_c(MPI_Count n, const MPI_Count b[], const MPI_Count d[], const MPI_Datatype t[],
                      MPI_Datatype *o)
{
  seen.n = n;
  copy_counts(seen.arr1, b, n);
  copy_counts(seen.arr2, d, n);
  memcpy(seen.types, t, (size_t)n * sizeof(*t));
  return made("struct_c", o);
}
static int f_subarray_c(int n, const MPI_Count sz[], const MPI_Count sub[], const MPI_Count st[],
                        int order, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.order = order, seen.types[0] = t;
  copy_counts(seen.arr1, sz, n);
  copy_counts(seen.arr2, sub, n);
  copy_counts(seen.arr3, st, n);
  return made("subarray_c", o);
}
static int f_darray_c(int size, int rank, int n, const MPI_Count g[], const int dist[],
                      const int arg[], const int p[], int order, MPI_Datatype t, MPI_Datatype *o)
{
  seen.n = n, seen.a = size, seen.b = rank, seen.order = order, seen.types[0] = t;
  copy_counts(seen.arr1, g, n);
  copy_ints(seen.arr2, dist, n);
  copy_ints(seen.arr3, p, n);
  (void)arg;
  return made("darray_c", o);
}
static int f_resized_c(MPI_Datatype t, MPI_Count lb, MPI_Count e, MPI_Datatype *o)
{
  seen.a = lb, seen.b = e, seen.types[0] = t;
  return made("resized_c", o);
}

static const struct mana_dt_ctors fakes = {
    .dup = f_dup,
    .contiguous = f_contiguous,
    .vector = f_vector,
    .hvector = f_hvector,
    .indexed = f_indexed,
    .hindexed = f_hindexed,
    .indexed_block = f_indexed_block,
    .hindexed_block = f_hindexed_block,
    .create_struct = f_struct,
    .subarray = f_subarray,
    .darray = f_darray,
    .resized = f_resized,
    .f90_real = f_f90_real,
    .f90_integer = f_f90_integer,
    .vector_c = f_vector_c,
    .hindexed_c = f_hindexed_c,
    .create_struct_c = f_struct_c,
    .subarray_c = f_subarray_c,
    .darray_c = f_darray_c,
    .resized_c = f_resized_c,
};

/* A recipe over caller-owned arrays. */
static struct mana_dt_recipe recipe(int combiner, int ni, int *ints, int na, MPI_Aint *addrs,
                                    int nl, MPI_Count *counts, int nd)
{
  return (struct mana_dt_recipe){combiner, ni, na, nl, nd, ints, addrs, counts};
}

static int replay(const struct mana_dt_recipe *r, const MPI_Datatype *types)
{
  memset(&seen, 0, sizeof(seen));
  MPI_Datatype out = MPI_DATATYPE_NULL;
  int rc = mana_dt_replay(r, types, &fakes, &out);
  if (rc == MPI_SUCCESS)
    cr_assert_eq(out, OUT);
  return rc;
}

static const MPI_Datatype one_int[] = {MPI_INT};

Test(recipe, dup_and_resized)
{
  struct mana_dt_recipe r = recipe(MPI_COMBINER_DUP, 0, NULL, 0, NULL, 0, NULL, 1);
  cr_assert(mana_dt_recipe_valid(&r));
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "dup");
  cr_assert_eq(seen.types[0], MPI_INT);

  MPI_Aint a[2] = {-4, 64};
  r = recipe(MPI_COMBINER_RESIZED, 0, NULL, 2, a, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "resized");
  cr_assert(seen.a == -4 && seen.b == 64);

  MPI_Count c[2] = {8, 1LL << 40};
  r = recipe(MPI_COMBINER_RESIZED, 0, NULL, 0, NULL, 2, c, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "resized_c", "large counts replay through the _c constructor");
  cr_assert(seen.a == 8 && seen.b == 1LL << 40);
}

Test(recipe, vector_and_hvector)
{
  int i[3] = {3, 2, 4};
  struct mana_dt_recipe r = recipe(MPI_COMBINER_VECTOR, 3, i, 0, NULL, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "vector");
  cr_assert(seen.n == 3 && seen.a == 2 && seen.b == 4);

  int ih[2] = {2, 1};
  MPI_Aint stride = 20;
  r = recipe(MPI_COMBINER_HVECTOR, 2, ih, 1, &stride, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "hvector");
  cr_assert(seen.n == 2 && seen.a == 1 && seen.b == 20);

  /* The deprecated MPI-1 combiner replays as the MPI-2 one. */
  r.combiner = MPI_COMBINER_HVECTOR_INTEGER;
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "hvector");

  MPI_Count c[3] = {5, 1, 7};
  r = recipe(MPI_COMBINER_VECTOR, 0, NULL, 0, NULL, 3, c, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "vector_c");
  cr_assert(seen.n == 5 && seen.a == 1 && seen.b == 7);
}

Test(recipe, indexed_families_split_their_arrays)
{
  int i[7] = {3, 1, 2, 1, 0, 3, 7};
  struct mana_dt_recipe r = recipe(MPI_COMBINER_INDEXED, 7, i, 0, NULL, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "indexed");
  cr_assert(seen.n == 3);
  cr_assert(seen.arr1[0] == 1 && seen.arr1[1] == 2 && seen.arr1[2] == 1);
  cr_assert(seen.arr2[0] == 0 && seen.arr2[1] == 3 && seen.arr2[2] == 7);

  int ih[3] = {2, 2, 1};
  MPI_Aint a[2] = {0, 24};
  r = recipe(MPI_COMBINER_HINDEXED, 3, ih, 2, a, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert(seen.arr1[1] == 1 && seen.arr2[1] == 24);

  int ib[5] = {3, 2, 0, 4, 8};
  r = recipe(MPI_COMBINER_INDEXED_BLOCK, 5, ib, 0, NULL, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert(seen.n == 3 && seen.a == 2 && seen.arr2[2] == 8);

  int ihb[2] = {2, 3};
  MPI_Aint ad[2] = {0, 40};
  r = recipe(MPI_COMBINER_HINDEXED_BLOCK, 2, ihb, 2, ad, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "hindexed_block");
  cr_assert(seen.n == 2 && seen.a == 3 && seen.arr2[1] == 40);

  MPI_Count c[5] = {2, 1, 1, 0, 32};
  r = recipe(MPI_COMBINER_HINDEXED, 0, NULL, 0, NULL, 5, c, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "hindexed_c");
  cr_assert(seen.n == 2 && seen.arr1[1] == 1 && seen.arr2[1] == 32);
}

Test(recipe, struct_passes_every_component)
{
  int i[4] = {3, 1, 2, 1};
  MPI_Aint a[3] = {0, 8, 24};
  MPI_Datatype t[3] = {MPI_INT, MPI_DOUBLE, (MPI_Datatype)0x8c000001};
  struct mana_dt_recipe r = recipe(MPI_COMBINER_STRUCT, 4, i, 3, a, 0, NULL, 3);
  cr_assert_eq(replay(&r, t), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "struct");
  cr_assert(seen.n == 3 && seen.arr1[1] == 2 && seen.arr2[2] == 24);
  cr_assert(seen.types[0] == MPI_INT && seen.types[2] == (MPI_Datatype)0x8c000001);

  MPI_Count c[5] = {2, 1, 3, 0, 16};
  r = recipe(MPI_COMBINER_STRUCT, 0, NULL, 0, NULL, 5, c, 2);
  cr_assert_eq(replay(&r, t), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "struct_c");
  cr_assert(seen.n == 2 && seen.arr1[1] == 3 && seen.arr2[1] == 16);
  cr_assert(seen.types[1] == MPI_DOUBLE);
}

Test(recipe, subarray_and_darray_layouts)
{
  int i[8] = {2, 4, 6, 2, 3, 1, 2, MPI_ORDER_C};
  struct mana_dt_recipe r = recipe(MPI_COMBINER_SUBARRAY, 8, i, 0, NULL, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert(seen.n == 2 && seen.arr1[1] == 6 && seen.arr2[0] == 2 && seen.arr3[1] == 2);
  cr_assert_eq(seen.order, MPI_ORDER_C);

  /* Large: ndims and order stay integers, the three arrays move to the counts. */
  int il[2] = {2, MPI_ORDER_FORTRAN};
  MPI_Count c[6] = {3, 5, 2, 2, 1, 1};
  r = recipe(MPI_COMBINER_SUBARRAY, 2, il, 0, NULL, 6, c, 1);
  cr_assert(mana_dt_recipe_valid(&r));
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "subarray_c");
  cr_assert(seen.arr1[1] == 5 && seen.arr2[0] == 2 && seen.arr3[1] == 1);
  cr_assert_eq(seen.order, MPI_ORDER_FORTRAN);

  /* size, rank, ndims, gsizes, distribs, dargs, psizes, order */
  int d[8] = {2, 1, 1, 8, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_ORDER_C};
  r = recipe(MPI_COMBINER_DARRAY, 8, d, 0, NULL, 0, NULL, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert(seen.a == 2 && seen.b == 1 && seen.n == 1 && seen.arr1[0] == 8);
  cr_assert(seen.arr2[0] == MPI_DISTRIBUTE_BLOCK && seen.arr3[0] == 2);

  /* Large: gsizes alone move to the counts. */
  int dl[7] = {2, 0, 1, MPI_DISTRIBUTE_CYCLIC, 2, 2, MPI_ORDER_C};
  MPI_Count g = 8;
  r = recipe(MPI_COMBINER_DARRAY, 7, dl, 0, NULL, 1, &g, 1);
  cr_assert_eq(replay(&r, one_int), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "darray_c");
  cr_assert(seen.arr1[0] == 8 && seen.arr2[0] == MPI_DISTRIBUTE_CYCLIC && seen.arr3[0] == 2);
}

Test(recipe, fortran_types_are_recognised)
{
  int pr[2] = {6, 30}, ir = 4;
  struct mana_dt_recipe r = recipe(MPI_COMBINER_F90_REAL, 2, pr, 0, NULL, 0, NULL, 0);
  cr_assert(mana_dt_recipe_is_f90(&r));
  cr_assert_eq(replay(&r, NULL), MPI_SUCCESS);
  cr_assert(seen.a == 6 && seen.b == 30);
  r = recipe(MPI_COMBINER_F90_INTEGER, 1, &ir, 0, NULL, 0, NULL, 0);
  cr_assert_eq(replay(&r, NULL), MPI_SUCCESS);
  cr_assert_str_eq(seen.fn, "f90_integer");
  r = recipe(MPI_COMBINER_VECTOR, 3, (int[]){1, 1, 1}, 0, NULL, 0, NULL, 1);
  cr_assert_not(mana_dt_recipe_is_f90(&r));
}

Test(recipe, malformed_recipes_are_refused)
{
  int i[7] = {3, 1, 2, 1, 0, 3, 7};
  /* one integer short of what count 3 needs */
  struct mana_dt_recipe r = recipe(MPI_COMBINER_INDEXED, 6, i, 0, NULL, 0, NULL, 1);
  cr_assert_not(mana_dt_recipe_valid(&r));
  cr_assert_eq(replay(&r, one_int), MPI_ERR_TYPE);
  cr_assert_null(seen.fn, "no constructor is called for an invalid recipe");
  /* a negative count */
  int neg[3] = {-1, 1, 1};
  r = recipe(MPI_COMBINER_INDEXED, 3, neg, 0, NULL, 0, NULL, 1);
  cr_assert_not(mana_dt_recipe_valid(&r));
  /* named types and unknown combiners have no recipe */
  r = recipe(MPI_COMBINER_NAMED, 0, NULL, 0, NULL, 0, NULL, 0);
  cr_assert_not(mana_dt_recipe_valid(&r));
  r = recipe(999, 0, NULL, 0, NULL, 0, NULL, 1);
  cr_assert_not(mana_dt_recipe_valid(&r));
  /* the wrong number of component types */
  r = recipe(MPI_COMBINER_DUP, 0, NULL, 0, NULL, 0, NULL, 2);
  cr_assert_not(mana_dt_recipe_valid(&r));
  /* an empty struct is fine */
  int zero = 0;
  r = recipe(MPI_COMBINER_STRUCT, 1, &zero, 0, NULL, 0, NULL, 0);
  cr_assert(mana_dt_recipe_valid(&r));
}

Test(recipe, a_missing_constructor_is_an_internal_error)
{
  MPI_Count c = 4;
  struct mana_dt_recipe r = recipe(MPI_COMBINER_CONTIGUOUS, 0, NULL, 0, NULL, 1, &c, 1);
  cr_assert(mana_dt_recipe_valid(&r));
  cr_assert_eq(replay(&r, one_int), MPI_ERR_INTERN); /* no contiguous_c among the fakes */
}
