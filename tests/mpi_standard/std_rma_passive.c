/*
 * std_rma_passive.c - one-sided communication with passive target synchronization: locks,
 * lock_all epochs with flush and sync, atomic accumulate, get_accumulate and
 * compare-and-swap, and request-based RMA.
 *
 * Source: MPI-3.1, chapter 11 (One-Sided Communications):
 *   section 11.5.3 "Lock", its example: L1 MPI_Win_lock(MPI_LOCK_EXCLUSIVE) / MPI_Put /
 *     MPI_Win_unlock;
 *   section 11.8 "Examples", the sixth to the eighth and the tenth example: L2 the naive
 *     counting semaphore (X initialised by process A, MPI_Win_sync, MPI_Barrier, every
 *     process MPI_Accumulate(X, MPI_SUM, -1), then polls X with MPI_Get_accumulate(MPI_NO_OP)
 *     and MPI_Win_flush until it is 0); L3 Peterson's algorithm for a critical region
 *     between two processes (flags X at A and Y at B, turn T at A, MPI_Accumulate with
 *     MPI_REPLACE, MPI_Get_accumulate with MPI_NO_OP, MPI_Win_flush_all / MPI_Win_flush);
 *     L4 a critical region between all processes with MPI_Compare_and_swap on a lock word at
 *     A; L5 request-based operations overlapping communication and computation with M
 *     buffers (the standard's MPI_Win_allocate, MPI_Win_lock_all, MPI_Rget + MPI_Wait, compute, MPI_Rput,
 *     MPI_Waitany for a free buffer, MPI_Waitall, MPI_Win_unlock_all).
 *   The ninth example (shared memory windows with load/store) is left out.
 * Adaptations: process A is rank 0 and B rank 1; the semaphore starts at the number of
 * processes (2 in the standard, which has two); L3 and L4 loop, and the critical regions
 * increment a counter at rank 0 (read with MPI_Get_accumulate(MPI_NO_OP), written with
 * MPI_Accumulate(MPI_REPLACE)), so that a broken mutual exclusion loses increments; in L3
 * the flags are raised again each round; in L5 each process fetches from the next rank,
 * adds 1 and writes back.  The number of polling calls varies from run to run; only the
 * results are printed.  Every window is MPI_Win_create over MPI_Alloc_mem memory, not
 * MPI_Win_allocate as in L5: with Debian's MPICH 4.0.2 (ch4:ucx) the operations of rank 0 on
 * a window from MPI_Win_allocate at rank 1 read and write rank 0's own memory (natively,
 * without mana; a put under an exclusive lock as well as accumulates under lock_all), which
 * made L1 fail and Peterson's algorithm (L3) hang.
 * Ranks: 2 or more (L3 uses ranks 0 and 1 only).
 */
#include "../programs/mpitest.h"

#define ROUNDS 4
#define K 5
#define NSTEPS 8
#define MB 3
#define NN 4

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_rma_passive");
  int rank = mt_.rank, size = mt_.size;
  MPI_Comm comm = MPI_COMM_WORLD;
  const int A = 0, B = 1;

  /* L1: exclusive lock, put, unlock: every rank writes its slot in the next rank's window */
  {
    int *base;
    MPI_Win win;
    MPI_Alloc_mem(sizeof(int) * (MPI_Aint)size, MPI_INFO_NULL, &base);
    MPI_Win_create(base, sizeof(int) * (MPI_Aint)size, sizeof(int), MPI_INFO_NULL, comm, &win);
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
      for (int i = 0; i < size; i++)
        base[i] = -1;
      MPI_Win_unlock(rank, win);
      MPI_Barrier(comm);
      int v = rank * 100 + r, target = (rank + 1) % size;
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
      MPI_Put(&v, 1, MPI_INT, target, rank, 1, MPI_INT, win);
      MPI_Win_unlock(target, win);
      MPI_Barrier(comm);
      MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
      int from = (rank + size - 1) % size;
      for (int i = 0; i < size; i++)
        bad += base[i] != (i == from ? from * 100 + r : -1);
      MPI_Win_unlock(rank, win);
      MPI_Barrier(comm);
    }
    mt_check_int("L1 lock/put/unlock: wrong slots", bad, 0);
    MPI_Win_free(&win);
    MPI_Free_mem(base);
  }

  /* One window of three ints per process: [0] X/Y (flag or semaphore), [1] T (turn) or lock
   * word, [2] the shared counter. */
  int *w;
  MPI_Win win;
  MPI_Alloc_mem(3 * sizeof(int), MPI_INFO_NULL, &w);
  MPI_Win_create(w, 3 * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win);
  w[0] = w[1] = w[2] = 0;
  MPI_Win_lock_all(0, win);
  MPI_Win_sync(win);
  MPI_Barrier(comm);

  /* L2: counting semaphore at A */
  {
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
      if (rank == A) {
        w[0] = size;
        MPI_Win_sync(win);
      }
      MPI_Barrier(comm);
      int minus = -1, z, dummy = 0;
      MPI_Accumulate(&minus, 1, MPI_INT, A, 0, 1, MPI_INT, MPI_SUM, win);
      do {
        MPI_Get_accumulate(&dummy, 1, MPI_INT, &z, 1, MPI_INT, A, 0, 1, MPI_INT, MPI_NO_OP, win);
        MPI_Win_flush(A, win);
      } while (z != 0);
      bad += z != 0;
      MPI_Barrier(comm);
    }
    mt_check_int("L2 counting semaphore reached 0 every round: failures", bad, 0);
  }

  /* L3: Peterson's algorithm between A and B, protecting the counter at A */
  if (rank == A || rank == B) {
    int one = 1, zero = 0, dummy = 0;
    for (int it = 0; it < K; it++) {
      if (rank == A) {
        /* X = 1 (A's flag, local), T = 1 (B's turn: A waits while B wants and T == 1) */
        MPI_Accumulate(&one, 1, MPI_INT, A, 0, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(A, win);
        MPI_Accumulate(&one, 1, MPI_INT, A, 1, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(A, win);
        int t = 1, y;
        MPI_Get_accumulate(&dummy, 1, MPI_INT, &y, 1, MPI_INT, B, 0, 1, MPI_INT, MPI_NO_OP, win);
        MPI_Win_flush_all(win);
        while (y == 1 && t == 1) {
          MPI_Get_accumulate(&dummy, 1, MPI_INT, &y, 1, MPI_INT, B, 0, 1, MPI_INT, MPI_NO_OP, win);
          MPI_Get_accumulate(&dummy, 1, MPI_INT, &t, 1, MPI_INT, A, 1, 1, MPI_INT, MPI_NO_OP, win);
          MPI_Win_flush_all(win);
        }
      } else {
        /* Y = 1 (B's flag, local), T = 0 (A's turn) */
        MPI_Accumulate(&one, 1, MPI_INT, B, 0, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(B, win);
        MPI_Accumulate(&zero, 1, MPI_INT, A, 1, 1, MPI_INT, MPI_REPLACE, win);
        MPI_Win_flush(A, win);
        int t = 0, x;
        MPI_Get_accumulate(&dummy, 1, MPI_INT, &x, 1, MPI_INT, A, 0, 1, MPI_INT, MPI_NO_OP, win);
        MPI_Win_flush(A, win);
        while (x == 1 && t == 0) {
          MPI_Get_accumulate(&dummy, 1, MPI_INT, &x, 1, MPI_INT, A, 0, 1, MPI_INT, MPI_NO_OP, win);
          MPI_Get_accumulate(&dummy, 1, MPI_INT, &t, 1, MPI_INT, A, 1, 1, MPI_INT, MPI_NO_OP, win);
          MPI_Win_flush(A, win);
        }
      }
      /* critical region: counter at A += 1, non-atomically (read, then write) */
      int c, c1;
      MPI_Get_accumulate(&dummy, 1, MPI_INT, &c, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_NO_OP, win);
      MPI_Win_flush(A, win);
      c1 = c + 1;
      MPI_Accumulate(&c1, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_REPLACE, win);
      MPI_Win_flush(A, win);
      /* leave: own flag = 0 */
      MPI_Accumulate(&zero, 1, MPI_INT, rank, 0, 1, MPI_INT, MPI_REPLACE, win);
      MPI_Win_flush(rank, win);
    }
  }
  MPI_Barrier(comm);
  if (rank == A) {
    int c, dummy = 0;
    MPI_Get_accumulate(&dummy, 1, MPI_INT, &c, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_NO_OP, win);
    MPI_Win_flush(A, win);
    mt_check_int("L3 Peterson: counter after both processes' increments", c, 2 * K);
  }
  MPI_Barrier(comm);

  /* L4: critical region among all processes with compare-and-swap on the lock word at A */
  {
    if (rank == A) {
      w[1] = 0;
      w[2] = 0;
      MPI_Win_sync(win);
    }
    MPI_Barrier(comm);
    int dummy = 0;
    for (int it = 0; it < K; it++) {
      int r = 1, zero = 0, one = 1;
      while (r != 0) {
        MPI_Compare_and_swap(&one, &zero, &r, MPI_INT, A, 1, win);
        MPI_Win_flush(A, win);
      }
      int c, c1;
      MPI_Get_accumulate(&dummy, 1, MPI_INT, &c, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_NO_OP, win);
      MPI_Win_flush(A, win);
      c1 = c + 1;
      MPI_Accumulate(&c1, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_REPLACE, win);
      MPI_Win_flush(A, win);
      MPI_Compare_and_swap(&zero, &one, &r, MPI_INT, A, 1, win);
      MPI_Win_flush(A, win);
    }
    MPI_Barrier(comm);
    if (rank == A) {
      int c;
      MPI_Get_accumulate(&dummy, 1, MPI_INT, &c, 1, MPI_INT, A, 2, 1, MPI_INT, MPI_NO_OP, win);
      MPI_Win_flush(A, win);
      mt_check_int("L4 compare-and-swap mutex: counter", c, K * size);
    }
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Free_mem(w);

  /* L5: request-based RMA with MB buffers */
  {
    int i, j;
    MPI_Win rwin;
    MPI_Request put_req[MB], get_req;
    double *baseptr;
    double data[MB][NN];
    for (int m = 0; m < MB; m++)
      put_req[m] = MPI_REQUEST_NULL;
    MPI_Alloc_mem(NSTEPS * NN * sizeof(double), MPI_INFO_NULL, &baseptr);
    MPI_Win_create(baseptr, NSTEPS * NN * sizeof(double), sizeof(double), MPI_INFO_NULL, comm,
                   &rwin);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, rwin);
    for (int k = 0; k < NSTEPS * NN; k++)
      baseptr[k] = rank * 1000.0 + k;
    MPI_Win_unlock(rank, rwin);
    MPI_Barrier(comm);
    int target = (rank + 1) % size;
    MPI_Win_lock_all(0, rwin);
    for (i = 0; i < NSTEPS; i++) {
      if (i < MB)
        j = i;
      else
        MPI_Waitany(MB, put_req, &j, MPI_STATUS_IGNORE);
      MPI_Rget(data[j], NN, MPI_DOUBLE, target, i * NN, NN, MPI_DOUBLE, rwin, &get_req);
      MPI_Wait(&get_req, MPI_STATUS_IGNORE);
      for (int k = 0; k < NN; k++) /* compute */
        data[j][k] += 0.5;
      MPI_Rput(data[j], NN, MPI_DOUBLE, target, i * NN, NN, MPI_DOUBLE, rwin, &put_req[j]);
    }
    MPI_Status sts[MB];
    MPI_Waitall(MB, put_req, sts);
    MPI_Win_unlock_all(rwin);
    MPI_Barrier(comm);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, rwin);
    int bad = 0;
    for (int k = 0; k < NSTEPS * NN; k++)
      bad += baseptr[k] != rank * 1000.0 + k + 0.5;
    MPI_Win_unlock(rank, rwin);
    mt_check_int("L5 Rget/compute/Rput with Waitany: wrong elements", bad, 0);
    MPI_Win_free(&rwin);
    MPI_Free_mem(baseptr);
  }
  mt_allreduce_steps(4);
  return mt_end();
}
