/*
 * rebuild_types.c - derived datatypes survive a rebuild in place: every combiner MPICH has
 * (dup, contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct,
 * subarray, darray, resized, the Fortran f90 types, the deprecated MPI-1 constructors), the
 * large-count (_c) constructors, types built on components the program has already freed,
 * names (also on a predefined type) and attributes with a copy callback.  After the rebuild
 * each type is described (envelope, size, extents, name) and exchanged between the two ranks,
 * and the bytes that arrive are printed as a checksum.  Components obtained with
 * MPI_Type_get_contents after the rebuild work too.
 * Ranks: 2.
 */
#include "rebuild.h"

#define BYTES 4096

static int copies;

static int copy_fn(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)t;
  (void)keyval;
  (void)extra;
  copies++;
  *(void **)out = (void *)((intptr_t)in * 2);
  *flag = 1;
  return MPI_SUCCESS;
}

static const char *combiner_name(int c)
{
  static const char *names[] = {"?",          "named",         "dup",
                                "contiguous", "vector",        "hvector_integer",
                                "hvector",    "indexed",       "hindexed_integer",
                                "hindexed",   "indexed_block", "struct_integer",
                                "struct",     "subarray",      "darray",
                                "f90_real",   "f90_complex",   "f90_integer",
                                "resized",    "hindexed_block"};
  return c >= 0 && c < (int)(sizeof(names) / sizeof(names[0])) ? names[c] : "?";
}

/* FNV-1a of the received bytes, and how many are not zero. */
static void exchange(const char *what, MPI_Datatype t, int count)
{
  static unsigned char out[BYTES], in[BYTES];
  for (int i = 0; i < BYTES; i++)
    out[i] = (unsigned char)(i * 7 + 13 * mt_.rank + 1);
  memset(in, 0, sizeof(in));
  int peer = 1 - mt_.rank;
  MPI_Sendrecv(out, count, t, peer, 0, in, count, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  uint32_t h = 2166136261u;
  int nonzero = 0;
  for (int i = 0; i < BYTES; i++) {
    h = (h ^ in[i]) * 16777619u;
    nonzero += in[i] != 0;
  }
  mt_log("%s: received %d bytes set, checksum %08x", what, nonzero, h);
}

static void describe(const char *what, MPI_Datatype t)
{
  int ni, na, nd, comb, size;
  MPI_Count nic, nac, nlc, ndc;
  MPI_Aint lb, extent, tlb, textent;
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  MPI_Type_get_envelope_c(t, &nic, &nac, &nlc, &ndc, &comb);
  if (nlc == 0)
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  MPI_Type_size(t, &size);
  MPI_Type_get_extent(t, &lb, &extent);
  MPI_Type_get_true_extent(t, &tlb, &textent);
  MPI_Type_get_name(t, name, &len);
  mt_log("%s: %s (%lld ints, %lld addrs, %lld counts, %lld types) size %d lb %ld extent %ld "
         "true %ld+%ld name '%s'",
         what, combiner_name(comb), (long long)nic, (long long)nac, (long long)nlc, (long long)ndc,
         size, (long)lb, (long)extent, (long)tlb, (long)textent, name);
}

static void both(const char *what, MPI_Datatype t, int count)
{
  describe(what, t);
  exchange(what, t, count);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_types");
  mt_require_size(2);
  int me = mt_.rank;

  int tkv;
  MPI_Type_create_keyval(copy_fn, MPI_TYPE_NULL_DELETE_FN, &tkv, NULL);

  MPI_Datatype contig, vec, hvec, idx, hidx, idxb, hidxb, st, sub, darr, res, dup, f90r, f90i,
      legacy_hvec, legacy_hidx, legacy_st;
  MPI_Type_contiguous(3, MPI_INT, &contig);
  MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
  MPI_Type_create_hvector(2, 1, 20, contig, &hvec);
  MPI_Type_free(&contig); /* hvec still needs it */
  MPI_Type_indexed(3, (int[]){1, 2, 1}, (int[]){0, 3, 7}, MPI_INT, &idx);
  MPI_Type_create_hindexed(2, (int[]){2, 1}, (MPI_Aint[]){0, 24}, MPI_DOUBLE, &hidx);
  MPI_Type_create_indexed_block(3, 2, (int[]){0, 4, 8}, MPI_SHORT, &idxb);
  MPI_Type_create_hindexed_block(2, 3, (MPI_Aint[]){0, 40}, MPI_INT, &hidxb);
  MPI_Type_create_struct(3, (int[]){1, 2, 1}, (MPI_Aint[]){0, 8, 24},
                         (MPI_Datatype[]){MPI_INT, MPI_DOUBLE, vec}, &st);
  MPI_Type_create_subarray(2, (int[]){4, 6}, (int[]){2, 3}, (int[]){1, 2}, MPI_ORDER_C, MPI_INT,
                           &sub);
  MPI_Type_create_darray(2, me, 1, (int[]){8}, (int[]){MPI_DISTRIBUTE_BLOCK},
                         (int[]){MPI_DISTRIBUTE_DFLT_DARG}, (int[]){2}, MPI_ORDER_C, MPI_INT,
                         &darr);
  MPI_Type_create_resized(vec, -4, 64, &res);
  MPI_Type_dup(st, &dup);
  MPI_Type_create_f90_real(6, 30, &f90r);
  MPI_Type_create_f90_integer(4, &f90i);
  MPI_Type_hvector(2, 2, 16, MPI_INT, &legacy_hvec);
  MPI_Type_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){4, 16}, MPI_INT, &legacy_hidx);
  MPI_Type_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8}, (MPI_Datatype[]){MPI_CHAR, MPI_INT},
                  &legacy_st);

  MPI_Datatype c_contig, c_vec, c_hvec, c_idx, c_hidx, c_idxb, c_hidxb, c_st, c_sub, c_darr, c_res;
  MPI_Type_contiguous_c(5, MPI_SHORT, &c_contig);
  MPI_Type_vector_c(2, 1, 3, MPI_INT, &c_vec);
  MPI_Type_create_hvector_c(2, 2, 24, MPI_INT, &c_hvec);
  MPI_Type_indexed_c(2, (MPI_Count[]){2, 1}, (MPI_Count[]){0, 5}, MPI_INT, &c_idx);
  MPI_Type_create_hindexed_c(2, (MPI_Count[]){1, 1}, (MPI_Count[]){0, 32}, MPI_DOUBLE, &c_hidx);
  MPI_Type_create_indexed_block_c(2, 2, (MPI_Count[]){1, 6}, MPI_INT, &c_idxb);
  MPI_Type_create_hindexed_block_c(2, 1, (MPI_Count[]){8, 48}, MPI_DOUBLE, &c_hidxb);
  MPI_Type_create_struct_c(2, (MPI_Count[]){1, 3}, (MPI_Count[]){0, 16},
                           (MPI_Datatype[]){MPI_DOUBLE, c_vec}, &c_st);
  MPI_Type_create_subarray_c(2, (MPI_Count[]){3, 5}, (MPI_Count[]){2, 2}, (MPI_Count[]){1, 1},
                             MPI_ORDER_FORTRAN, MPI_INT, &c_sub);
  MPI_Type_create_darray_c(2, me, 1, (MPI_Count[]){8}, (int[]){MPI_DISTRIBUTE_CYCLIC}, (int[]){2},
                           (int[]){2}, MPI_ORDER_C, MPI_INT, &c_darr);
  MPI_Type_create_resized_c(MPI_INT, 0, 12, &c_res);

  MPI_Type_set_name(st, "my struct");
  MPI_Type_set_name(MPI_FLOAT, "renamed float");
  MPI_Type_set_attr(vec, tkv, (void *)(intptr_t)21);
  MPI_Datatype vec_dup;
  MPI_Type_dup(vec, &vec_dup); /* copy callback: 42 */

  MPI_Datatype *committed[] = {
      &vec,    &hvec,   &idx,         &hidx,        &idxb,      &hidxb,    &st,    &sub,    &darr,
      &res,    &dup,    &legacy_hvec, &legacy_hidx, &legacy_st, &c_contig, &c_vec, &c_hvec, &c_idx,
      &c_hidx, &c_idxb, &c_hidxb,     &c_st,        &c_sub,     &c_darr,   &c_res, &vec_dup};
  for (size_t i = 0; i < sizeof(committed) / sizeof(committed[0]); i++)
    MPI_Type_commit(committed[i]);

  rebuild_checked("(1)");

  both("vector", vec, 1);
  both("hvector of freed contiguous", hvec, 2);
  both("indexed", idx, 2);
  both("hindexed", hidx, 1);
  both("indexed_block", idxb, 3);
  both("hindexed_block", hidxb, 1);
  both("struct", st, 2);
  both("subarray", sub, 1);
  both("darray", darr, 1);
  both("resized", res, 3);
  both("dup of struct", dup, 1);
  describe("f90 real", f90r);
  describe("f90 integer", f90i);
  both("legacy hvector", legacy_hvec, 1);
  both("legacy hindexed", legacy_hidx, 1);
  both("legacy struct", legacy_st, 2);
  both("contiguous_c", c_contig, 2);
  both("vector_c", c_vec, 2);
  both("hvector_c", c_hvec, 1);
  both("indexed_c", c_idx, 1);
  both("hindexed_c", c_hidx, 1);
  both("indexed_block_c", c_idxb, 1);
  both("hindexed_block_c", c_hidxb, 1);
  both("struct_c", c_st, 1);
  both("subarray_c", c_sub, 1);
  both("darray_c", c_darr, 1);
  both("resized_c", c_res, 4);
  both("dup of vector", vec_dup, 1);

  char name[MPI_MAX_OBJECT_NAME];
  int len, flag;
  MPI_Type_get_name(MPI_FLOAT, name, &len);
  mt_log("MPI_FLOAT name '%s'", name);
  void *v = NULL;
  MPI_Type_get_attr(vec, tkv, &v, &flag);
  mt_log("vector attribute %s %ld", flag ? "set" : "unset", (long)(intptr_t)v);
  MPI_Type_get_attr(vec_dup, tkv, &v, &flag);
  mt_log("dup of vector attribute %s %ld", flag ? "set" : "unset", (long)(intptr_t)v);

  /* The freed component of hvec, decoded after the rebuild, is a working type. */
  int ints[4];
  MPI_Aint addrs[4];
  MPI_Datatype comps[2];
  MPI_Type_get_contents(hvec, 4, 4, 2, ints, addrs, comps);
  MPI_Type_commit(&comps[0]);
  both("component of hvector", comps[0], 2);
  MPI_Datatype again;
  MPI_Type_vector(2, 1, 2, comps[0], &again); /* a new type on a decoded one */
  MPI_Type_commit(&again);
  MPI_Type_free(&comps[0]);
  MPI_Type_free(&hvec); /* again's component lives on in again only */

  rebuild_checked("(2)");

  both("vector of decoded component", again, 1);
  both("struct", st, 1);
  both("resized_c", c_res, 4);
  MPI_Type_dup(vec, &contig); /* copy callback after two rebuilds */
  MPI_Type_get_attr(contig, tkv, &v, &flag);
  mt_log("new dup of vector attribute %s %ld; %d copies", flag ? "set" : "unset", (long)(intptr_t)v,
         copies);
  MPI_Type_free(&contig);

  MPI_Datatype *all[] = {&vec,   &idx,    &hidx,  &idxb,        &hidxb,       &st,        &sub,
                         &darr,  &res,    &dup,   &legacy_hvec, &legacy_hidx, &legacy_st, &c_contig,
                         &c_vec, &c_hvec, &c_idx, &c_hidx,      &c_idxb,      &c_hidxb,   &c_st,
                         &c_sub, &c_darr, &c_res, &vec_dup,     &again};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    MPI_Type_free(all[i]);
  MPI_Type_free_keyval(&tkv);
  return mt_end();
}
