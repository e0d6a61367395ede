/*
 * dtype_basic.c - derived datatype constructors and queries, with non-contiguous data sent
 * between two ranks: contiguous, vector, hvector, indexed, indexed_block, hindexed,
 * hindexed_block, struct (with padding), resized (matrix columns), dup, nested types,
 * commit/free, Type_size, Type_get_extent, Type_get_true_extent, Type_get_envelope,
 * Type_get_contents, Type_set_name/get_name, Get_elements/Get_count on partial receives; the
 * pair types (MPI_FLOAT_INT ...) in structs and reductions while derived types are held.
 * For each layout rank 0 sends from a typed layout and rank 1 receives contiguous ints (and
 * the reverse), so both the gather and the scatter side of the type engine are checked.
 * Ranks: 2.
 */
#include "mpitest.h"
#include <stddef.h>

#define N 64

/* rank 0: send src with (count, type); rank 1: receive nexp contiguous ints and compare with
 * the element indices the type selects (src[i] == i). Then the reverse: rank 1 sends the
 * contiguous ints, rank 0 receives them into the typed layout of a -1 filled buffer. */
static void roundtrip(const char *name, int count, MPI_Datatype type, const int *sel, int nsel)
{
  const int me = mt_.rank;
  char what[128];
  int buf[N];
  if (me == 0) {
    for (int i = 0; i < N; i++)
      buf[i] = i;
    MPI_Send(buf, count, type, 1, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
      buf[i] = -1;
    MPI_Recv(buf, count, type, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int exp[N];
    for (int i = 0; i < N; i++)
      exp[i] = -1;
    for (int k = 0; k < nsel; k++)
      exp[sel[k]] = 1000 + k;
    snprintf(what, sizeof what, "%s: receive into typed layout (whole buffer)", name);
    mt_check_ints(what, buf, exp, N);
  } else {
    MPI_Status st;
    int cnt;
    MPI_Recv(buf, N, MPI_INT, 0, 0, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    snprintf(what, sizeof what, "%s: elements selected", name);
    if (mt_check_int(what, cnt, nsel)) {
      snprintf(what, sizeof what, "%s: send from typed layout", name);
      mt_check_ints(what, buf, sel, nsel);
    }
    for (int k = 0; k < nsel; k++)
      buf[k] = 1000 + k;
    MPI_Send(buf, nsel, MPI_INT, 0, 1, MPI_COMM_WORLD);
  }
}

static void type_info(const char *name, MPI_Datatype t, int esize, long elb, long eext, long etlb,
                      long etext)
{
  int size;
  MPI_Aint lb, ext, tlb, text;
  MPI_Type_size(t, &size);
  MPI_Type_get_extent(t, &lb, &ext);
  MPI_Type_get_true_extent(t, &tlb, &text);
  long got[5] = {size, (long)lb, (long)ext, (long)tlb, (long)text};
  long exp[5] = {esize, elb, eext, etlb, etext};
  int ok = memcmp(got, exp, sizeof got) == 0;
  mt_check(ok, "%s: size %ld lb %ld extent %ld true_lb %ld true_extent %ld", name, got[0], got[1],
           got[2], got[3], got[4]);
}

static const char *combiner_name(int c)
{
  switch (c) {
  case MPI_COMBINER_NAMED:
    return "NAMED";
  case MPI_COMBINER_DUP:
    return "DUP";
  case MPI_COMBINER_CONTIGUOUS:
    return "CONTIGUOUS";
  case MPI_COMBINER_VECTOR:
    return "VECTOR";
  case MPI_COMBINER_HVECTOR:
    return "HVECTOR";
  case MPI_COMBINER_INDEXED:
    return "INDEXED";
  case MPI_COMBINER_HINDEXED:
    return "HINDEXED";
  case MPI_COMBINER_INDEXED_BLOCK:
    return "INDEXED_BLOCK";
  case MPI_COMBINER_HINDEXED_BLOCK:
    return "HINDEXED_BLOCK";
  case MPI_COMBINER_STRUCT:
    return "STRUCT";
  case MPI_COMBINER_SUBARRAY:
    return "SUBARRAY";
  case MPI_COMBINER_DARRAY:
    return "DARRAY";
  case MPI_COMBINER_RESIZED:
    return "RESIZED";
  default:
    return "OTHER";
  }
}

static void envelope(const char *name, MPI_Datatype t, int ecomb, int eni, int ena, int end)
{
  int ni, na, nd, comb;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  mt_check(comb == ecomb && ni == eni && na == ena && nd == end,
           "%s envelope: combiner %s, %d ints %d addrs %d types", name, combiner_name(comb), ni, na,
           nd);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dtype_basic");
  mt_require_size(2);
  const int isz = (int)sizeof(int);

  /* contiguous */
  {
    MPI_Datatype t;
    MPI_Type_contiguous(5, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[10];
    for (int i = 0; i < 10; i++)
      sel[i] = i;
    type_info("contiguous(5,int)", t, 20, 0, 20, 0, 20);
    roundtrip("contiguous(5,int) x2", 2, t, sel, 10);
    envelope("contiguous", t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1);
    MPI_Type_free(&t);
    mt_check(t == MPI_DATATYPE_NULL, "type_free sets MPI_DATATYPE_NULL");
  }

  /* vector: 4 blocks of 3, stride 5 */
  {
    MPI_Datatype t;
    MPI_Type_vector(4, 3, 5, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[12], k = 0;
    for (int b = 0; b < 4; b++)
      for (int j = 0; j < 3; j++)
        sel[k++] = b * 5 + j;
    type_info("vector(4,3,5)", t, 48, 0, 18 * isz, 0, 18 * isz);
    roundtrip("vector(4,3,5)", 1, t, sel, 12);
    int ints[3];
    MPI_Aint dummy_a[1];
    MPI_Datatype types[1];
    envelope("vector", t, MPI_COMBINER_VECTOR, 3, 0, 1);
    MPI_Type_get_contents(t, 3, 0, 1, ints, dummy_a, types);
    mt_check(ints[0] == 4 && ints[1] == 3 && ints[2] == 5 && types[0] == MPI_INT,
             "vector contents: count %d blocklen %d stride %d, oldtype is MPI_INT", ints[0],
             ints[1], ints[2]);
    MPI_Type_free(&t);
  }

  /* hvector: 3 blocks of 2 ints, byte stride 7 ints; count 2 of it (extent = 16 ints + 2 = 16 ints) */
  {
    MPI_Datatype t;
    MPI_Type_create_hvector(3, 2, 7 * isz, MPI_INT, &t);
    MPI_Type_commit(&t);
    /* extent = (2*7 + 2) ints = 16 ints; second copy starts at 16 */
    int sel[12], k = 0;
    for (int c = 0; c < 2; c++)
      for (int b = 0; b < 3; b++)
        for (int j = 0; j < 2; j++)
          sel[k++] = c * 16 + b * 7 + j;
    type_info("hvector(3,2,7 ints)", t, 24, 0, 16 * isz, 0, 16 * isz);
    roundtrip("hvector(3,2,7 ints) x2", 2, t, sel, 12);
    envelope("hvector", t, MPI_COMBINER_HVECTOR, 2, 1, 1);
    MPI_Type_free(&t);
  }

  /* indexed: blocks (len 1 at 10), (len 3 at 2), (len 2 at 20) - unordered displacements */
  {
    MPI_Datatype t;
    int bl[3] = {1, 3, 2}, dp[3] = {10, 2, 20};
    MPI_Type_indexed(3, bl, dp, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[6] = {10, 2, 3, 4, 20, 21};
    type_info("indexed", t, 24, 2 * isz, 20 * isz, 2 * isz, 20 * isz);
    roundtrip("indexed {1@10,3@2,2@20}", 1, t, sel, 6);
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    int ints[7];
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
    mt_check_ints("indexed contents (count, blocklens, displs)", ints,
                  (int[]){3, 1, 3, 2, 10, 2, 20}, 7);
    MPI_Type_free(&t);
  }

  /* indexed_block and hindexed_block */
  {
    MPI_Datatype t, h;
    int dp[4] = {30, 0, 12, 6};
    MPI_Type_create_indexed_block(4, 2, dp, MPI_INT, &t);
    MPI_Type_commit(&t);
    int sel[8] = {30, 31, 0, 1, 12, 13, 6, 7};
    roundtrip("indexed_block(4,2,{30,0,12,6})", 1, t, sel, 8);
    envelope("indexed_block", t, MPI_COMBINER_INDEXED_BLOCK, 6, 0, 1);
    MPI_Aint hd[3] = {40 * isz, 4 * isz, 50 * isz};
    MPI_Type_create_hindexed_block(3, 3, hd, MPI_INT, &h);
    MPI_Type_commit(&h);
    int hsel[9] = {40, 41, 42, 4, 5, 6, 50, 51, 52};
    roundtrip("hindexed_block(3,3,{40,4,50} ints)", 1, h, hsel, 9);
    envelope("hindexed_block", h, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1);
    MPI_Type_free(&t);
    MPI_Type_free(&h);
  }

  /* hindexed with a vector as the old type (nested) */
  {
    MPI_Datatype v, t;
    MPI_Type_vector(2, 1, 3, MPI_INT, &v); /* elements 0 and 3, extent 4 ints */
    int bl[2] = {2, 1};
    MPI_Aint dp[2] = {20 * isz, 1 * isz};
    MPI_Type_create_hindexed(2, bl, dp, v, &t);
    MPI_Type_commit(&t);
    /* block 0: two vectors at 20 and 24 -> 20,23,24,27; block 1: one vector at 1 -> 1,4 */
    int sel[6] = {20, 23, 24, 27, 1, 4};
    roundtrip("hindexed of vector", 1, t, sel, 6);
    envelope("hindexed", t, MPI_COMBINER_HINDEXED, 3, 2, 1);
    {
      int ints[3];
      MPI_Aint addrs[2];
      MPI_Datatype types[1];
      MPI_Type_get_contents(t, 3, 2, 1, ints, addrs, types);
      int ni, na, nd, comb;
      MPI_Type_get_envelope(types[0], &ni, &na, &nd, &comb);
      mt_check(comb == MPI_COMBINER_VECTOR && addrs[0] == 20 * isz,
               "hindexed contents: inner type is a %s, first displacement %ld bytes",
               combiner_name(comb), (long)addrs[0]);
      MPI_Type_free(&types[0]); /* derived types returned by get_contents must be freed */
    }
    MPI_Type_free(&v); /* freeing the inner type does not affect t */
    roundtrip("hindexed of vector after freeing the vector", 1, t, sel, 6);
    MPI_Type_free(&t);
  }

  /* struct with padding: {char c; double d; int i[3];} sent as a struct type, count 3 */
  {
    struct rec {
      char c;
      double d;
      int i[3];
    };
    MPI_Datatype t;
    int bl[3] = {1, 1, 3};
    MPI_Aint dp[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i)};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, bl, dp, ty, &t);
    MPI_Datatype tr;
    MPI_Type_create_resized(t, 0, sizeof(struct rec), &tr);
    MPI_Type_commit(&tr);
    int size;
    MPI_Aint lb, ext;
    MPI_Type_size(tr, &size);
    MPI_Type_get_extent(tr, &lb, &ext);
    mt_check(size == 1 + 8 + 12 && ext == (MPI_Aint)sizeof(struct rec), "struct size %d extent %ld",
             size, (long)ext);
    envelope("struct", t, MPI_COMBINER_STRUCT, 4, 3, 3);
    struct rec r[3];
    memset(r, 0, sizeof r);
    if (mt_.rank == 0) {
      for (int k = 0; k < 3; k++) {
        r[k].c = (char)('a' + k);
        r[k].d = k + 0.125;
        for (int j = 0; j < 3; j++)
          r[k].i[j] = k * 10 + j;
      }
      MPI_Send(r, 3, tr, 1, 5, MPI_COMM_WORLD);
    } else {
      MPI_Status st;
      MPI_Recv(r, 3, tr, 0, 5, MPI_COMM_WORLD, &st);
      int ok = 1;
      for (int k = 0; k < 3; k++) {
        if (r[k].c != 'a' + k || r[k].d != k + 0.125)
          ok = 0;
        for (int j = 0; j < 3; j++)
          if (r[k].i[j] != k * 10 + j)
            ok = 0;
      }
      mt_check(ok, "3 structs received field by field");
      int cnt, el;
      MPI_Get_count(&st, tr, &cnt);
      MPI_Get_elements(&st, tr, &el);
      mt_check(cnt == 3 && el == 15,
               "struct get_count %d get_elements %d (1+1+3 basic elements each)", cnt, el);
    }
    /* partial message: 1 struct + char + double = 7 basic elements, get_count undefined */
    if (mt_.rank == 0) {
      MPI_Send(r, 1, tr, 1, 6, MPI_COMM_WORLD);
    } else {
      MPI_Status st;
      int cnt, el;
      MPI_Recv(r, 2, tr, 0, 6, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, tr, &cnt);
      MPI_Get_elements(&st, tr, &el);
      mt_check(cnt == 1 && el == 5, "one struct into room for two: count %d elements %d", cnt, el);
    }
    if (mt_.rank == 0) {
      /* send 1 char + 1 double + 2 ints as a shorter struct: a partial element */
      MPI_Datatype part;
      int pbl[3] = {1, 1, 2};
      MPI_Type_create_struct(3, pbl, dp, ty, &part);
      MPI_Type_commit(&part);
      MPI_Send(r, 1, part, 1, 7, MPI_COMM_WORLD);
      MPI_Type_free(&part);
    } else {
      MPI_Status st;
      int cnt, el;
      MPI_Recv(r, 1, tr, 0, 7, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, tr, &cnt);
      MPI_Get_elements(&st, tr, &el);
      mt_check(cnt == MPI_UNDEFINED && el == 4,
               "partial struct: count is MPI_UNDEFINED, elements %d", el);
    }
    MPI_Type_free(&t);
    MPI_Type_free(&tr);
  }

  /* resized: send columns 1 and 2 of a 4x6 row-major matrix as "column" type count 2 */
  {
    MPI_Datatype col, colr;
    MPI_Type_vector(4, 1, 6, MPI_INT, &col);
    MPI_Type_create_resized(col, 0, isz, &colr);
    MPI_Type_commit(&colr);
    type_info("resized column", colr, 16, 0, isz, 0, 19 * isz);
    envelope("resized", colr, MPI_COMBINER_RESIZED, 0, 2, 1);
    MPI_Type_free(&col);
    /* start at column 1 by offsetting: use an hindexed wrapper with 1-int displacement */
    MPI_Datatype from1;
    int bl = 2;
    MPI_Aint dp = isz;
    MPI_Type_create_hindexed(1, &bl, &dp, colr, &from1);
    MPI_Type_commit(&from1);
    int sel[8] = {1, 7, 13, 19, 2, 8, 14, 20};
    roundtrip("two matrix columns via resized vector", 1, from1, sel, 8);
    MPI_Type_free(&from1);
    MPI_Type_free(&colr);
  }

  /* dup and names */
  {
    MPI_Datatype v, d;
    MPI_Type_vector(2, 2, 4, MPI_INT, &v);
    MPI_Type_commit(&v);
    MPI_Type_dup(v, &d);
    envelope("dup", d, MPI_COMBINER_DUP, 0, 0, 1);
    int sel[4] = {0, 1, 4, 5};
    roundtrip("dup of vector", 1, d, sel, 4);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_set_name(d, "my-dup-type");
    MPI_Type_get_name(d, name, &len);
    mt_check(strcmp(name, "my-dup-type") == 0 && len == 11, "type set/get name: %s", name);
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    mt_check(strcmp(name, "MPI_DOUBLE") == 0, "predefined type name: %s", name);
    envelope("MPI_INT", MPI_INT, MPI_COMBINER_NAMED, 0, 0, 0);
    MPI_Type_free(&v);
    MPI_Type_free(&d);
  }

  /* predefined type sizes and pair types */
  {
    int s[8];
    MPI_Type_size(MPI_CHAR, &s[0]);
    MPI_Type_size(MPI_SHORT, &s[1]);
    MPI_Type_size(MPI_INT, &s[2]);
    MPI_Type_size(MPI_LONG, &s[3]);
    MPI_Type_size(MPI_DOUBLE, &s[4]);
    MPI_Type_size(MPI_LONG_DOUBLE, &s[5]);
    MPI_Type_size(MPI_DOUBLE_INT, &s[6]);
    MPI_Type_size(MPI_INT64_T, &s[7]);
    mt_check_ints("sizes of char short int long double long-double double-int int64", s,
                  (int[]){1, 2, 4, 8, 8, 16, 12, 8}, 8);
  }

  /* the pair types while derived types are held: MPICH's MPI_FLOAT_INT .. MPI_LONG_DOUBLE_INT
   * have the bits of the first created types, so none may be mistaken for one; a struct of
   * them is made, committed and freed; freeing a pair type itself fails */
  {
    MPI_Datatype held[6], pairs[5] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT,
                                      MPI_LONG_DOUBLE_INT};
    for (int i = 0; i < 6; i++)
      MPI_Type_contiguous(100 + i, MPI_CHAR, &held[i]);
    int sizes[5], combiners[5], ok = 1;
    for (int i = 0; i < 5; i++) {
      int ni, na, nd;
      MPI_Type_size(pairs[i], &sizes[i]);
      MPI_Type_get_envelope(pairs[i], &ni, &na, &nd, &combiners[i]);
      ok &= combiners[i] == MPI_COMBINER_NAMED;
    }
    mt_check_ints("pair type sizes", sizes, (int[]){8, 12, 12, 6, 20}, 5);
    mt_check(ok, "pair types are named types");
    for (int i = 0; i < 5; i++) {
      int blocks[2] = {4, 4};
      MPI_Aint displs[2] = {0, 256};
      MPI_Datatype types[2] = {pairs[i], MPI_BYTE}, t;
      MPI_Type_create_struct(2, blocks, displs, types, &t);
      MPI_Type_commit(&t);
      MPI_Type_size(t, &sizes[i]);
      MPI_Type_free(&t);
    }
    mt_check_ints("sizes of structs of 4 pairs and 4 bytes", sizes, (int[]){36, 52, 52, 28, 84}, 5);
    struct {
      double d;
      int i;
    } in = {1.5 + mt_.rank, mt_.rank}, out = {0, -1};
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    mt_check(out.d == 2.5 && out.i == 1, "MAXLOC on MPI_DOUBLE_INT: %g at %d", out.d, out.i);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype pair = MPI_FLOAT_INT;
    int rc = MPI_Type_free(&pair);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    mt_check(rc != MPI_SUCCESS && pair == MPI_FLOAT_INT, "freeing MPI_FLOAT_INT fails");
    for (int i = 0; i < 6; i++)
      MPI_Type_free(&held[i]);
  }

  /* many types created and freed: handle recycling */
  {
    int ok = 1;
    for (int i = 0; i < 200; i++) {
      MPI_Datatype t;
      MPI_Type_contiguous(i + 1, MPI_BYTE, &t);
      MPI_Type_commit(&t);
      int s;
      MPI_Type_size(t, &s);
      if (s != i + 1)
        ok = 0;
      MPI_Type_free(&t);
    }
    mt_check(ok, "200 create/commit/free cycles");
  }

  return mt_end();
}
