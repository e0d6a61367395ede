/*
 * std_dtype_struct.c - an array of structures sent with struct, indexed, hvector and resized
 * types, with relative and with absolute addresses, a union, and a datatype decoded.
 *
 * Source: MPI-3.1, section 4.1.14 "Examples" (Derived Datatypes), the fifth to the eighth
 * example of the section (the HTML edition prints no example numbers):
 *   5. struct Partstruct particle[1000]: Particlestruct (MPI_Type_create_struct) resized to
 *      the entry's extent; 4.1 the whole array; 4.2 only the type-zero particles preceded by
 *      their number (MPI_Type_indexed of Particletype, then a struct with the count, sent from
 *      MPI_BOTTOM), in both the one-per-entry and the run-of-entries form; 4.3 the first two
 *      coordinates of every entry (MPI_Type_create_hvector, and the alternative with
 *      MPI_Type_contiguous resized to the entry's extent);
 *   6. the same with absolute addresses (sent from MPI_BOTTOM) for 5.1 and 5.2;
 *   7. a union of int and float, one resized type per member;
 *   8. decoding a datatype (MPI_Type_get_envelope, MPI_Type_get_contents): the standard's
 *      printdatatype() is transcribed to write into a string, which is checked.
 * Adaptations: the standard shows only the sender; here every rank sends to the next rank of
 * a ring and receives (into a plain array, with the relative Particletype) from the previous
 * one; the type-zero particles are received with a struct of the count and 1000 particles
 * (a longer receive buffer).  ROUNDS rounds with different data; the "Zparticles" types are
 * rebuilt every round, as the standard says they must be when the types change.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"
#include <stddef.h>

#define NP 1000
#define ROUNDS 6

struct Partstruct {
  int type;    /* particle type */
  double d[6]; /* particle coordinates */
  char b[7];   /* some additional information */
};

static struct Partstruct particle[NP], recvp[NP];
static double pairs[2 * NP];

static int ptype_of(int src, int round, int i)
{
  uint32_t s = (uint32_t)(src * 7919 + round * 104729 + i * 31 + 1);
  mt_rand(&s);
  return (int)(mt_rand(&s) % 3);
}

static void fill(struct Partstruct *p, int src, int round)
{
  for (int i = 0; i < NP; i++) {
    p[i].type = ptype_of(src, round, i);
    for (int k = 0; k < 6; k++)
      p[i].d[k] = src * 100000.0 + round * 10000.0 + i + k * 0.125;
    for (int k = 0; k < 7; k++)
      p[i].b[k] = (char)('a' + (src + round + i + k) % 26);
  }
}

static int same(const struct Partstruct *x, const struct Partstruct *y)
{
  if (x->type != y->type)
    return 0;
  for (int k = 0; k < 6; k++)
    if (x->d[k] != y->d[k])
      return 0;
  return memcmp(x->b, y->b, 7) == 0;
}

/* printdatatype() of the standard, writing into out instead of stdout; returns 0 for a
 * predefined type, 1 otherwise.  Derived types returned by MPI_Type_get_contents are freed. */
static int printdatatype(MPI_Datatype datatype, char *out, size_t cap)
{
  int num_ints, num_adds, num_dtypes, combiner;
  size_t len = strlen(out);
  MPI_Type_get_envelope(datatype, &num_ints, &num_adds, &num_dtypes, &combiner);
  switch (combiner) {
  case MPI_COMBINER_NAMED:
    if (datatype == MPI_INT)
      snprintf(out + len, cap - len, "MPI_INT;");
    else if (datatype == MPI_DOUBLE)
      snprintf(out + len, cap - len, "MPI_DOUBLE;");
    else if (datatype == MPI_CHAR)
      snprintf(out + len, cap - len, "MPI_CHAR;");
    else
      snprintf(out + len, cap - len, "named?;");
    return 0;
  case MPI_COMBINER_STRUCT: {
    int *ints = mt_alloc(sizeof(int) * (size_t)num_ints);
    MPI_Aint *adds = mt_alloc(sizeof(MPI_Aint) * (size_t)num_adds);
    MPI_Datatype *types = mt_alloc(sizeof(MPI_Datatype) * (size_t)num_dtypes);
    MPI_Type_get_contents(datatype, num_ints, num_adds, num_dtypes, ints, adds, types);
    snprintf(out + len, cap - len, "struct %d:", ints[0]);
    for (int i = 0; i < ints[0]; i++) {
      len = strlen(out);
      snprintf(out + len, cap - len, " [%d @%ld ", ints[i + 1], (long)adds[i]);
      if (printdatatype(types[i], out, cap))
        MPI_Type_free(&types[i]);
      len = strlen(out);
      snprintf(out + len, cap - len, "]");
    }
    free(ints);
    free(adds);
    free(types);
    break;
  }
  case MPI_COMBINER_RESIZED: {
    int ints[1];
    MPI_Aint adds[2];
    MPI_Datatype types[1];
    MPI_Type_get_contents(datatype, 0, 2, 1, ints, adds, types);
    snprintf(out + len, cap - len, "resized(lb %ld, extent %ld) of ", (long)adds[0], (long)adds[1]);
    if (printdatatype(types[0], out, cap))
      MPI_Type_free(&types[0]);
    break;
  }
  default:
    snprintf(out + len, cap - len, "combiner %d;", combiner);
  }
  return 1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_dtype_struct");
  int rank = mt_.rank, size = mt_.size;
  int dest = (rank + 1) % size, src = (rank + size - 1) % size, tag = 5;
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Status st;
  MPI_Request rq;

  /* build datatype describing structure (relative displacements) */
  MPI_Datatype Particlestruct, Particletype;
  MPI_Datatype type[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  int blocklen[3] = {1, 6, 7};
  MPI_Aint disp[3], base, lb, sizeofentry;
  MPI_Get_address(particle, disp);
  MPI_Get_address(particle[0].d, disp + 1);
  MPI_Get_address(particle[0].b, disp + 2);
  base = disp[0];
  for (int i = 0; i < 3; i++)
    disp[i] = MPI_Aint_diff(disp[i], base);
  MPI_Type_create_struct(3, blocklen, disp, type, &Particlestruct);
  MPI_Get_address(particle + 1, &sizeofentry);
  sizeofentry = MPI_Aint_diff(sizeofentry, base);
  MPI_Type_create_resized(Particlestruct, 0, sizeofentry, &Particletype);
  MPI_Type_commit(&Particletype);
  mt_check_int("extent of one entry", (long long)sizeofentry, (long long)sizeof(struct Partstruct));

  /* 4.3: all pairs of coordinates, and the alternative with a resized pair */
  MPI_Datatype Allpairs, Twodouble, Onepair;
  MPI_Type_get_extent(Particletype, &lb, &sizeofentry);
  MPI_Type_create_hvector(NP, 2, sizeofentry, MPI_DOUBLE, &Allpairs);
  MPI_Type_commit(&Allpairs);
  MPI_Type_contiguous(2, MPI_DOUBLE, &Twodouble);
  MPI_Type_create_resized(Twodouble, 0, sizeofentry, &Onepair);
  MPI_Type_commit(&Onepair);

  /* Example 6: the first entry described with absolute addresses */
  MPI_Datatype Particleabs;
  MPI_Aint adisp[3];
  MPI_Get_address(particle, adisp);
  MPI_Get_address(particle[0].d, adisp + 1);
  MPI_Get_address(particle[0].b, adisp + 2);
  MPI_Type_create_struct(3, blocklen, adisp, type, &Particleabs);
  MPI_Type_commit(&Particleabs);

  /* Example 7: a union */
  static union {
    int ival;
    float fval;
  } u[NP], ur[NP];
  MPI_Datatype mpi_utype[2];
  MPI_Aint ui, extent;
  MPI_Get_address(u, &ui);
  MPI_Get_address(u + 1, &extent);
  extent = MPI_Aint_diff(extent, ui);
  MPI_Type_create_resized(MPI_INT, 0, extent, &mpi_utype[0]);
  MPI_Type_create_resized(MPI_FLOAT, 0, extent, &mpi_utype[1]);
  for (int i = 0; i < 2; i++)
    MPI_Type_commit(&mpi_utype[i]);

  /* Example 8: decode Particletype */
  char desc[512] = "";
  printdatatype(Particletype, desc, sizeof desc);
  char want[512];
  snprintf(want, sizeof want,
           "resized(lb 0, extent %ld) of struct 3: [1 @0 MPI_INT;] [6 @%ld MPI_DOUBLE;] "
           "[7 @%ld MPI_CHAR;]",
           (long)sizeof(struct Partstruct), (long)offsetof(struct Partstruct, d),
           (long)offsetof(struct Partstruct, b));
  mt_check(strcmp(desc, want) == 0, "decoded Particletype: %s", desc);

  int bad[8] = {0};
  int zcount_total = 0;
  for (int r = 0; r < ROUNDS; r++) {
    struct Partstruct expect[NP];
    fill(particle, rank, r);
    fill(expect, src, r);

    /* 4.1: send the entire array */
    memset(recvp, 0, sizeof recvp);
    MPI_Isend(particle, NP, Particletype, dest, tag, comm, &rq);
    MPI_Recv(recvp, NP, Particletype, src, tag, comm, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < NP; i++)
      bad[0] += !same(&recvp[i], &expect[i]);

    /* expected type-zero particles of the sender */
    int nz = 0, zidx[NP];
    for (int i = 0; i < NP; i++)
      if (expect[i].type == 0)
        zidx[nz++] = i;
    zcount_total += nz;

    /* the receiver: a count followed by up to NP particles */
    int rj = -1;
    MPI_Datatype rtypes[2] = {MPI_INT, Particletype}, Rtype;
    int rblock[2] = {1, NP};
    MPI_Aint rdisp[2];
    MPI_Get_address(&rj, rdisp);
    MPI_Get_address(recvp, rdisp + 1);
    MPI_Type_create_struct(2, rblock, rdisp, rtypes, &Rtype);
    MPI_Type_commit(&Rtype);

    for (int variant = 0; variant < 2; variant++) {
      /* 4.2: the type-zero particles, one block per entry (variant 0) or one block per run
       * of consecutive entries (variant 1, "a probably more efficient way") */
      static int zdisp[NP], zblock[NP];
      int j = 0;
      if (variant == 0) {
        for (int i = 0; i < NP; i++)
          if (particle[i].type == 0) {
            zdisp[j] = i;
            zblock[j] = 1;
            j++;
          }
      } else {
        for (int i = 0; i < NP; i++)
          if (particle[i].type == 0) {
            int k;
            for (k = i + 1; (k < NP) && (particle[k].type == 0); k++)
              ;
            zdisp[j] = i;
            zblock[j] = k - i;
            j++;
            i = k;
          }
      }
      MPI_Datatype Zparticles, Ztype, zztype[2];
      int zzblock[2] = {1, 1};
      MPI_Aint zzdisp[2];
      MPI_Type_indexed(j, zblock, zdisp, Particletype, &Zparticles);
      /* the count sent is the number of particles (j counts blocks in variant 1) */
      int count = 0;
      for (int q = 0; q < j; q++)
        count += zblock[q];
      MPI_Get_address(&count, zzdisp);
      MPI_Get_address(particle, zzdisp + 1);
      zztype[0] = MPI_INT;
      zztype[1] = Zparticles;
      MPI_Type_create_struct(2, zzblock, zzdisp, zztype, &Ztype);
      MPI_Type_commit(&Ztype);

      memset(recvp, 0, sizeof recvp);
      rj = -1;
      MPI_Isend(MPI_BOTTOM, 1, Ztype, dest, tag, comm, &rq);
      MPI_Recv(MPI_BOTTOM, 1, Rtype, src, tag, comm, &st);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      bad[1 + variant] += rj != nz;
      for (int q = 0; q < nz && q < NP; q++)
        bad[1 + variant] += !same(&recvp[q], &expect[zidx[q]]);
      MPI_Type_free(&Ztype);
      MPI_Type_free(&Zparticles);
    }

    /* 4.3: the first two coordinates of all entries, both ways */
    for (int w = 0; w < 2; w++) {
      for (int i = 0; i < 2 * NP; i++)
        pairs[i] = -1.0;
      if (w == 0)
        MPI_Isend(particle[0].d, 1, Allpairs, dest, tag, comm, &rq);
      else
        MPI_Isend(particle[0].d, NP, Onepair, dest, tag, comm, &rq);
      MPI_Recv(pairs, 2 * NP, MPI_DOUBLE, src, tag, comm, &st);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      for (int i = 0; i < NP; i++)
        bad[3 + w] += pairs[2 * i] != expect[i].d[0] || pairs[2 * i + 1] != expect[i].d[1];
    }

    /* 5.1: the entire array with absolute addresses */
    memset(recvp, 0, sizeof recvp);
    MPI_Isend(MPI_BOTTOM, NP, Particleabs, dest, tag, comm, &rq);
    MPI_Recv(recvp, NP, Particletype, src, tag, comm, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < NP; i++)
      bad[5] += !same(&recvp[i], &expect[i]);

    /* 5.2: the type-zero entries with absolute addresses, runs of entries */
    {
      static int zdisp[NP], zblock[NP];
      int j = 0;
      for (int i = 0; i < NP; i++)
        if (particle[i].type == 0) {
          int k;
          for (k = i + 1; (k < NP) && (particle[k].type == 0); k++)
            ;
          zdisp[j] = i;
          zblock[j] = k - i;
          j++;
          i = k;
        }
      MPI_Datatype Zparticles, Ztype, zztype[2];
      int zzblock[2] = {1, 1};
      MPI_Aint zzdisp[2];
      MPI_Type_indexed(j, zblock, zdisp, Particleabs, &Zparticles);
      int count = 0;
      for (int q = 0; q < j; q++)
        count += zblock[q];
      MPI_Get_address(&count, zzdisp);
      zzdisp[1] = (MPI_Aint)0;
      zztype[0] = MPI_INT;
      zztype[1] = Zparticles;
      MPI_Type_create_struct(2, zzblock, zzdisp, zztype, &Ztype);
      MPI_Type_commit(&Ztype);
      memset(recvp, 0, sizeof recvp);
      rj = -1;
      MPI_Isend(MPI_BOTTOM, 1, Ztype, dest, tag, comm, &rq);
      MPI_Recv(MPI_BOTTOM, 1, Rtype, src, tag, comm, &st);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      bad[6] += rj != nz;
      for (int q = 0; q < nz; q++)
        bad[6] += !same(&recvp[q], &expect[zidx[q]]);
      MPI_Type_free(&Ztype);
      MPI_Type_free(&Zparticles);
    }
    MPI_Type_free(&Rtype);

    /* 7: the union, its current member chosen by the round */
    int utype = r % 2;
    for (int i = 0; i < NP; i++) {
      if (utype == 0)
        u[i].ival = rank * 100000 + r * 1000 + i;
      else
        u[i].fval = (float)(rank * 100000 + r * 1000 + i) + 0.5f;
      ur[i].ival = -1;
    }
    MPI_Isend(u, NP, mpi_utype[utype], dest, tag, comm, &rq);
    MPI_Recv(ur, NP, mpi_utype[utype], src, tag, comm, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < NP; i++) {
      if (utype == 0)
        bad[7] += ur[i].ival != src * 100000 + r * 1000 + i;
      else
        bad[7] += ur[i].fval != (float)(src * 100000 + r * 1000 + i) + 0.5f;
    }
  }
  mt_check_int("4.1 whole array: wrong particles", bad[0], 0);
  mt_check_int("4.2 type-zero particles, one block each: wrong", bad[1], 0);
  mt_check_int("4.2 type-zero particles, runs: wrong", bad[2], 0);
  mt_check_int("4.3 coordinate pairs (hvector): wrong", bad[3], 0);
  mt_check_int("4.3 coordinate pairs (resized pair): wrong", bad[4], 0);
  mt_check_int("5.1 whole array, absolute addresses: wrong", bad[5], 0);
  mt_check_int("5.2 type-zero particles, absolute addresses: wrong", bad[6], 0);
  mt_check_int("union: wrong elements", bad[7], 0);
  mt_log("type-zero particles received over all rounds: %d", zcount_total);

  MPI_Type_free(&Particlestruct);
  MPI_Type_free(&Particletype);
  MPI_Type_free(&Allpairs);
  MPI_Type_free(&Twodouble);
  MPI_Type_free(&Onepair);
  MPI_Type_free(&Particleabs);
  MPI_Type_free(&mpi_utype[0]);
  MPI_Type_free(&mpi_utype[1]);
  mt_allreduce_steps(4);
  return mt_end();
}
