/*
 * std_coll_gather.c - gather, gatherv, scatter, scatterv, allgather and ibcast with strides,
 * column types and resized types, as in the collective chapter's examples.
 *
 * Source: MPI-3.1, chapter 5 (Collective Communication):
 *   section 5.5.1 "Examples using MPI_GATHER, MPI_GATHERV", all nine examples, in order:
 *     G1 gather 100 ints; G2 the same, only the root allocates; G3 the root receives with a
 *     contiguous type of 100 ints; G4 gatherv, blocks stride ints apart; G5 the same, sending
 *     column 0 of a 100x150 C array with a vector type; G6 process i sends 100-i ints of
 *     column i; G7 the same with MPI_INT resized to a row's extent; G8 a varying stride per
 *     block; G9 counts unknown to the root: a gather of the counts, then gatherv
 *     concatenating the blocks;
 *   section 5.6.1 "Examples using MPI_SCATTER, MPI_SCATTERV", all three examples:
 *     S1 scatter 100 ints; S2 scatterv from blocks stride ints apart; S3 a varying stride at
 *     the root, received into column i of a 100x150 array with a vector type;
 *   section 5.7.1 "Example using MPI_ALLGATHER";
 *   section 5.12.2 "Example using MPI_IBCAST" (computation between start and wait).
 * Adaptations: the elided parts (sizes, data, the root, stride) are filled in; the root
 * changes every round (ROUNDS rounds, different data each), stride is 110 and the varying
 * strides are 100+7*i; G9 sends num = 100-3*rank-round ints.  Every received element is
 * compared with the value computed from the sender's formula.
 * Ranks: 2 to 4 (process i sends 100-i ints of column i).
 */
#include "../programs/mpitest.h"

#define ROUNDS 6
#define STRIDE 110

static int sendarray[100][150];
static int recvarray[100][150];

static int sval(int src, int round, int r, int c)
{
  return src * 1000000 + round * 100000 + r * 150 + c;
}

static void fill_array(int rank, int round)
{
  for (int r = 0; r < 100; r++)
    for (int c = 0; c < 150; c++)
      sendarray[r][c] = sval(rank, round, r, c);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_coll_gather");
  int myrank = mt_.rank, gsize = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  int bad[14] = {0};
  int sendvec[100];
  int *displs = mt_alloc(sizeof(int) * (size_t)gsize);
  int *rcounts = mt_alloc(sizeof(int) * (size_t)gsize);
  int *stride = mt_alloc(sizeof(int) * (size_t)gsize);

  for (int round = 0; round < ROUNDS; round++) {
    int root = round % gsize;
    fill_array(myrank, round);
    for (int k = 0; k < 100; k++)
      sendvec[k] = myrank * 1000 + round * 100 + k;

    /* G1: gather 100 ints from every process */
    {
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * 100);
      MPI_Gather(sendvec, 100, MPI_INT, rbuf, 100, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100; k++)
            bad[0] += rbuf[i * 100 + k] != i * 1000 + round * 100 + k;
      free(rbuf);
    }
    /* G2: only the root allocates */
    {
      int *rbuf = NULL;
      if (myrank == root)
        rbuf = mt_alloc(sizeof(int) * (size_t)gsize * 100);
      MPI_Gather(sendvec, 100, MPI_INT, rbuf, 100, MPI_INT, root, comm);
      if (myrank == root) {
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100; k++)
            bad[1] += rbuf[i * 100 + k] != i * 1000 + round * 100 + k;
        free(rbuf);
      }
    }
    /* G3: a contiguous type of 100 ints at the root */
    {
      MPI_Datatype rtype;
      MPI_Type_contiguous(100, MPI_INT, &rtype);
      MPI_Type_commit(&rtype);
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * 100);
      MPI_Gather(sendvec, 100, MPI_INT, rbuf, 1, rtype, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100; k++)
            bad[2] += rbuf[i * 100 + k] != i * 1000 + round * 100 + k;
      free(rbuf);
      MPI_Type_free(&rtype);
    }
    /* G4: gatherv, blocks STRIDE ints apart */
    {
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * STRIDE);
      for (int i = 0; i < gsize * STRIDE; i++)
        rbuf[i] = -1;
      for (int i = 0; i < gsize; ++i) {
        displs[i] = i * STRIDE;
        rcounts[i] = 100;
      }
      MPI_Gatherv(sendvec, 100, MPI_INT, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < STRIDE; k++)
            bad[3] += rbuf[i * STRIDE + k] != (k < 100 ? i * 1000 + round * 100 + k : -1);
      free(rbuf);
    }
    /* G5: column 0 of a 100x150 array, vector type */
    {
      MPI_Datatype stype;
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * STRIDE);
      for (int i = 0; i < gsize; ++i) {
        displs[i] = i * STRIDE;
        rcounts[i] = 100;
      }
      MPI_Type_vector(100, 1, 150, MPI_INT, &stype);
      MPI_Type_commit(&stype);
      MPI_Gatherv(sendarray, 1, stype, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100; k++)
            bad[4] += rbuf[i * STRIDE + k] != sval(i, round, k, 0);
      MPI_Type_free(&stype);
      free(rbuf);
    }
    /* G6: process i sends 100-i ints of column i */
    {
      MPI_Datatype stype;
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * STRIDE);
      for (int i = 0; i < gsize; ++i) {
        displs[i] = i * STRIDE;
        rcounts[i] = 100 - i;
      }
      MPI_Type_vector(100 - myrank, 1, 150, MPI_INT, &stype);
      MPI_Type_commit(&stype);
      int *sptr = &sendarray[0][myrank];
      MPI_Gatherv(sptr, 1, stype, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100 - i; k++)
            bad[5] += rbuf[i * STRIDE + k] != sval(i, round, k, i);
      MPI_Type_free(&stype);
      free(rbuf);
    }
    /* G7: the same with one int resized to the extent of a row */
    {
      MPI_Datatype stype;
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * STRIDE);
      for (int i = 0; i < gsize; ++i) {
        displs[i] = i * STRIDE;
        rcounts[i] = 100 - i;
      }
      MPI_Type_create_resized(MPI_INT, 0, 150 * sizeof(int), &stype);
      MPI_Type_commit(&stype);
      int *sptr = &sendarray[0][myrank];
      MPI_Gatherv(sptr, 100 - myrank, stype, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100 - i; k++)
            bad[6] += rbuf[i * STRIDE + k] != sval(i, round, k, i);
      MPI_Type_free(&stype);
      free(rbuf);
    }
    /* G8: a varying stride between the received blocks */
    {
      MPI_Datatype stype;
      int offset = 0;
      for (int i = 0; i < gsize; ++i)
        stride[i] = 100 + 7 * i;
      for (int i = 0; i < gsize; ++i) {
        displs[i] = offset;
        offset += stride[i];
        rcounts[i] = 100 - i;
      }
      int bufsize = displs[gsize - 1] + rcounts[gsize - 1];
      int *rbuf = mt_alloc(sizeof(int) * (size_t)bufsize);
      MPI_Type_vector(100 - myrank, 1, 150, MPI_INT, &stype);
      MPI_Type_commit(&stype);
      int *sptr = &sendarray[0][myrank];
      MPI_Gatherv(sptr, 1, stype, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root)
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100 - i; k++)
            bad[7] += rbuf[displs[i] + k] != sval(i, round, k, i);
      MPI_Type_free(&stype);
      free(rbuf);
    }
    /* G9: counts unknown to the root */
    {
      MPI_Datatype stype;
      int num = 100 - 3 * myrank - round;
      MPI_Gather(&num, 1, MPI_INT, rcounts, 1, MPI_INT, root, comm);
      int *rbuf = NULL;
      if (myrank == root) {
        displs[0] = 0;
        for (int i = 1; i < gsize; ++i)
          displs[i] = displs[i - 1] + rcounts[i - 1];
        rbuf = mt_alloc(sizeof(int) * (size_t)gsize *
                        (size_t)(displs[gsize - 1] + rcounts[gsize - 1]));
        for (int i = 0; i < gsize; i++)
          bad[8] += rcounts[i] != 100 - 3 * i - round;
      }
      MPI_Type_create_resized(MPI_INT, 0, 150 * sizeof(int), &stype);
      MPI_Type_commit(&stype);
      int *sptr = &sendarray[0][myrank];
      MPI_Gatherv(sptr, num, stype, rbuf, rcounts, displs, MPI_INT, root, comm);
      if (myrank == root) {
        int p = 0;
        for (int i = 0; i < gsize; i++)
          for (int k = 0; k < 100 - 3 * i - round; k++)
            bad[8] += rbuf[p++] != sval(i, round, k, i);
        free(rbuf);
      }
      MPI_Type_free(&stype);
    }

    /* S1: scatter sets of 100 ints */
    {
      int *sendbuf = mt_alloc(sizeof(int) * (size_t)gsize * 100), rbuf[100];
      for (int i = 0; i < gsize * 100; i++)
        sendbuf[i] = root * 7 + round * 100000 + i;
      MPI_Scatter(sendbuf, 100, MPI_INT, rbuf, 100, MPI_INT, root, comm);
      for (int k = 0; k < 100; k++)
        bad[9] += rbuf[k] != root * 7 + round * 100000 + myrank * 100 + k;
      free(sendbuf);
    }
    /* S2: scatterv, the sets STRIDE ints apart at the root */
    {
      int *sendbuf = mt_alloc(sizeof(int) * (size_t)gsize * STRIDE), rbuf[100];
      for (int i = 0; i < gsize * STRIDE; i++)
        sendbuf[i] = root * 7 + round * 100000 + i;
      int *scounts = rcounts;
      for (int i = 0; i < gsize; ++i) {
        displs[i] = i * STRIDE;
        scounts[i] = 100;
      }
      MPI_Scatterv(sendbuf, scounts, displs, MPI_INT, rbuf, 100, MPI_INT, root, comm);
      for (int k = 0; k < 100; k++)
        bad[10] += rbuf[k] != root * 7 + round * 100000 + myrank * STRIDE + k;
      free(sendbuf);
    }
    /* S3: varying stride at the root, received into column myrank of a 100x150 array */
    {
      MPI_Datatype rtype;
      int offset = 0, *scounts = rcounts;
      for (int i = 0; i < gsize; ++i)
        stride[i] = 100 + 7 * i;
      for (int i = 0; i < gsize; ++i) {
        displs[i] = offset;
        offset += stride[i];
        scounts[i] = 100 - i;
      }
      int *sendbuf = mt_alloc(sizeof(int) * (size_t)offset);
      for (int i = 0; i < offset; i++)
        sendbuf[i] = root * 7 + round * 100000 + i;
      for (int r = 0; r < 100; r++)
        for (int c = 0; c < 150; c++)
          recvarray[r][c] = -1;
      MPI_Type_vector(100 - myrank, 1, 150, MPI_INT, &rtype);
      MPI_Type_commit(&rtype);
      int *rptr = &recvarray[0][myrank];
      MPI_Scatterv(sendbuf, scounts, displs, MPI_INT, rptr, 1, rtype, root, comm);
      for (int r = 0; r < 100; r++)
        for (int c = 0; c < 150; c++) {
          int want = (c == myrank && r < 100 - myrank)
                         ? root * 7 + round * 100000 + displs[myrank] + r
                         : -1;
          bad[11] += recvarray[r][c] != want;
        }
      MPI_Type_free(&rtype);
      free(sendbuf);
    }
    /* allgather of 100 ints */
    {
      int *rbuf = mt_alloc(sizeof(int) * (size_t)gsize * 100);
      MPI_Allgather(sendvec, 100, MPI_INT, rbuf, 100, MPI_INT, comm);
      for (int i = 0; i < gsize; i++)
        for (int k = 0; k < 100; k++)
          bad[12] += rbuf[i * 100 + k] != i * 1000 + round * 100 + k;
      free(rbuf);
    }
    /* ibcast of 100 ints from the root, computing on independent data meanwhile */
    {
      int array1[100], array2[100];
      MPI_Request req;
      for (int k = 0; k < 100; k++)
        array1[k] = myrank == root ? root * 31 + round * 1000 + k : -1;
      MPI_Ibcast(array1, 100, MPI_INT, root, comm, &req);
      for (int k = 0; k < 100; k++)
        array2[k] = k * k + round;
      long s2 = 0;
      for (int k = 0; k < 100; k++)
        s2 += array2[k];
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      for (int k = 0; k < 100; k++)
        bad[13] += array1[k] != root * 31 + round * 1000 + k;
      bad[13] += s2 != 328350 + 100L * round;
    }
  }

  const char *names[14] = {"G1 gather",
                           "G2 gather, root allocates",
                           "G3 gather, contiguous rtype",
                           "G4 gatherv with stride",
                           "G5 gatherv of column 0",
                           "G6 gatherv, 100-i of column i",
                           "G7 gatherv, resized int",
                           "G8 gatherv, varying stride",
                           "G9 gather counts then gatherv",
                           "S1 scatter",
                           "S2 scatterv with stride",
                           "S3 scatterv into column i",
                           "allgather",
                           "ibcast"};
  for (int i = 0; i < 14; i++) {
    char what[96];
    snprintf(what, sizeof what, "%s: wrong elements", names[i]);
    mt_check_int(what, bad[i], 0);
  }
  free(displs);
  free(rcounts);
  free(stride);
  mt_allreduce_steps(4);
  return mt_end();
}
