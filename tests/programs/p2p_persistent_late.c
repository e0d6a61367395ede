/*
 * p2p_persistent_late.c - persistent receives started after their message has arrived: the
 * sender's message is on its way before the receiver calls MPI_Start (MPICH's
 * pt2pt/precv_anysrc does this with wildcards).  A checkpoint taken between the send and the
 * MPI_Start buffers the message in the drain; after the restart, MPI_Start (and
 * MPI_Startall) must be served from the buffer, not post a receive that matches the next,
 * larger message (MPI_ERR_TRUNCATE).
 *
 * Rounds of growing sizes (64 B to 256 KiB): rank 1 MPI_Isend, MPI_Barrier, MPI_Wait; rank 0
 * MPI_Recv_init (MPI_ANY_SOURCE, MPI_ANY_TAG, or the source and tag in odd rounds), barrier,
 * MPI_Start (MPI_Startall of that request and a persistent receive from MPI_PROC_NULL in every
 * third round), MPI_Wait, checks the data, the status and frees the request.
 * Ranks: 2.
 */
#include "mpitest.h"

static const int sizes[] = {64, 32768, 262144, 100, 70000, 8};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("p2p_persistent_late");
  mt_require_size(2);
  int bad = 0, bad_status = 0;
  for (int round = 0; round < 2 * NSIZES; round++) {
    const int n = sizes[round % NSIZES], tag = 10 + round;
    unsigned char *buf = calloc((size_t)n, 1);
    if (!buf)
      mt_die("calloc failed");
    if (mt_.rank == 0) {
      MPI_Request req[2];
      MPI_Status st[2];
      int any = round % 2 == 0;
      MPI_Recv_init(buf, n, MPI_BYTE, any ? MPI_ANY_SOURCE : 1, any ? MPI_ANY_TAG : tag,
                    MPI_COMM_WORLD, &req[0]);
      MPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req[1]);
      MPI_Barrier(MPI_COMM_WORLD);
      if (round % 3 == 2) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, st);
      } else {
        MPI_Start(&req[0]);
        MPI_Wait(&req[0], &st[0]);
      }
      int got = -1;
      MPI_Get_count(&st[0], MPI_BYTE, &got);
      bad_status += st[0].MPI_SOURCE != 1 || st[0].MPI_TAG != tag || got != n;
      for (int i = 0; i < n; i++)
        bad += buf[i] != (unsigned char)((i * 7 + round) & 0xff);
      MPI_Request_free(&req[0]);
      MPI_Request_free(&req[1]);
    } else {
      for (int i = 0; i < n; i++)
        buf[i] = (unsigned char)((i * 7 + round) & 0xff);
      MPI_Request req;
      MPI_Isend(buf, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    free(buf);
  }
  if (mt_.rank == 0) {
    mt_check_int("bytes received wrong", bad, 0);
    mt_check_int("statuses wrong (source, tag or count)", bad_status, 0);
  }
  return mt_end();
}
