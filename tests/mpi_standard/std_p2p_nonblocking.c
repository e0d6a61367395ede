/*
 * std_p2p_nonblocking.c - nonblocking point-to-point: MPI_Isend/MPI_Irecv with MPI_Wait,
 * MPI_Request_free on active sends, message ordering, progress, and a server completing
 * clients' messages with MPI_Waitany, MPI_Waitsome and MPI_Testsome.
 *
 * Source: MPI-3.1, chapter 3 (Point-to-Point Communication):
 *   section 3.7.3 "Communication Completion", its two examples: P1 rank 0 MPI_Isend, rank 1
 *     MPI_Irecv (count 15 for a message of 10), each completing with MPI_Wait after some
 *     computation; P2 the MPI_Request_free example, ping-pong of n rounds where each send
 *     request is freed while active and each receive completed with MPI_Wait;
 *   section 3.7.4 "Semantics of Nonblocking Communications", its two examples: P3 message
 *     order (two MPI_Isend matched by MPI_Irecv(MPI_ANY_TAG) and MPI_Irecv(tag 0) in order);
 *     P4 progress (MPI_Ssend then MPI_Send against MPI_Irecv, MPI_Recv, MPI_Wait);
 *   section 3.7.5 "Multiple Completions", its two client-server examples: P5 the server
 *     completes one receive per client with MPI_Waitany and posts it again; P6 the same with
 *     MPI_Waitsome; P7, not an example, the same again with MPI_Testsome polling (the
 *     standard's advice to users beside those examples).
 * Adaptations: the examples' endless loops are bounded (every client sends NMSG messages,
 * the server stops re-posting a client's receive after its last one); the Waitsome
 * example's re-posted receive names the client as source where the standard's text has 0;
 * pairs (0,1), (2,3) run the two-process examples.  The server checks every client's
 * messages arrive complete and in order (non-overtaking), whatever order the clients are
 * served in; only order-independent results are printed.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define NMSG 12
#define NPING 10

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_p2p_nonblocking");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  int peer = rank % 2 == 0 ? rank + 1 : rank - 1; /* -1 free: the last rank of an odd size */
  if (peer >= size)
    peer = -1;
  int lo = rank % 2 == 0;
  MPI_Status status;

  /* P1: simple usage of nonblocking operations and MPI_Wait */
  if (peer >= 0) {
    float a[15];
    int tag = 4;
    MPI_Request request;
    if (lo) {
      for (int k = 0; k < 10; k++)
        a[k] = (float)(rank * 10 + k);
      MPI_Isend(a, 10, MPI_FLOAT, peer, tag, comm, &request);
      double s = 0;
      for (int k = 0; k < 1000; k++)
        s += k;
      MPI_Wait(&request, &status);
      mt_check(s == 499500.0, "P1 computation while the send is pending");
    } else {
      for (int k = 0; k < 15; k++)
        a[k] = -1.0f;
      MPI_Irecv(a, 15, MPI_FLOAT, peer, tag, comm, &request);
      MPI_Wait(&request, &status);
      int count, ok = 1;
      MPI_Get_count(&status, MPI_FLOAT, &count);
      for (int k = 0; k < 15; k++)
        ok &= a[k] == (k < 10 ? (float)(peer * 10 + k) : -1.0f);
      mt_check(ok && count == 10 && status.MPI_SOURCE == peer && status.MPI_TAG == tag,
               "P1 received 10 of 15 floats from %d", peer);
    }
  }

  /* P2: MPI_Request_free on active sends */
  if (peer >= 0) {
    float outval, inval = -1;
    MPI_Request req;
    int bad = 0;
    if (lo) {
      for (int i = 1; i <= NPING; i++) {
        outval = (float)(rank * 1000 + i);
        MPI_Isend(&outval, 1, MPI_FLOAT, peer, 0, comm, &req);
        MPI_Request_free(&req);
        bad += req != MPI_REQUEST_NULL;
        MPI_Irecv(&inval, 1, MPI_FLOAT, peer, 0, comm, &req);
        MPI_Wait(&req, &status);
        bad += inval != (float)(peer * 1000 + i);
      }
    } else {
      static float outs[NPING + 1];
      MPI_Irecv(&inval, 1, MPI_FLOAT, peer, 0, comm, &req);
      MPI_Wait(&req, &status);
      bad += inval != (float)(peer * 1000 + 1);
      for (int i = 1; i <= NPING - 1; i++) {
        /* a freed send's buffer must stay untouched until the reply shows it arrived */
        outs[i] = (float)(rank * 1000 + i);
        MPI_Isend(&outs[i], 1, MPI_FLOAT, peer, 0, comm, &req);
        MPI_Request_free(&req);
        MPI_Irecv(&inval, 1, MPI_FLOAT, peer, 0, comm, &req);
        MPI_Wait(&req, &status);
        bad += inval != (float)(peer * 1000 + i + 1);
      }
      outs[NPING] = (float)(rank * 1000 + NPING);
      MPI_Isend(&outs[NPING], 1, MPI_FLOAT, peer, 0, comm, &req);
      MPI_Wait(&req, &status);
    }
    mt_check_int("P2 request_free ping-pong: wrong values", bad, 0);
  }

  /* P3: message ordering */
  if (peer >= 0) {
    float a = -1, b = -1;
    MPI_Request r1, r2;
    if (lo) {
      a = 1.5f;
      b = 2.5f;
      MPI_Isend(&a, 1, MPI_FLOAT, peer, 0, comm, &r1);
      MPI_Isend(&b, 1, MPI_FLOAT, peer, 0, comm, &r2);
    } else {
      MPI_Irecv(&a, 1, MPI_FLOAT, peer, MPI_ANY_TAG, comm, &r1);
      MPI_Irecv(&b, 1, MPI_FLOAT, peer, 0, comm, &r2);
    }
    MPI_Wait(&r1, &status);
    MPI_Wait(&r2, &status);
    if (!lo)
      mt_check(a == 1.5f && b == 2.5f, "P3 the first send matched the first receive");
  }

  /* P4: progress: the synchronous send completes once the nonblocking receive is posted */
  if (peer >= 0) {
    float a = -1, b = -1;
    if (lo) {
      a = 3.0f;
      b = 4.0f;
      MPI_Ssend(&a, 1, MPI_FLOAT, peer, 0, comm);
      MPI_Send(&b, 1, MPI_FLOAT, peer, 1, comm);
    } else {
      MPI_Request r;
      MPI_Irecv(&a, 1, MPI_FLOAT, peer, 0, comm, &r);
      MPI_Recv(&b, 1, MPI_FLOAT, peer, 1, comm, &status);
      MPI_Wait(&r, &status);
      mt_check(a == 3.0f && b == 4.0f, "P4 Ssend/Send against Irecv/Recv/Wait completed");
    }
  }

  /* P5-P7: client-server.  n floats per message: (client, sequence number, payload...). */
  enum { n = 6 };
  for (int variant = 0; variant < 3; variant++) {
    int tag = 20 + variant;
    if (rank > 0) { /* client code */
      float a[n];
      MPI_Request request;
      for (int m = 0; m < NMSG; m++) {
        a[0] = (float)rank;
        a[1] = (float)m;
        for (int k = 2; k < n; k++)
          a[k] = (float)(rank * 100 + m * 10 + k + variant);
        MPI_Isend(a, n, MPI_FLOAT, 0, tag, comm, &request);
        MPI_Wait(&request, &status);
      }
    } else { /* rank = 0 -- server code */
      float *a = mt_alloc(sizeof(float) * n * (size_t)size);
      MPI_Request *request_list = mt_alloc(sizeof(MPI_Request) * (size_t)size);
      int *next = mt_alloc(sizeof(int) * (size_t)size);
      int *indices = mt_alloc(sizeof(int) * (size_t)size);
      MPI_Status *statuses = mt_alloc(sizeof(MPI_Status) * (size_t)size);
      int bad = 0, served = 0;
      /* request_list[0] stays MPI_REQUEST_NULL: the server is no client */
      request_list[0] = MPI_REQUEST_NULL;
      for (int i = 1; i < size; i++)
        MPI_Irecv(&a[n * i], n, MPI_FLOAT, i, tag, comm, &request_list[i]);
      while (served < NMSG * (size - 1)) {
        int numdone = 0;
        if (variant == 0) {
          int index;
          MPI_Waitany(size, request_list, &index, &status);
          indices[0] = index;
          numdone = 1;
        } else if (variant == 1)
          MPI_Waitsome(size, request_list, &numdone, indices, statuses);
        else {
          MPI_Testsome(size, request_list, &numdone, indices, statuses);
          if (numdone == 0)
            continue;
        }
        for (int d = 0; d < numdone; d++) {
          int i = indices[d];
          float *msg = &a[n * i];
          /* DO_SERVICE: check the client's message is its next one, complete */
          bad += msg[0] != (float)i || msg[1] != (float)next[i];
          for (int k = 2; k < n; k++)
            bad += msg[k] != (float)(i * 100 + next[i] * 10 + k + variant);
          next[i]++;
          served++;
          if (next[i] < NMSG)
            MPI_Irecv(msg, n, MPI_FLOAT, i, tag, comm, &request_list[i]);
        }
      }
      for (int i = 1; i < size; i++)
        bad += next[i] != NMSG || request_list[i] != MPI_REQUEST_NULL;
      const char *how[3] = {"Waitany", "Waitsome", "Testsome"};
      char what[96];
      snprintf(what, sizeof what, "P%d server with %s: messages served", 5 + variant, how[variant]);
      mt_check_int(what, served, NMSG * (size - 1));
      snprintf(what, sizeof what, "P%d server with %s: wrong or out-of-order messages", 5 + variant,
               how[variant]);
      mt_check_int(what, bad, 0);
      free(a);
      free(request_list);
      free(next);
      free(indices);
      free(statuses);
    }
  }
  mt_allreduce_steps(6);
  return mt_end();
}
