/*
 * gdb_frames.c - a known call chain on every rank and in a second thread, for a debugger to
 * show: rank 0 receives in frames_receive, called by frames_outer, called by main; the last
 * rank waits in frames_await (then sends to rank 0); the ranks between just pass; on every
 * rank a worker waits on a condition variable in frames_worker.  Then every rank calls
 * frames_released, for a breakpoint.
 *
 * Under mana the application is the upper half, which gdb alone does not see: its frames
 * print as "??" (tests/integration/gdb_upper.sh compares, with mana_gdb, the chains gdb shows
 * under mana with those it shows natively, also after a restart and from a core file).
 *
 * With GDB_FRAMES_GO=FILE each rank says on stderr, once its worker waits,
 *   gdb_frames: rank R pid P waiting
 * and goes on only once FILE exists; without it, it goes straight on.  Checks: the value
 * received, and the worker ends with what main gave it.
 * Ranks: any (2 or more to send).  Arguments: none.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "mpitest.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int worker_waits, given, taken;

static __attribute__((noinline)) void *frames_worker(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&lock);
  worker_waits = 1;
  pthread_cond_broadcast(&cond);
  while (!given)
    pthread_cond_wait(&cond, &lock);
  taken = given;
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void say_waiting(int rank)
{
  const char *go = getenv("GDB_FRAMES_GO");
  if (!go)
    return;
  fprintf(stderr, "gdb_frames: rank %d pid %d waiting\n", rank, (int)getpid());
  fflush(stderr);
}

static __attribute__((noinline)) int frames_receive(int rank, int from)
{
  int v = -1;
  say_waiting(rank);
  MPI_Recv(&v, 1, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return v;
}

static __attribute__((noinline)) void frames_await(int rank)
{
  const char *go = getenv("GDB_FRAMES_GO");
  say_waiting(rank);
  while (go && access(go, F_OK) != 0)
    mt_pause_ms(1);
  int v = 1000 + rank;
  MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
}

/* Where a debugger's breakpoint stops every rank once it goes on. */
static __attribute__((noinline)) void frames_released(int rank)
{
  __asm__ volatile("" ::"r"(rank) : "memory");
}

static __attribute__((noinline)) int frames_outer(int rank, int size)
{
  if (size > 1 && rank == 0)
    return frames_receive(rank, size - 1);
  if (size > 1 && rank == size - 1)
    frames_await(rank);
  else
    say_waiting(rank);
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("gdb_frames");
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  pthread_t worker;
  if (pthread_create(&worker, NULL, frames_worker, NULL) != 0)
    mt_die("pthread_create failed");
  pthread_mutex_lock(&lock);
  while (!worker_waits)
    pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);

  int got = frames_outer(rank, size);
  frames_released(rank);
  if (rank == 0 && size > 1)
    mt_check_int("the value the last rank sent", got, 1000 + size - 1);

  pthread_mutex_lock(&lock);
  given = 42 + rank;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  pthread_join(worker, NULL);
  mt_check_int("what the worker took", taken, 42 + rank);
  MPI_Barrier(MPI_COMM_WORLD);
  return mt_end();
}
