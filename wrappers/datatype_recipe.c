/* Datatype recipes: checking the contents layout of each combiner and replaying the
 * constructor (see datatype_recipe.h; the layouts are MPI 4.0's, section 5.1.13). */
#include "datatype_recipe.h"

/* A recipe uses the large-count layout when it has large counts: the _c constructors put every
 * count, displacement and stride there. */
static int large(const struct mana_dt_recipe *r)
{
  return r->nl > 0;
}

/* The first integer (or large count), which sizes the rest of the layout; -1 if missing. */
static MPI_Count lead_int(const struct mana_dt_recipe *r, MPI_Count i)
{
  return r->ni > i && r->ints[i] >= 0 ? r->ints[i] : -1;
}

static MPI_Count lead_count(const struct mana_dt_recipe *r)
{
  return r->nl > 0 && r->counts[0] >= 0 ? r->counts[0] : -1;
}

/* The array lengths {ni, na, nl, nd} the combiner's layout defines for this recipe; returns
 * -1 for an unknown combiner or a layout whose sizing field is missing. */
static int expected(const struct mana_dt_recipe *r, MPI_Count e[4])
{
  MPI_Count n;
  e[0] = e[1] = e[2] = 0;
  e[3] = 1;
  switch (r->combiner) {
  case MPI_COMBINER_DUP:
    return 0;
  case MPI_COMBINER_CONTIGUOUS:
    e[large(r) ? 2 : 0] = 1;
    return 0;
  case MPI_COMBINER_VECTOR:
    e[large(r) ? 2 : 0] = 3;
    return 0;
  case MPI_COMBINER_HVECTOR:
  case MPI_COMBINER_HVECTOR_INTEGER:
    if (large(r))
      e[2] = 3;
    else
      e[0] = 2, e[1] = 1;
    return 0;
  case MPI_COMBINER_INDEXED:
    n = large(r) ? lead_count(r) : lead_int(r, 0);
    e[large(r) ? 2 : 0] = 2 * n + 1;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_HINDEXED:
  case MPI_COMBINER_HINDEXED_INTEGER:
    n = large(r) ? lead_count(r) : lead_int(r, 0);
    if (large(r))
      e[2] = 2 * n + 1;
    else
      e[0] = n + 1, e[1] = n;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_INDEXED_BLOCK:
    n = large(r) ? lead_count(r) : lead_int(r, 0);
    e[large(r) ? 2 : 0] = n + 2;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_HINDEXED_BLOCK:
    n = large(r) ? lead_count(r) : lead_int(r, 0);
    if (large(r))
      e[2] = n + 2;
    else
      e[0] = 2, e[1] = n;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_STRUCT:
  case MPI_COMBINER_STRUCT_INTEGER:
    n = large(r) ? lead_count(r) : lead_int(r, 0);
    if (large(r))
      e[2] = 2 * n + 1;
    else
      e[0] = n + 1, e[1] = n;
    e[3] = n;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_SUBARRAY:
    n = lead_int(r, 0); /* ndims */
    if (large(r))
      e[0] = 2, e[2] = 3 * n;
    else
      e[0] = 3 * n + 2;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_DARRAY:
    n = lead_int(r, 2); /* ndims, after size and rank */
    if (large(r))
      e[0] = 3 * n + 4, e[2] = n;
    else
      e[0] = 4 * n + 4;
    return n < 0 ? -1 : 0;
  case MPI_COMBINER_F90_REAL:
  case MPI_COMBINER_F90_COMPLEX:
    e[0] = 2, e[3] = 0;
    return 0;
  case MPI_COMBINER_F90_INTEGER:
    e[0] = 1, e[3] = 0;
    return 0;
  case MPI_COMBINER_RESIZED:
    if (large(r))
      e[2] = 2;
    else
      e[1] = 2;
    return 0;
  default:
    return -1;
  }
}

int mana_dt_recipe_valid(const struct mana_dt_recipe *r)
{
  MPI_Count e[4];
  if (!r || r->ni < 0 || r->na < 0 || r->nl < 0 || r->nd < 0 || expected(r, e) != 0)
    return 0;
  if ((r->ni && !r->ints) || (r->na && !r->addrs) || (r->nl && !r->counts))
    return 0;
  return r->ni == e[0] && r->na == e[1] && r->nl == e[2] && r->nd == e[3];
}

int mana_dt_recipe_is_f90(const struct mana_dt_recipe *r)
{
  return r->combiner == MPI_COMBINER_F90_REAL || r->combiner == MPI_COMBINER_F90_COMPLEX ||
         r->combiner == MPI_COMBINER_F90_INTEGER;
}

#define CALL(fn, ...) (c->fn ? c->fn(__VA_ARGS__) : MPI_ERR_INTERN)

/* The classic layouts: counts and displacements in the integer and address arrays. */
static int replay_classic(const struct mana_dt_recipe *r, const MPI_Datatype *t,
                          const struct mana_dt_ctors *c, MPI_Datatype *out)
{
  const int *i = r->ints;
  const MPI_Aint *a = r->addrs;
  int n = r->ni > 0 ? i[0] : 0;
  switch (r->combiner) {
  case MPI_COMBINER_CONTIGUOUS:
    return CALL(contiguous, n, t[0], out);
  case MPI_COMBINER_VECTOR:
    return CALL(vector, n, i[1], i[2], t[0], out);
  case MPI_COMBINER_HVECTOR:
  case MPI_COMBINER_HVECTOR_INTEGER:
    return CALL(hvector, n, i[1], a[0], t[0], out);
  case MPI_COMBINER_INDEXED:
    return CALL(indexed, n, i + 1, i + 1 + n, t[0], out);
  case MPI_COMBINER_HINDEXED:
  case MPI_COMBINER_HINDEXED_INTEGER:
    return CALL(hindexed, n, i + 1, a, t[0], out);
  case MPI_COMBINER_INDEXED_BLOCK:
    return CALL(indexed_block, n, i[1], i + 2, t[0], out);
  case MPI_COMBINER_HINDEXED_BLOCK:
    return CALL(hindexed_block, n, i[1], a, t[0], out);
  case MPI_COMBINER_STRUCT:
  case MPI_COMBINER_STRUCT_INTEGER:
    return CALL(create_struct, n, i + 1, a, t, out);
  case MPI_COMBINER_SUBARRAY:
    return CALL(subarray, n, i + 1, i + 1 + n, i + 1 + 2 * n, i[1 + 3 * n], t[0], out);
  case MPI_COMBINER_DARRAY: {
    int d = i[2];
    return CALL(darray, i[0], i[1], d, i + 3, i + 3 + d, i + 3 + 2 * d, i + 3 + 3 * d, i[3 + 4 * d],
                t[0], out);
  }
  case MPI_COMBINER_RESIZED:
    return CALL(resized, t[0], a[0], a[1], out);
  default:
    return MPI_ERR_TYPE;
  }
}

/* The large-count layouts of the _c constructors. */
static int replay_large(const struct mana_dt_recipe *r, const MPI_Datatype *t,
                        const struct mana_dt_ctors *c, MPI_Datatype *out)
{
  const int *i = r->ints;
  const MPI_Count *k = r->counts;
  MPI_Count n = k[0];
  switch (r->combiner) {
  case MPI_COMBINER_CONTIGUOUS:
    return CALL(contiguous_c, n, t[0], out);
  case MPI_COMBINER_VECTOR:
    return CALL(vector_c, n, k[1], k[2], t[0], out);
  case MPI_COMBINER_HVECTOR:
  case MPI_COMBINER_HVECTOR_INTEGER:
    return CALL(hvector_c, n, k[1], k[2], t[0], out);
  case MPI_COMBINER_INDEXED:
    return CALL(indexed_c, n, k + 1, k + 1 + n, t[0], out);
  case MPI_COMBINER_HINDEXED:
  case MPI_COMBINER_HINDEXED_INTEGER:
    return CALL(hindexed_c, n, k + 1, k + 1 + n, t[0], out);
  case MPI_COMBINER_INDEXED_BLOCK:
    return CALL(indexed_block_c, n, k[1], k + 2, t[0], out);
  case MPI_COMBINER_HINDEXED_BLOCK:
    return CALL(hindexed_block_c, n, k[1], k + 2, t[0], out);
  case MPI_COMBINER_STRUCT:
  case MPI_COMBINER_STRUCT_INTEGER:
    return CALL(create_struct_c, n, k + 1, k + 1 + n, t, out);
  case MPI_COMBINER_SUBARRAY: {
    int d = i[0];
    return CALL(subarray_c, d, k, k + d, k + 2 * d, i[1], t[0], out);
  }
  case MPI_COMBINER_DARRAY: {
    int d = i[2];
    return CALL(darray_c, i[0], i[1], d, k, i + 3, i + 3 + d, i + 3 + 2 * d, i[3 + 3 * d], t[0],
                out);
  }
  case MPI_COMBINER_RESIZED:
    return CALL(resized_c, t[0], k[0], k[1], out);
  default:
    return MPI_ERR_TYPE;
  }
}

int mana_dt_replay(const struct mana_dt_recipe *r, const MPI_Datatype *types,
                   const struct mana_dt_ctors *c, MPI_Datatype *out)
{
  if (!mana_dt_recipe_valid(r))
    return MPI_ERR_TYPE;
  switch (r->combiner) {
  case MPI_COMBINER_DUP:
    return CALL(dup, types[0], out);
  case MPI_COMBINER_F90_REAL:
    return CALL(f90_real, r->ints[0], r->ints[1], out);
  case MPI_COMBINER_F90_COMPLEX:
    return CALL(f90_complex, r->ints[0], r->ints[1], out);
  case MPI_COMBINER_F90_INTEGER:
    return CALL(f90_integer, r->ints[0], out);
  default:
    return large(r) ? replay_large(r, types, c, out) : replay_classic(r, types, c, out);
  }
}
