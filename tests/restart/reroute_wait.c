/*
 * reroute_wait.c - a rank restarted while it waits in a blocking call on a communicator that
 * returns errors.  mana completes such a wait with MPI_COMM_WORLD set to return errors and
 * hands the error to the communicator's own handler (wrappers/comm_errhandler.c); a restart
 * must keep that arrangement for the thread still waiting: the error that ends its wait after
 * the restart must come back as a return code, not abort the job through MPI_COMM_WORLD's
 * handler.
 *
 * Rank 1 calls MPI_Sendrecv on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN: it sends
 * a token to rank 0 and waits for 2 ints.  Rank 0 receives the token (so rank 1 is inside its
 * Sendrecv), asks for a checkpoint under mana (mana_test_checkpoint_now, found with dlsym;
 * natively there is none), and parks at its next collective entry (MPI_Barrier on
 * MPI_COMM_SELF) while rank 1 still waits.  After the restart rank 0 sends 8 ints: rank 1's
 * receive must return MPI_ERR_TRUNCATE.  Under mana, rank 1 also checks that its wait was the
 * one the restart picked up (else the test did not test what it claims: exit 4).
 * Ranks: 2.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) {
    if (me == 0)
      printf("reroute_wait: needs 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  void (*checkpoint_now)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mana_test_checkpoint_now");
  int (*rerouted)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mana_test_rerouted_at_restart");
  int status = 0;
  if (me == 0) {
    int token = 0, big[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    MPI_Recv(&token, 1, MPI_INT, 1, 9, c, MPI_STATUS_IGNORE);
    if (checkpoint_now)
      checkpoint_now();
    MPI_Barrier(MPI_COMM_SELF);
    MPI_Send(big, 8, MPI_INT, 1, 1, c);
  } else {
    int token = 42, small[2] = {0, 0}, cls = -1;
    MPI_Status st;
    int rc = MPI_Sendrecv(&token, 1, MPI_INT, 0, 9, small, 2, MPI_INT, 0, 1, c, &st);
    MPI_Error_class(rc, &cls);
    printf("rank 1: the receive returned %s\n", cls == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE"
                                                : rc == MPI_SUCCESS     ? "success"
                                                                        : "another error");
    fflush(stdout);
    if (rerouted && rerouted() != 1) {
      fprintf(stderr, "reroute_wait: under mana, rank 1 was not restarted inside its wait (%d)\n",
              rerouted());
      status = 4;
    }
  }
  MPI_Comm_free(&c);
  MPI_Finalize();
  return status;
}
