/*
 * ckpt_session_only.c - a program that uses MPI through sessions alone and never calls
 * MPI_Init (MPI 4.0 example 10.8, MPICH's init/session, session_psets and session_self).
 * It opens a session that asks for MPI_THREAD_MULTIPLE, makes a communicator from the group
 * of "mpi://WORLD" and one from "mpi://SELF", and iterates: a reduction, a ring exchange with
 * non-blocking calls, a message to itself; every ten iterations it opens a new session and
 * closes the old one.  A checkpoint may come at any of its calls; MPI_Initialized must say 0 all along.
 *
 *   usage: ckpt_session_only [ITERS]   default 30
 *
 * Only the session communicator's rank 0 prints; the output depends only on ITERS and the
 * number of processes.  Ranks: 2 or more.  (mpitest.h needs MPI_COMM_WORLD: not used.)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs;

static void check(int ok, const char *what, int iter)
{
  if (!ok) {
    errs++;
    printf("FAIL %s (iteration %d)\n", what, iter);
  }
}

struct lib {
  MPI_Session session;
  MPI_Comm world, self;
};

static void lib_open(struct lib *l, int iter)
{
  MPI_Info hints;
  MPI_Group g;
  char level[64] = "";
  int len = (int)sizeof(level), flag = 0;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "thread_level", "MPI_THREAD_MULTIPLE");
  check(MPI_Session_init(hints, MPI_ERRORS_RETURN, &l->session) == MPI_SUCCESS, "session", iter);
  MPI_Info_free(&hints);
  MPI_Session_get_info(l->session, &hints);
  MPI_Info_get_string(hints, "thread_level", &len, level, &flag);
  check(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0, "thread level of the session", iter);
  MPI_Info_free(&hints);
  MPI_Group_from_session_pset(l->session, "mpi://WORLD", &g);
  MPI_Comm_create_from_group(g, "mana.test.session_only.world", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                             &l->world);
  MPI_Group_free(&g);
  MPI_Group_from_session_pset(l->session, "mpi://SELF", &g);
  MPI_Comm_create_from_group(g, "mana.test.session_only.self", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                             &l->self);
  MPI_Group_free(&g);
}

static void lib_close(struct lib *l)
{
  MPI_Comm_free(&l->world);
  MPI_Comm_free(&l->self);
  MPI_Session_finalize(&l->session);
}

int main(int argc, char **argv)
{
  int iters = argc > 1 ? atoi(argv[1]) : 30, rank, size, initialized = -1;
  struct lib l;
  long total = 0;
  lib_open(&l, 0);
  MPI_Comm_rank(l.world, &rank);
  MPI_Comm_size(l.world, &size);
  for (int i = 0; i < iters; i++) {
    int in = rank + i, sum = 0, got = -1, self_got = -1, right = (rank + 1) % size,
        left = (rank + size - 1) % size;
    MPI_Request req[2];
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, l.world);
    MPI_Irecv(&got, 1, MPI_INT, left, i, l.world, &req[0]);
    MPI_Isend(&in, 1, MPI_INT, right, i, l.world, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    check(got == left + i, "ring value", i);
    MPI_Sendrecv(&in, 1, MPI_INT, 0, 7, &self_got, 1, MPI_INT, 0, 7, l.self, MPI_STATUS_IGNORE);
    check(self_got == in, "message to itself", i);
    MPI_Initialized(&initialized);
    check(initialized == 0, "MPI_Initialized says 0", i);
    total += sum + got;
    if (i % 10 == 9 && i + 1 < iters) { /* a new session before the old one closes: MPICH
                                             4.0.2 crashes when a process that closed its last
                                             session opens one again without MPI_Init */
      struct lib next;
      lib_open(&next, i);
      lib_close(&l);
      l = next;
    }
  }
  long all = 0;
  MPI_Reduce(&total, &all, 1, MPI_LONG, MPI_SUM, 0, l.world);
  int all_errs = 0;
  MPI_Reduce(&errs, &all_errs, 1, MPI_INT, MPI_SUM, 0, l.world);
  if (rank == 0)
    printf("ckpt_session_only: %d processes, %d iterations, total %ld, %d failures\n", size, iters,
           all, all_errs);
  lib_close(&l);
  return all_errs != 0;
}
