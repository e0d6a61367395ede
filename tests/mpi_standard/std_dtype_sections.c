/*
 * std_dtype_sections.c - derived datatypes that describe sections of Fortran-ordered arrays.
 *
 * Source: MPI-3.1, section 4.1.14 "Examples" (Derived Datatypes), the first four examples of
 * the section (the HTML edition of the standard does not print example numbers):
 *   1. a 3D section a(1:17:2, 3:11, 2:10) described by MPI_Type_vector and two
 *      MPI_Type_create_hvector, received as a contiguous 9x9x9 array;
 *   2. the strictly lower triangular part of a matrix, MPI_Type_indexed;
 *   3. a matrix transpose with a row type (vector) and MPI_Type_create_hvector;
 *   4. the same transpose with the row type resized to the extent of one element
 *      (MPI_Type_create_resized) and sent with a count of N.
 * Adaptations: the 3D array is 20x20x20 (the section fits), matrices are 60x60; the standard
 * sends every message to the calling process itself (MPI_Sendrecv to myrank); here even
 * rounds do exactly that and odd rounds send to the next rank of a ring and receive from the
 * previous one.  The types are built once and used for ROUNDS rounds with different data;
 * every received element is compared with the value computed from the sender's formula.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define N3 20 /* 3D array a(N3,N3,N3) */
#define NM 60 /* matrices a(NM,NM) */
#define ROUNDS 8

/* Fortran (column-major) index, 1-based subscripts. */
static int idx3(int i, int j, int k)
{
  return (i - 1) + (j - 1) * N3 + (k - 1) * N3 * N3;
}
static int idx2(int i, int j)
{
  return (i - 1) + (j - 1) * NM;
}

/* Every value is an integer below 2^24, so exactly representable as a float. */
static float val(int src, int round, int k)
{
  return (float)(src * 1000000 + round * 100000 + k);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_dtype_sections");
  int rank = mt_.rank, size = mt_.size;

  float *a3 = mt_alloc(sizeof(float) * N3 * N3 * N3);
  float e[9 * 9 * 9];
  float *a = mt_alloc(sizeof(float) * NM * NM), *b = mt_alloc(sizeof(float) * NM * NM);

  MPI_Aint lb, sizeofreal;
  MPI_Type_get_extent(MPI_FLOAT, &lb, &sizeofreal);

  /* Example 1: oneslice, twoslice, threeslice. */
  MPI_Datatype oneslice, twoslice, threeslice;
  MPI_Type_vector(9, 1, 2, MPI_FLOAT, &oneslice);
  MPI_Type_create_hvector(9, 1, N3 * sizeofreal, oneslice, &twoslice);
  MPI_Type_create_hvector(9, 1, N3 * N3 * sizeofreal, twoslice, &threeslice);
  MPI_Type_commit(&threeslice);

  /* Example 2: lower triangular part (strictly below the diagonal). */
  int disp[NM], blocklen[NM];
  for (int i = 1; i <= NM; i++) {
    disp[i - 1] = NM * (i - 1) + i;
    blocklen[i - 1] = NM - i;
  }
  MPI_Datatype ltype;
  MPI_Type_indexed(NM, blocklen, disp, MPI_FLOAT, &ltype);
  MPI_Type_commit(&ltype);

  /* Example 3: transpose with a row type and hvector. */
  MPI_Datatype row, xpose;
  MPI_Type_vector(NM, 1, NM, MPI_FLOAT, &row);
  MPI_Type_create_hvector(NM, 1, sizeofreal, row, &xpose);
  MPI_Type_commit(&xpose);

  /* Example 4: the row resized to the extent of one real. */
  MPI_Datatype row1;
  MPI_Type_create_resized(row, 0, sizeofreal, &row1);
  MPI_Type_commit(&row1);

  int sz;
  MPI_Aint tlb, text;
  MPI_Type_size(threeslice, &sz);
  mt_check_int("size of threeslice", sz, 729 * 4);
  MPI_Type_get_extent(threeslice, &tlb, &text);
  mt_check_int("extent of threeslice", (long long)text,
               (long long)(idx3(17, 11, 10) - idx3(1, 3, 2) + 1) * 4);
  MPI_Type_size(ltype, &sz);
  mt_check_int("size of ltype", sz, NM * (NM - 1) / 2 * 4);
  MPI_Type_get_extent(row1, &tlb, &text);
  mt_check_int("extent of row1", (long long)text, 4);

  int bad1 = 0, bad2 = 0, bad3 = 0, bad4 = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int ring = r % 2;
    int dest = ring ? (rank + 1) % size : rank;
    int src = ring ? (rank + size - 1) % size : rank;
    MPI_Status st;

    /* 1: the 3D section */
    for (int k = 0; k < N3 * N3 * N3; k++)
      a3[k] = val(rank, r, k);
    for (int k = 0; k < 729; k++)
      e[k] = -1.0f;
    MPI_Sendrecv(&a3[idx3(1, 3, 2)], 1, threeslice, dest, 0, e, 9 * 9 * 9, MPI_FLOAT, src, 0,
                 MPI_COMM_WORLD, &st);
    for (int k = 0; k < 9; k++)
      for (int j = 0; j < 9; j++)
        for (int i = 0; i < 9; i++) {
          float want = val(src, r, idx3(1 + 2 * i, 3 + j, 2 + k));
          if (e[i + 9 * j + 81 * k] != want)
            bad1++;
        }

    /* 2: the lower triangle, received with the same type into b (the rest untouched) */
    for (int k = 0; k < NM * NM; k++) {
      a[k] = val(rank, r, k);
      b[k] = -1.0f;
    }
    MPI_Sendrecv(a, 1, ltype, dest, 1, b, 1, ltype, src, 1, MPI_COMM_WORLD, &st);
    for (int j = 1; j <= NM; j++)
      for (int i = 1; i <= NM; i++) {
        float want = i > j ? val(src, r, idx2(i, j)) : -1.0f;
        if (b[idx2(i, j)] != want)
          bad2++;
      }

    /* 3: transpose, sent with xpose, received as NM*NM reals */
    MPI_Sendrecv(a, 1, xpose, dest, 2, b, NM * NM, MPI_FLOAT, src, 2, MPI_COMM_WORLD, &st);
    for (int j = 1; j <= NM; j++)
      for (int i = 1; i <= NM; i++)
        if (b[idx2(i, j)] != val(src, r, idx2(j, i)))
          bad3++;

    /* 4: transpose, NM rows of the resized type */
    for (int k = 0; k < NM * NM; k++)
      b[k] = -1.0f;
    MPI_Sendrecv(a, NM, row1, dest, 3, b, NM * NM, MPI_FLOAT, src, 3, MPI_COMM_WORLD, &st);
    int count;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    if (count != NM * NM)
      bad4++;
    for (int j = 1; j <= NM; j++)
      for (int i = 1; i <= NM; i++)
        if (b[idx2(i, j)] != val(src, r, idx2(j, i)))
          bad4++;
  }
  mt_check_int("3D section: wrong elements over all rounds", bad1, 0);
  mt_check_int("lower triangle: wrong elements over all rounds", bad2, 0);
  mt_check_int("transpose (hvector): wrong elements over all rounds", bad3, 0);
  mt_check_int("transpose (resized row): wrong elements over all rounds", bad4, 0);

  MPI_Type_free(&oneslice);
  MPI_Type_free(&twoslice);
  MPI_Type_free(&threeslice);
  MPI_Type_free(&ltype);
  MPI_Type_free(&row);
  MPI_Type_free(&xpose);
  MPI_Type_free(&row1);
  free(a3);
  free(a);
  free(b);
  mt_allreduce_steps(5);
  return mt_end();
}
