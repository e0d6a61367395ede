/*
 * dtype_pack.c - MPI_Pack / MPI_Unpack / MPI_Pack_size with mixed contents (a header int, a
 * double array and a strided vector) sent as MPI_PACKED; a typed send received as MPI_PACKED
 * and unpacked; MPI_Pack_external / Unpack_external / Pack_external_size in "external32"
 * (big-endian bytes, checked byte by byte); MPI_Get_count in MPI_PACKED units.
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("dtype_pack");
  mt_require_size(2);
  const int me = mt_.rank;
  MPI_Comm w = MPI_COMM_WORLD;

  MPI_Datatype vec; /* every third int, 5 of them */
  MPI_Type_vector(5, 1, 3, MPI_INT, &vec);
  MPI_Type_commit(&vec);

  /* 1. pack [int n][n doubles][vector] and send as MPI_PACKED */
  {
    int s1, s2, s3;
    MPI_Pack_size(1, MPI_INT, w, &s1);
    MPI_Pack_size(7, MPI_DOUBLE, w, &s2);
    MPI_Pack_size(1, vec, w, &s3);
    int bound = s1 + s2 + s3;
    mt_check(s1 >= 4 && s2 >= 56 && s3 >= 20, "pack_size bounds int %d, 7 doubles %d, vector %d",
             s1, s2, s3);
    char *buf = mt_alloc((size_t)bound);
    if (me == 0) {
      int n = 7, pos = 0, src[15];
      double d[7];
      for (int i = 0; i < 7; i++)
        d[i] = i * 1.5 - 2;
      for (int i = 0; i < 15; i++)
        src[i] = 100 + i;
      MPI_Pack(&n, 1, MPI_INT, buf, bound, &pos, w);
      MPI_Pack(d, n, MPI_DOUBLE, buf, bound, &pos, w);
      MPI_Pack(src, 1, vec, buf, bound, &pos, w);
      mt_check(pos <= bound && pos >= 4 + 56 + 20, "packed %s bytes within the pack_size bound",
               pos == 80 ? "80" : "an unexpected number of");
      MPI_Send(buf, pos, MPI_PACKED, 1, 1, w);
    } else {
      MPI_Status st;
      int got_bytes, pos = 0, n = 0;
      MPI_Recv(buf, bound, MPI_PACKED, 0, 1, w, &st);
      MPI_Get_count(&st, MPI_PACKED, &got_bytes);
      MPI_Unpack(buf, got_bytes, &pos, &n, 1, MPI_INT, w);
      double d[7] = {0}, ed[7];
      MPI_Unpack(buf, got_bytes, &pos, d, n, MPI_DOUBLE, w);
      int dst[15], edst[15];
      for (int i = 0; i < 15; i++)
        dst[i] = edst[i] = -1;
      MPI_Unpack(buf, got_bytes, &pos, dst, 1, vec, w);
      for (int i = 0; i < 7; i++)
        ed[i] = i * 1.5 - 2;
      for (int k = 0; k < 5; k++)
        edst[3 * k] = 100 + 3 * k;
      mt_check_int("unpacked header n", n, 7);
      mt_check_dbls("unpacked doubles", d, ed, 7);
      mt_check_ints("unpacked into vector layout", dst, edst, 15);
      mt_check(pos == got_bytes, "unpack consumed the whole message (%s)",
               pos == got_bytes ? "yes" : "no");
    }
    free(buf);
  }

  /* 2. typed send (vector) received as MPI_PACKED, then unpacked as contiguous ints */
  {
    int psz;
    MPI_Pack_size(2, vec, w, &psz);
    char *buf = mt_alloc((size_t)psz);
    if (me == 1) {
      int src[30];
      for (int i = 0; i < 30; i++)
        src[i] = i * i;
      /* two vectors: extent of vec is 13 ints, so the second starts at 13 */
      MPI_Send(src, 2, vec, 0, 2, w);
    } else {
      MPI_Status st;
      int bytes, pos = 0, out[10];
      MPI_Recv(buf, psz, MPI_PACKED, 1, 2, w, &st);
      MPI_Get_count(&st, MPI_PACKED, &bytes);
      mt_check_int("bytes of 2 vectors received as MPI_PACKED", bytes, 40);
      MPI_Unpack(buf, bytes, &pos, out, 10, MPI_INT, w);
      int exp[10];
      for (int c = 0; c < 2; c++)
        for (int k = 0; k < 5; k++)
          exp[c * 5 + k] = (c * 13 + 3 * k) * (c * 13 + 3 * k);
      mt_check_ints("typed send unpacked as contiguous", out, exp, 10);
    }
    free(buf);
  }

  /* 3. pack a vector locally and unpack it into a different layout (no communication) */
  {
    int src[15], dst[5], pos = 0, pos2 = 0;
    char buf[64];
    for (int i = 0; i < 15; i++)
      src[i] = -i;
    MPI_Pack(src, 1, vec, buf, (int)sizeof buf, &pos, w);
    MPI_Unpack(buf, pos, &pos2, dst, 5, MPI_INT, w);
    mt_check_ints("local pack(vector) -> unpack(contiguous)", dst, (int[]){0, -3, -6, -9, -12}, 5);
  }

  /* 4. external32: portable big-endian representation */
  {
    MPI_Aint esz, pos = 0, pos2 = 0;
    int vals[2] = {0x01020304, -2};
    double dv = 1.0; /* 0x3FF0000000000000 */
    unsigned char buf[64];
    MPI_Pack_external_size("external32", 2, MPI_INT, &esz);
    mt_check_int("pack_external_size(2 ints)", (long long)esz, 8);
    MPI_Pack_external("external32", vals, 2, MPI_INT, buf, sizeof buf, &pos);
    MPI_Pack_external("external32", &dv, 1, MPI_DOUBLE, buf, sizeof buf, &pos);
    int bytes[16];
    for (int i = 0; i < 16; i++)
      bytes[i] = buf[i];
    mt_check_ints("external32 bytes of 0x01020304, -2, 1.0", bytes,
                  (int[]){1, 2, 3, 4, 255, 255, 255, 254, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 16);
    int back[2] = {0, 0};
    double dback = 0;
    MPI_Unpack_external("external32", buf, pos, &pos2, back, 2, MPI_INT);
    MPI_Unpack_external("external32", buf, pos, &pos2, &dback, 1, MPI_DOUBLE);
    mt_check(back[0] == vals[0] && back[1] == vals[1] && dback == 1.0 && pos2 == 16,
             "unpack_external round trip (%d bytes)", (int)pos2);
    /* external32 of a derived type */
    MPI_Aint vsz;
    MPI_Pack_external_size("external32", 1, vec, &vsz);
    mt_check_int("pack_external_size(vector of 5 ints)", (long long)vsz, 20);
  }

  MPI_Type_free(&vec);
  return mt_end();
}
