/*
 * libc_locks.c - threads that spend nearly all their time inside the C library's allocator,
 * where it holds an arena lock.  A rank checkpointed while a thread was inside malloc kept that
 * lock in its image; after a restart the main thread rebuilds MPI's objects before any other
 * thread goes on, and that allocates: a restart that found the lock held hung there for good.
 *
 *   usage: libc_locks [ROUNDS [OPS]]   default 200 rounds of 20000 operations
 *
 * Each round: a worker thread and the main thread each allocate and free OPS blocks of 2 KiB
 * to 64 KiB (too large for glibc's per-thread cache, so every call takes its arena's lock),
 * keeping 64 alive and folding their contents into a checksum; then the main thread joins the
 * worker and the ranks MPI_Allreduce the checksums.  Output depends only on the arguments and
 * the rank count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"
#include <pthread.h>

enum { LIVE = 64 };

static uint64_t churn(uint64_t seed, long ops)
{
  char *live[LIVE] = {0};
  uint64_t sum = seed, x = seed * 2862933555777941757ULL + 3037000493ULL;
  for (long i = 0; i < ops; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    unsigned k = (unsigned)(x >> 58); /* 0..63 */
    size_t size = 2048 + (size_t)((x >> 20) % (62 * 1024));
    if (live[k]) {
      sum = mt_mix(sum ^ (uint64_t)(unsigned char)live[k][1] ^ (uint64_t)live[k][0]);
      free(live[k]);
    }
    live[k] = malloc(size);
    if (!live[k])
      mt_die("malloc failed");
    live[k][0] = (char)(i & 0x7f);
    live[k][1] = (char)(k + 1);
  }
  for (int k = 0; k < LIVE; k++)
    free(live[k]);
  return sum;
}

struct job {
  uint64_t seed;
  long ops;
};

static void *worker(void *arg)
{
  struct job *j = arg;
  j->seed = churn(j->seed, j->ops);
  return NULL;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("libc_locks");
  const long rounds = mt_arg("libc_locks", argc, argv, 1, 200);
  const long ops = mt_arg("libc_locks", argc, argv, 2, 20000);
  uint64_t digest = 1469598103934665603ULL;
  for (long r = 0; r < rounds; r++) {
    struct job j = {(uint64_t)r * 31 + (uint64_t)mt_.rank + 1, ops};
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &j) != 0)
      mt_die("pthread_create failed");
    uint64_t mine = churn((uint64_t)r + 7, ops);
    pthread_join(t, NULL);
    mine ^= j.seed;
    uint64_t sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    digest = mt_mix(digest ^ sum);
  }
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&digest, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&digest, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  mt_check(lo == hi, "every rank computed the same digest");
  mt_log("rounds %ld of %ld operations, digest %016llx", rounds, ops, (unsigned long long)digest);
  return mt_end();
}
