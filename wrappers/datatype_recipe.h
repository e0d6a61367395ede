/* Datatype recipes: how a derived datatype was made, as MPI_Type_get_envelope_c and
 * MPI_Type_get_contents_c describe it, and how to make it again.
 *
 * A recipe is the combiner plus the three contents arrays (integers, addresses, large counts);
 * its component datatypes are kept by the caller, who knows what they are now.  Replaying a
 * recipe calls the one constructor the combiner names, with the arguments unpacked from the
 * arrays in the layout MPI 4.0 defines for that combiner: the classic layout for types made by
 * the int/MPI_Aint constructors, the large-count layout (counts, displacements and strides in
 * the large-count array) for types made by the _c constructors.  The constructors are passed
 * in, so the stub replays through the lower half and the unit tests through fakes.
 *
 * Pure code: no MPI library calls, no globals. */
#ifndef MANA_DATATYPE_RECIPE_H
#define MANA_DATATYPE_RECIPE_H

#include <mpi.h>

struct mana_dt_recipe {
  int combiner;
  MPI_Count ni, na, nl, nd;
  int *ints;
  MPI_Aint *addrs;
  MPI_Count *counts;
};

/* The constructors a replay may call (MPI's signatures).  Unused ones may be NULL. */
struct mana_dt_ctors {
  int (*dup)(MPI_Datatype, MPI_Datatype *);
  int (*contiguous)(int, MPI_Datatype, MPI_Datatype *);
  int (*vector)(int, int, int, MPI_Datatype, MPI_Datatype *);
  int (*hvector)(int, int, MPI_Aint, MPI_Datatype, MPI_Datatype *);
  int (*indexed)(int, const int[], const int[], MPI_Datatype, MPI_Datatype *);
  int (*hindexed)(int, const int[], const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
  int (*indexed_block)(int, int, const int[], MPI_Datatype, MPI_Datatype *);
  int (*hindexed_block)(int, int, const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
  int (*create_struct)(int, const int[], const MPI_Aint[], const MPI_Datatype[], MPI_Datatype *);
  int (*subarray)(int, const int[], const int[], const int[], int, MPI_Datatype, MPI_Datatype *);
  int (*darray)(int, int, int, const int[], const int[], const int[], const int[], int,
                MPI_Datatype, MPI_Datatype *);
  int (*resized)(MPI_Datatype, MPI_Aint, MPI_Aint, MPI_Datatype *);
  int (*f90_real)(int, int, MPI_Datatype *);
  int (*f90_complex)(int, int, MPI_Datatype *);
  int (*f90_integer)(int, MPI_Datatype *);
  /* The large-count forms. */
  int (*contiguous_c)(MPI_Count, MPI_Datatype, MPI_Datatype *);
  int (*vector_c)(MPI_Count, MPI_Count, MPI_Count, MPI_Datatype, MPI_Datatype *);
  int (*hvector_c)(MPI_Count, MPI_Count, MPI_Count, MPI_Datatype, MPI_Datatype *);
  int (*indexed_c)(MPI_Count, const MPI_Count[], const MPI_Count[], MPI_Datatype, MPI_Datatype *);
  int (*hindexed_c)(MPI_Count, const MPI_Count[], const MPI_Count[], MPI_Datatype, MPI_Datatype *);
  int (*indexed_block_c)(MPI_Count, MPI_Count, const MPI_Count[], MPI_Datatype, MPI_Datatype *);
  int (*hindexed_block_c)(MPI_Count, MPI_Count, const MPI_Count[], MPI_Datatype, MPI_Datatype *);
  int (*create_struct_c)(MPI_Count, const MPI_Count[], const MPI_Count[], const MPI_Datatype[],
                         MPI_Datatype *);
  int (*subarray_c)(int, const MPI_Count[], const MPI_Count[], const MPI_Count[], int, MPI_Datatype,
                    MPI_Datatype *);
  int (*darray_c)(int, int, int, const MPI_Count[], const int[], const int[], const int[], int,
                  MPI_Datatype, MPI_Datatype *);
  int (*resized_c)(MPI_Datatype, MPI_Count, MPI_Count, MPI_Datatype *);
};

/* Whether the array lengths are those the combiner's layout defines (a recipe that is not
 * cannot be replayed: an unknown combiner, or contents this code does not understand). */
int mana_dt_recipe_valid(const struct mana_dt_recipe *r);

/* Whether the recipe names a Fortran parameterized type (MPI_Type_create_f90_*): such types
 * are predefined in spirit, cached by MPI and never freed. */
int mana_dt_recipe_is_f90(const struct mana_dt_recipe *r);

/* Makes the type again from the recipe and the component types (r->nd of them, in the
 * recipe's order).  Returns the constructor's error code, MPI_ERR_TYPE for an invalid recipe
 * and MPI_ERR_INTERN when the needed constructor is missing from `c`. */
int mana_dt_replay(const struct mana_dt_recipe *r, const MPI_Datatype *types,
                   const struct mana_dt_ctors *c, MPI_Datatype *out);

#endif
