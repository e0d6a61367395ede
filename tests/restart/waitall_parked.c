/*
 * waitall_parked.c - a rank checkpointed inside MPI_Waitall while some of its requests are
 * already complete, one of them a request MPI made complete (MPICH 4 returns a built-in
 * "complete" handle for an eager send that left at once; mana passes such handles through
 * without a slot).  MPI_Waitall must return with every handle MPI_REQUEST_NULL, as natively.
 *
 * Rank 0 sends a small message (eager: complete at once) and a large one (waits for rank 1's
 * receive), posts a receive from rank 1, asks for a checkpoint under mana
 * (mana_test_checkpoint_now, found with dlsym; natively there is none) and enters
 * MPI_Waitall, which parks with the small send done.  Rank 1 takes the small message, parks
 * at its next collective entry (MPI_Barrier on MPI_COMM_SELF), then after the restart takes
 * the large one and answers 7 * 6 + 1 if both arrived intact.  Rank 0 alone prints: which
 * handles are still non-null, and the answer.  Ranks: 2.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { LARGE = 1 << 18 }; /* ints: 1 MiB, past any eager limit */

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) {
    if (me == 0)
      printf("waitall_parked: needs 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  void (*checkpoint_now)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mana_test_checkpoint_now");
  int *large = malloc(LARGE * sizeof(int));
  if (!large)
    MPI_Abort(MPI_COMM_WORLD, 3);
  int status = 0;
  if (me == 0) {
    int small = 7, answer = 0;
    for (int i = 0; i < LARGE; i++)
      large[i] = i ^ 0x5a5a;
    MPI_Request reqs[3];
    MPI_Isend(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(large, LARGE, MPI_INT, 1, 2, MPI_COMM_WORLD, &reqs[1]);
    MPI_Irecv(&answer, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &reqs[2]);
    if (checkpoint_now)
      checkpoint_now();
    MPI_Status sts[3];
    MPI_Waitall(3, reqs, sts);
    int left = 0;
    for (int i = 0; i < 3; i++)
      if (reqs[i] != MPI_REQUEST_NULL) {
        printf("rank 0: request %d is not MPI_REQUEST_NULL after MPI_Waitall\n", i);
        left++;
      }
    printf("rank 0: %d handles left non-null, answer %d\n", left, answer);
    status = left ? 1 : 0;
  } else {
    int small = 0;
    long sum = 0, want = 0;
    MPI_Recv(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_SELF);
    MPI_Recv(large, LARGE, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < LARGE; i++) {
      sum += large[i];
      want += i ^ 0x5a5a;
    }
    int answer = small * 6 + (sum == want);
    MPI_Send(&answer, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
  }
  fflush(stdout);
  free(large);
  MPI_Finalize();
  return status;
}
