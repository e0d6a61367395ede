/*
 * std4_partitioned.c - partitioned point-to-point communication: MPI_Psend_init and
 * MPI_Precv_init, MPI_Start, MPI_Pready (and MPI_Pready_range, MPI_Pready_list), MPI_Parrived,
 * completion with MPI_Test/MPI_Wait, from one thread and from several threads.
 *
 * Source: MPI-4.1, chapter 5 (Partitioned Point-to-Point Communication):
 *   section 5.2 "Semantics of Partitioned Point-to-Point Communication", its example (simple
 *     partitioned communication: 8 partitions of 5 doubles on both sides, the sender marks
 *     each partition ready after filling it, both sides complete with an MPI_Test loop);
 *   section 5.2.1, the definitions of MPI_Pready_range and MPI_Pready_list (no example
 *     there): the simple example's partitions are also marked ready with them;
 *   section 5.3.1, its example (equal partitioning on both sides, 8 partitions of a
 *     contiguous type of 16 doubles, MPI_Pready from the threads of an OpenMP parallel for);
 *   section 5.3.2, its example (64 send partitions produced by tasks in any order, received
 *     as a single partition of 64*16 MPI_DOUBLE);
 *   section 5.3.3, its example (64 send partitions of 16 doubles received as 128 partitions
 *     of 8 doubles; each receiving thread polls two partitions j and j+1 with MPI_Parrived
 *     and uses each one's data as it arrives, then MPI_Test completes the request).
 * The HTML edition shows these examples as images; their code was read from a Markdown
 * rendering of the same standard text.
 * Adaptations: the examples use OpenMP with MPI_THREAD_MULTIPLE; here POSIX threads, NT = 4
 * of them instead of 8 or 64 (two cores): in 5.3.1 thread t marks partitions t, t+NT, ...;
 * in 5.3.2 the threads take the "tasks" (partition numbers) from a shared counter, so the
 * partitions are filled and marked ready in any order; in 5.3.3 the sender's threads as in
 * 5.3.1 and the receiver's thread t polls the pairs j = 2t, 2t+2NT, ...  If MPI_Init_thread
 * does not provide MPI_THREAD_MULTIPLE, the threads' work is done by loops in the main thread
 * (the check of the provided level then fails).  What the standard leaves out is filled in:
 * "compute and fill partition #i" writes values derived from the round, the partition and the
 * element, which the receiver checks ("do work using partition j data"); "useful work" is
 * nothing.  Left out (Debian's MPICH 4.0.2 gets them wrong): MPI_Parrived on MPI_REQUEST_NULL
 * and on an inactive partitioned request, which 5.2.2 defines to return flag = true (MPICH
 * crashes on the first and fails the second with "Invalid or inactive partitioned receive
 * request").  Each request is started ROUNDS times (the examples start it once), with an
 * MPI_Allreduce on MPI_COMM_WORLD between rounds.  Sender and receiver are the pairs (0,1),
 * (2,3), ... (an odd last rank only joins the allreduces).
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"
#include <pthread.h>
#include <sched.h>

#define ROUNDS 4
#define NT 4

static int threaded;

static double value(int ex, int round, int elem)
{
  return ex * 100000.0 + round * 10000.0 + elem;
}

/* Run fn(arg_t) for t = 0..NT-1 on NT threads, or in turn when not threaded. */
struct job {
  int t;
  void *shared;
};
static void run_threads(void *(*fn)(void *), void *shared)
{
  struct job jobs[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    jobs[t].t = t;
    jobs[t].shared = shared;
  }
  if (!threaded) {
    for (int t = 0; t < NT; t++)
      fn(&jobs[t]);
    return;
  }
  for (int t = 0; t < NT; t++)
    if (pthread_create(&th[t], NULL, fn, &jobs[t]) != 0)
      mt_die("pthread_create failed");
  for (int t = 0; t < NT; t++)
    pthread_join(th[t], NULL);
}

/* ---- 5.2 simple example ---- */
#define PARTITIONS 8
#define COUNT 5

static int simple_example(int sender, int peer, int round)
{
  static double message[PARTITIONS * COUNT];
  static MPI_Request request = MPI_REQUEST_NULL;
  MPI_Count partitions = PARTITIONS;
  int tag = 1, flag = 0, bad = 0;
  if (round == 0) {
    if (sender)
      MPI_Psend_init(message, (int)partitions, COUNT, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &request);
    else
      MPI_Precv_init(message, (int)partitions, COUNT, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &request);
  }
  if (!sender)
    for (int k = 0; k < PARTITIONS * COUNT; k++)
      message[k] = -1.0;
  MPI_Start(&request);
  if (sender) {
    if (round % 3 == 0) {
      for (int i = 0; i < partitions; ++i) {
        /* compute and fill partition #i, then mark ready: */
        for (int k = 0; k < COUNT; k++)
          message[i * COUNT + k] = value(1, round, i * COUNT + k);
        MPI_Pready(i, request);
      }
    } else if (round % 3 == 1) {
      for (int k = 0; k < PARTITIONS * COUNT; k++)
        message[k] = value(1, round, k);
      MPI_Pready_range(0, PARTITIONS / 2 - 1, request);
      MPI_Pready_range(PARTITIONS / 2, PARTITIONS - 1, request);
    } else {
      int list[PARTITIONS];
      for (int i = 0; i < PARTITIONS; i++) {
        list[i] = PARTITIONS - 1 - i;
        for (int k = 0; k < COUNT; k++)
          message[list[i] * COUNT + k] = value(1, round, list[i] * COUNT + k);
      }
      MPI_Pready_list(PARTITIONS, list, request);
    }
  }
  while (!flag) {
    /* do useful work #1 */
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    /* do useful work #2 */
  }
  if (!sender)
    for (int k = 0; k < PARTITIONS * COUNT; k++)
      bad += message[k] != value(1, round, k);
  if (round == ROUNDS - 1)
    MPI_Request_free(&request);
  return bad;
}

/* ---- 5.3.1 threads, equal partitioning ---- */
#define PARTITIONS_B 8
#define PARTLENGTH 16

struct shared_b {
  double *message;
  MPI_Request request;
  int round;
};

static void *fill_b(void *arg)
{
  struct job *j = arg;
  struct shared_b *s = j->shared;
  for (int i = j->t; i < PARTITIONS_B; i += NT) {
    /* compute and fill partition #i, then mark ready: */
    for (int k = 0; k < PARTLENGTH; k++)
      s->message[i * PARTLENGTH + k] = value(2, s->round, i * PARTLENGTH + k);
    MPI_Pready(i, s->request);
  }
  return NULL;
}

static int threads_example(int sender, int peer, int round, MPI_Datatype xfer_type)
{
  static double message[PARTITIONS_B * PARTLENGTH];
  static MPI_Request request = MPI_REQUEST_NULL;
  int partitions = PARTITIONS_B, count = 1, tag = 2, flag = 0, bad = 0;
  MPI_Info info = MPI_INFO_NULL;
  if (round == 0) {
    if (sender)
      MPI_Psend_init(message, partitions, count, xfer_type, peer, tag, MPI_COMM_WORLD, info,
                     &request);
    else
      MPI_Precv_init(message, partitions, count, xfer_type, peer, tag, MPI_COMM_WORLD, info,
                     &request);
  }
  if (!sender)
    for (int k = 0; k < PARTITIONS_B * PARTLENGTH; k++)
      message[k] = -1.0;
  MPI_Start(&request);
  if (sender) {
    struct shared_b s = {message, request, round};
    run_threads(fill_b, &s);
  }
  while (!flag) {
    /* Do useful work */
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    /* Do useful work */
  }
  if (!sender)
    for (int k = 0; k < PARTITIONS_B * PARTLENGTH; k++)
      bad += message[k] != value(2, round, k);
  if (round == ROUNDS - 1)
    MPI_Request_free(&request);
  return bad;
}

/* ---- 5.3.2 tasks, send-side partitioning only ---- */
#define NUM_TASKS 64
#define PARTITIONS_C NUM_TASKS
#define MESSAGE_LENGTH_C (PARTITIONS_C * PARTLENGTH)

struct shared_c {
  double *message;
  MPI_Request request;
  int round;
  int next; /* the next task to take, under lock */
  pthread_mutex_t lock;
};

static void *task_c(void *arg)
{
  struct job *j = arg;
  struct shared_c *s = j->shared;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    int partition_num = s->next < NUM_TASKS ? s->next++ : -1;
    pthread_mutex_unlock(&s->lock);
    if (partition_num < 0)
      break;
    /* compute and fill partition #partition_num, then mark ready: */
    /* buffer is filled in arbitrary order from each task */
    for (int k = 0; k < PARTLENGTH; k++)
      s->message[partition_num * PARTLENGTH + k] =
          value(3, s->round, partition_num * PARTLENGTH + k);
    MPI_Pready(partition_num, s->request);
  }
  return NULL;
}

static int tasks_example(int sender, int peer, int round, MPI_Datatype send_type)
{
  static double message[MESSAGE_LENGTH_C];
  static MPI_Request request = MPI_REQUEST_NULL;
  int send_partitions = PARTITIONS_C, recv_partitions = 1,
      recv_partlength = PARTITIONS_C * PARTLENGTH;
  int count = 1, tag = 3, flag = 0, bad = 0;
  MPI_Info info = MPI_INFO_NULL;
  if (round == 0) {
    if (sender)
      MPI_Psend_init(message, send_partitions, count, send_type, peer, tag, MPI_COMM_WORLD, info,
                     &request);
    else
      MPI_Precv_init(message, recv_partitions, recv_partlength, MPI_DOUBLE, peer, tag,
                     MPI_COMM_WORLD, info, &request);
  }
  if (!sender)
    for (int k = 0; k < MESSAGE_LENGTH_C; k++)
      message[k] = -1.0;
  MPI_Start(&request);
  if (sender) {
    struct shared_c s;
    s.message = message;
    s.request = request;
    s.round = round;
    s.next = 0;
    pthread_mutex_init(&s.lock, NULL);
    run_threads(task_c, &s);
    pthread_mutex_destroy(&s.lock);
  }
  while (!flag) {
    /* Do useful work */
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    /* Do useful work */
  }
  if (!sender)
    for (int k = 0; k < MESSAGE_LENGTH_C; k++)
      bad += message[k] != value(3, round, k);
  if (round == ROUNDS - 1)
    MPI_Request_free(&request);
  return bad;
}

/* ---- 5.3.3 send and receive partitioning, MPI_Parrived ---- */
#define PARTITIONS_D 64
#define MESSAGE_LENGTH_D (PARTITIONS_D * PARTLENGTH)

struct shared_d {
  double *message;
  MPI_Request request;
  int round;
  int recv_partitions, recv_partlength;
  int bad[NT];
};

static void *fill_d(void *arg)
{
  struct job *j = arg;
  struct shared_d *s = j->shared;
  for (int i = j->t; i < PARTITIONS_D; i += NT) {
    /* compute and fill partition #i, then mark ready: */
    for (int k = 0; k < PARTLENGTH; k++)
      s->message[i * PARTLENGTH + k] = value(4, s->round, i * PARTLENGTH + k);
    MPI_Pready(i, s->request);
  }
  return NULL;
}

/* "Do work using partition p data": check it */
static int use_partition(struct shared_d *s, int p)
{
  int bad = 0;
  for (int k = 0; k < s->recv_partlength; k++) {
    int e = p * s->recv_partlength + k;
    bad += s->message[e] != value(4, s->round, e);
  }
  return bad;
}

static void *poll_d(void *arg)
{
  struct job *jb = arg;
  struct shared_d *s = jb->shared;
  for (int j = 2 * jb->t; j < s->recv_partitions; j += 2 * NT) {
    int part_flag = 0;
    int part1_complete = 0;
    int part2_complete = 0;
    while (part1_complete == 0 || part2_complete == 0) {
      /* test partition #j and #j+1 */
      MPI_Parrived(s->request, j, &part_flag);
      if (part_flag && part1_complete == 0) {
        part1_complete++;
        /* Do work using partition j data */
        s->bad[jb->t] += use_partition(s, j);
      }
      MPI_Parrived(s->request, j + 1, &part_flag);
      if (part_flag && part2_complete == 0) {
        part2_complete++;
        /* Do work using partition j+1 */
        s->bad[jb->t] += use_partition(s, j + 1);
      }
      if (part1_complete == 0 || part2_complete == 0)
        sched_yield();
    }
  }
  return NULL;
}

static int parrived_example(int sender, int peer, int round, MPI_Datatype send_type)
{
  static double message[MESSAGE_LENGTH_D];
  static MPI_Request request = MPI_REQUEST_NULL;
  int send_partitions = PARTITIONS_D, recv_partitions = PARTITIONS_D * 2,
      recv_partlength = PARTLENGTH / 2;
  int tag = 4, flag = 0, bad = 0;
  MPI_Info info = MPI_INFO_NULL;
  if (round == 0) {
    if (sender)
      MPI_Psend_init(message, send_partitions, 1, send_type, peer, tag, MPI_COMM_WORLD, info,
                     &request);
    else
      MPI_Precv_init(message, recv_partitions, recv_partlength, MPI_DOUBLE, peer, tag,
                     MPI_COMM_WORLD, info, &request);
  }
  if (!sender)
    for (int k = 0; k < MESSAGE_LENGTH_D; k++)
      message[k] = -1.0;
  MPI_Start(&request);
  struct shared_d s;
  memset(&s, 0, sizeof s);
  s.message = message;
  s.request = request;
  s.round = round;
  s.recv_partitions = recv_partitions;
  s.recv_partlength = recv_partlength;
  if (sender)
    run_threads(fill_d, &s);
  else
    run_threads(poll_d, &s);
  while (!flag) {
    /* Do useful work */
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    /* Do useful work */
  }
  if (!sender) {
    for (int t = 0; t < NT; t++)
      bad += s.bad[t];
    /* the whole buffer once more, after completion */
    for (int k = 0; k < MESSAGE_LENGTH_D; k++)
      bad += message[k] != value(4, round, k);
  }
  if (round == ROUNDS - 1)
    MPI_Request_free(&request);
  return bad;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("std4_partitioned");
  int rank = mt_.rank, size = mt_.size;
  mt_check(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided MPI_THREAD_MULTIPLE");
  threaded = provided == MPI_THREAD_MULTIPLE;
  int sender = rank % 2 == 0;
  int peer = sender ? rank + 1 : rank - 1;
  int active = peer < size;

  MPI_Datatype xfer_type;
  MPI_Type_contiguous(PARTLENGTH, MPI_DOUBLE, &xfer_type);
  MPI_Type_commit(&xfer_type);

  const char *names[4] = {"5.2 simple example (Pready, Pready_range, Pready_list)",
                          "5.3.1 threads, equal partitioning",
                          "5.3.2 tasks, 64 send partitions into one receive partition",
                          "5.3.3 64 send / 128 receive partitions with MPI_Parrived"};
  for (int ex = 0; ex < 4; ex++) {
    int bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
      if (active) {
        switch (ex) {
        case 0:
          bad += simple_example(sender, peer, round);
          break;
        case 1:
          bad += threads_example(sender, peer, round, xfer_type);
          break;
        case 2:
          bad += tasks_example(sender, peer, round, xfer_type);
          break;
        default:
          bad += parrived_example(sender, peer, round, xfer_type);
        }
      }
      int v = bad, sum = 0;
      MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      bad = sum > 0 ? (rank == 0 ? sum : 0) : 0;
    }
    if (rank == 0) {
      char what[160];
      snprintf(what, sizeof what, "%s: wrong elements over %d rounds", names[ex], ROUNDS);
      mt_check_int(what, bad, 0);
    }
  }
  MPI_Type_free(&xfer_type);
  mt_allreduce_steps(4);
  return mt_end();
}
