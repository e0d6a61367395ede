/*
 * mt_group_standin.c - threads that get MPI_COMM_WORLD's group again and again while another
 * thread's call uses the handle the program got first, under MPI_THREAD_MULTIPLE (as MPICH's
 * threads/comm/comm_create_group_threads2).  MPICH hands out the same group object each time,
 * so all these handles share one slot in the stub.  After a restart that slot is a stand-in
 * group until the program asks for the communicator's group again, when it takes MPI's own
 * object: the stand-in was freed there while another thread was passing it to
 * MPI_Comm_create_group ("Unable to allocate -546199232 bytes of memory for mapping").
 * Expected: every thread's communicators have the world's size.
 * Ranks: 2.
 */
#include <pthread.h>

#include "mpitest.h"

#define THREADS 3
#define ITERATIONS 40

static MPI_Group world_group;
static int sizes_ok[THREADS];

static void *work(void *arg)
{
  int tag = (int)(long)arg, range[1][3] = {{0, 0, 1}}, world_size;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  for (int i = 0; i < ITERATIONS; i++) {
    MPI_Group again, first;
    MPI_Comm_group(MPI_COMM_WORLD, &again);
    MPI_Group_range_incl(again, 1, range, &first);
    MPI_Group_free(&first);
    MPI_Group_free(&again);
    MPI_Comm c;
    MPI_Comm_create_group(MPI_COMM_WORLD, world_group, tag, &c);
    int n = 0;
    MPI_Comm_size(c, &n);
    sizes_ok[tag] += n == world_size;
    MPI_Barrier(c);
    MPI_Comm_free(&c);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_begin("mt_group_standin");
  mt_check_int("thread level", provided, MPI_THREAD_MULTIPLE);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  MPI_Group_free(&world_group);
  mt_check_ints("communicators of the world's size, per thread", sizes_ok,
                (int[THREADS]){ITERATIONS, ITERATIONS, ITERATIONS}, THREADS);
  return mt_end();
}
