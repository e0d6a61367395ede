/*
 * inflight_p2p.c - a long-running, checkpointable workload that always has point-to-point
 * traffic in flight: at any moment a checkpoint may find unmatched synchronous sends, posted
 * wildcard receives, messages waiting in the receiver's unexpected queue, and a blocking
 * MPI_Probe.
 *
 *   usage: inflight_p2p [ITERS [WORK [DEPTH]]]
 *          defaults 3000 200000 4: about half a second natively at -n 2 on an idle 2-core
 *          machine; the run time grows linearly with ITERS (and with WORK, the number of
 *          floating-point updates per iteration).
 *
 * Every iteration, on a duplicate of MPI_COMM_WORLD:
 *   - two receives are posted with MPI_ANY_SOURCE / MPI_ANY_TAG into a pool of slots;
 *   - two messages go out with MPI_Issend, one to each neighbour on the ring, DEPTH
 *     iterations ahead of the receives that will take them, so about 2 x DEPTH messages per
 *     rank are always unmatched; each is one element of a struct datatype (header ints and
 *     a column of a matrix selected by a vector datatype, resized to the message struct);
 *   - some computation;
 *   - MPI_Testsome on the receive and send slots; MPI_Waitany when a pool is full.
 * Every PROBE_EVERY iterations, on MPI_COMM_WORLD: every rank sends its right neighbour a
 * message of a varying length through a fresh MPI_Type_vector (created, committed and freed
 * each time) and takes its own with MPI_Probe(MPI_ANY_SOURCE), MPI_Get_count and MPI_Recv.
 *
 * Completion order is never printed: every message is checked on arrival against its
 * source, tag and payload, and folded into order-independent sums. Rank 0 prints the
 * totals at the end; the output depends only on the arguments and the rank count, so a run
 * checkpointed and restarted any number of times prints what an uninterrupted run prints.
 * Any number of ranks works (one rank sends to itself).
 */
#include "mpitest.h"
#include <stddef.h>

#define NV 8          /* doubles per stream message */
#define MSTRIDE 5     /* the matrix the column comes from has MSTRIDE columns */
#define PROBE_EVERY 7 /* iterations between probe exchanges */
#define PROBE_TAG 77
#define PROBE_MAX 300 /* ints */

struct msg {
  int src, it, dir, check;
  double v[NV];
};

/* The payload of the stream message (src, it, dir), element j. */
static double value(int src, long it, int dir, int j)
{
  return (double)((src * 1000003L + it * 7919L + dir * 31L + j) % 100003L) * 0.5;
}

static int tag_of(long it, int dir)
{
  return (int)(it % 8192) * 2 + dir;
}

/* Pools of request slots. */
struct pool {
  MPI_Request *rq;
  int n, used;
};

static int free_slot(struct pool *p)
{
  for (int i = 0; i < p->n; i++)
    if (p->rq[i] == MPI_REQUEST_NULL)
      return i;
  return -1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("inflight_p2p");
  const int me = mt_.rank, np = mt_.size;
  const long iters = mt_arg("inflight_p2p", argc, argv, 1, 3000);
  const long work = mt_arg("inflight_p2p", argc, argv, 2, 200000);
  const int depth = (int)mt_arg("inflight_p2p", argc, argv, 3, 4);
  const int right = (me + 1) % np, left = (me + np - 1) % np;
  double t_start = MPI_Wtime();

  MPI_Comm stream;
  MPI_Comm_dup(MPI_COMM_WORLD, &stream);

  /* The message type: 4 ints, then NV doubles taken from column 0 of an NV x MSTRIDE matrix
   * (a vector type) placed where struct msg has them; resized so that count 1 spans a
   * whole struct msg on the sender, whose buffer is a struct with the matrix after it. */
  struct sendbuf {
    struct msg m;
    double matrix[NV * MSTRIDE];
  };
  MPI_Datatype column, send_type, recv_type;
  MPI_Type_vector(NV, 1, MSTRIDE, MPI_DOUBLE, &column);
  {
    int blens[2] = {4, 1};
    MPI_Aint disps[2] = {offsetof(struct sendbuf, m.src), offsetof(struct sendbuf, matrix)};
    MPI_Datatype types[2] = {MPI_INT, column};
    MPI_Datatype t;
    MPI_Type_create_struct(2, blens, disps, types, &t);
    MPI_Type_create_resized(t, 0, sizeof(struct sendbuf), &send_type);
    MPI_Type_free(&t);
    MPI_Type_commit(&send_type);
  }
  {
    int blens[2] = {4, NV};
    MPI_Aint disps[2] = {offsetof(struct msg, src), offsetof(struct msg, v)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Datatype t;
    MPI_Type_create_struct(2, blens, disps, types, &t);
    MPI_Type_create_resized(t, 0, sizeof(struct msg), &recv_type);
    MPI_Type_free(&t);
    MPI_Type_commit(&recv_type);
  }
  MPI_Type_free(&column);

  struct pool rp = {0}, sp = {0};
  rp.n = 2 * depth + 4;
  sp.n = 2 * depth + 6;
  rp.rq = mt_alloc(sizeof(MPI_Request) * (size_t)rp.n);
  sp.rq = mt_alloc(sizeof(MPI_Request) * (size_t)sp.n);
  for (int i = 0; i < rp.n; i++)
    rp.rq[i] = MPI_REQUEST_NULL;
  for (int i = 0; i < sp.n; i++)
    sp.rq[i] = MPI_REQUEST_NULL;
  struct msg *rbuf = mt_alloc(sizeof(struct msg) * (size_t)rp.n);
  struct sendbuf *sbuf = mt_alloc(sizeof(struct sendbuf) * (size_t)sp.n);
  int *idx = mt_alloc(sizeof(int) * (size_t)(rp.n > sp.n ? rp.n : sp.n));
  MPI_Status *sts = mt_alloc(sizeof(MPI_Status) * (size_t)(rp.n > sp.n ? rp.n : sp.n));

  double *field = mt_alloc(sizeof(double) * 4096);
  for (int i = 0; i < 4096; i++)
    field[i] = (double)((i * 37 + me) % 101) / 101.0;

  long received[2] = {0, 0}, bad = 0, sent = 0, waitany_recv = 0, waitany_send = 0;
  long long it_sum[2] = {0, 0};
  uint64_t digest = 0;
  long probes = 0, probe_bad = 0;
  uint64_t probe_digest = 0;

  /* Checks one received stream message against what its sender must have sent. */
#define TAKE(slot, status)                                                                        \
  do {                                                                                            \
    const struct msg *m_ = &rbuf[slot];                                                           \
    int ok_ = m_->src == (status).MPI_SOURCE && m_->dir >= 0 && m_->dir <= 1 && m_->it >= 0 &&    \
              m_->it < iters && (status).MPI_TAG == tag_of(m_->it, m_->dir) &&                    \
              m_->src == (m_->dir == 0 ? left : right) &&                                         \
              m_->check == (int)(mt_mix((uint64_t)m_->src * 65536 + (uint64_t)m_->it) & 0xffff);  \
    for (int j_ = 0; ok_ && j_ < NV; j_++)                                                        \
      ok_ = m_->v[j_] == value(m_->src, m_->it, m_->dir, j_);                                     \
    int count_;                                                                                   \
    MPI_Get_count(&(status), recv_type, &count_);                                                 \
    if (!ok_ || count_ != 1) {                                                                    \
      bad++;                                                                                      \
    } else {                                                                                      \
      received[m_->dir]++;                                                                        \
      it_sum[m_->dir] += m_->it;                                                                  \
      digest += mt_mix(((uint64_t)m_->src << 40) ^ ((uint64_t)m_->dir << 32) ^ (uint64_t)m_->it); \
    }                                                                                             \
  } while (0)

  /* Sends the stream messages of iteration it (one per direction). */
#define SEND_ITER(it_)                                                                    \
  do {                                                                                    \
    for (int dir_ = 0; dir_ < 2; dir_++) {                                                \
      int s_ = free_slot(&sp);                                                            \
      if (s_ < 0) {                                                                       \
        MPI_Status st_;                                                                   \
        MPI_Waitany(sp.n, sp.rq, &s_, &st_);                                              \
        waitany_send++;                                                                   \
      }                                                                                   \
      struct sendbuf *b_ = &sbuf[s_];                                                     \
      b_->m.src = me;                                                                     \
      b_->m.it = (int)(it_);                                                              \
      b_->m.dir = dir_;                                                                   \
      b_->m.check = (int)(mt_mix((uint64_t)me * 65536 + (uint64_t)(it_)) & 0xffff);       \
      for (int j_ = 0; j_ < NV * MSTRIDE; j_++)                                           \
        b_->matrix[j_] = -1.0;                                                            \
      for (int j_ = 0; j_ < NV; j_++)                                                     \
        b_->matrix[j_ * MSTRIDE] = value(me, (it_), dir_, j_);                            \
      MPI_Issend(b_, 1, send_type, dir_ == 0 ? right : left, tag_of((it_), dir_), stream, \
                 &sp.rq[s_]);                                                             \
      sent++;                                                                             \
    }                                                                                     \
  } while (0)

  for (long it = 0; it < depth && it < iters; it++)
    SEND_ITER(it);

  double acc = 0;
  for (long it = 0; it < iters; it++) {
    /* two wildcard receives */
    for (int k = 0; k < 2; k++) {
      int s = free_slot(&rp);
      if (s < 0) {
        MPI_Status st;
        MPI_Waitany(rp.n, rp.rq, &s, &st);
        waitany_recv++;
        TAKE(s, st);
      }
      MPI_Irecv(&rbuf[s], 1, recv_type, MPI_ANY_SOURCE, MPI_ANY_TAG, stream, &rp.rq[s]);
    }
    if (it + depth < iters)
      SEND_ITER(it + depth);

    /* computation while all of it is in flight */
    for (long w = 0; w < work; w++) {
      double *f = &field[w & 4095];
      *f = *f * 0.999 + 0.001 * (double)(w & 7);
      acc += *f;
    }

    int n = 0;
    MPI_Testsome(rp.n, rp.rq, &n, idx, sts);
    for (int k = 0; k < n; k++)
      TAKE(idx[k], sts[k]);
    MPI_Testsome(sp.n, sp.rq, &n, idx, MPI_STATUSES_IGNORE);

    if (it % PROBE_EVERY == PROBE_EVERY - 1) {
      int len = 1 + (int)((it * 13 + me * 5) % (PROBE_MAX / 2));
      int src_buf[PROBE_MAX], got[PROBE_MAX];
      for (int j = 0; j < 2 * len && j < PROBE_MAX; j++)
        src_buf[j] = (j % 2) ? -1 : (int)(it * 3 + me + j);
      MPI_Datatype every_other;
      MPI_Type_vector(len, 1, 2, MPI_INT, &every_other);
      MPI_Type_commit(&every_other);
      MPI_Request r;
      MPI_Isend(src_buf, 1, every_other, right, PROBE_TAG, MPI_COMM_WORLD, &r);
      MPI_Status st;
      MPI_Probe(MPI_ANY_SOURCE, PROBE_TAG, MPI_COMM_WORLD, &st);
      int count = -1;
      MPI_Get_count(&st, MPI_INT, &count);
      int expect_len = 1 + (int)((it * 13 + left * 5) % (PROBE_MAX / 2));
      int ok = st.MPI_SOURCE == left && count == expect_len;
      if (count > 0 && count <= PROBE_MAX) {
        MPI_Recv(got, count, MPI_INT, st.MPI_SOURCE, PROBE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int j = 0; ok && j < count; j++)
          ok = got[j] == (int)(it * 3 + left + 2 * j);
      } else {
        ok = 0;
      }
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Type_free(&every_other);
      probes++;
      if (!ok)
        probe_bad++;
      probe_digest += mt_mix((uint64_t)it * 1024 + (uint64_t)count);
    }
  }

  /* the rest of the receives, and every send */
  for (;;) {
    int n = 0;
    MPI_Waitsome(rp.n, rp.rq, &n, idx, sts);
    if (n == MPI_UNDEFINED)
      break;
    for (int k = 0; k < n; k++)
      TAKE(idx[k], sts[k]);
  }
  MPI_Waitall(sp.n, sp.rq, MPI_STATUSES_IGNORE);
  MPI_Barrier(stream);

  long long expect_sum = (long long)iters * (iters - 1) / 2;
  mt_log("parameters: ranks %d, iterations %ld, work %ld, depth %d", np, iters, work, depth);
  mt_log("stream digest %016llx, probe digest %016llx, computation %.6e",
         (unsigned long long)digest, (unsigned long long)probe_digest, acc);
  mt_check_int("stream messages sent", sent, 2 * iters);
  mt_check_int("received from the left", received[0], iters);
  mt_check_int("received from the right", received[1], iters);
  mt_check_int("iteration sum from the left", it_sum[0], expect_sum);
  mt_check_int("iteration sum from the right", it_sum[1], expect_sum);
  mt_check_int("messages with a wrong source, tag, length or payload", bad, 0);
  mt_check_int("probe exchanges", probes, iters / PROBE_EVERY);
  mt_check_int("probe exchanges with a wrong source, length or payload", probe_bad, 0);

  int status = mt_report();
  double elapsed = MPI_Wtime() - t_start;
  /* timing-dependent figures go to stderr only */
  if (me == 0)
    fprintf(
        stderr,
        "inflight_p2p: %ld iterations in %.3f s (rank 0: %ld Waitany on receives, %ld on sends)\n",
        iters, elapsed, waitany_recv, waitany_send);
  MPI_Type_free(&send_type);
  MPI_Type_free(&recv_type);
  MPI_Comm_free(&stream);
  free(rp.rq);
  free(sp.rq);
  free(rbuf);
  free(sbuf);
  free(idx);
  free(sts);
  free(field);
  MPI_Finalize();
  return status;
}
