/*
 * handle_identity.c - calls that hand out an object the program already holds give back the
 * handle it holds (as MPICH does), and each such handle is freed once:
 *   - MPI_Comm_get_errhandler twice on a communicator with a user handler: both equal the
 *     created handler; the three handles freed, the handler still runs (call_errhandler);
 *   - MPI_Comm_group twice, MPI_Win_get_group, MPI_Win_get_errhandler: equal each time; the
 *     groups translate ranks after some of them were freed;
 *   - a loop of get and free, as libraries do per call, that must leave no handle behind.
 * The program calls MPI between every get and its free, so a checkpoint (run_at_calls.sh)
 * falls while the application holds the same handle several times.
 * Ranks: 2.
 */
#include "mpitest.h"

static int handler_calls, handler_code;

static void count_handler(MPI_Comm *comm, int *code, ...)
{
  (void)comm;
  handler_calls++;
  handler_code = *code;
}

static void win_handler(MPI_Win *win, int *code, ...)
{
  (void)win;
  handler_calls++;
  handler_code = *code;
}

/* Some MPI between a get and its free: a point the checkpoint can fall on. */
static void step(MPI_Comm comm)
{
  int v = 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = 0;

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Errhandler made, got1, got2;
  MPI_Comm_create_errhandler(count_handler, &made);
  MPI_Comm_set_errhandler(dup, made);
  MPI_Comm_get_errhandler(dup, &got1);
  step(dup);
  MPI_Comm_get_errhandler(dup, &got2);
  step(dup);
  int eh_same = got1 == made && got2 == made;
  MPI_Errhandler_free(&got1);
  step(dup);
  MPI_Errhandler_free(&made);
  step(dup);
  MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER);
  MPI_Errhandler_free(&got2);
  step(dup);
  MPI_Comm_call_errhandler(dup, MPI_ERR_ARG);
  int eh_nulls =
      got1 == MPI_ERRHANDLER_NULL && got2 == MPI_ERRHANDLER_NULL && made == MPI_ERRHANDLER_NULL;

  MPI_Group g1, g2, world_group;
  MPI_Comm_group(dup, &g1);
  step(dup);
  MPI_Comm_group(dup, &g2);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int group_same = g1 == g2;
  MPI_Group_free(&g1);
  step(dup);
  int from[1] = {size - 1}, to[1] = {-1};
  MPI_Group_translate_ranks(g2, 1, from, world_group, to);
  MPI_Group_free(&g2);
  MPI_Group_free(&world_group);
  int translated = to[0] == size - 1;

  int buf[4] = {0};
  MPI_Win win;
  MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, dup, &win);
  MPI_Errhandler weh, wgot;
  MPI_Win_create_errhandler(win_handler, &weh);
  MPI_Win_set_errhandler(win, weh);
  MPI_Win_get_errhandler(win, &wgot);
  step(dup);
  MPI_Group wg1, wg2;
  MPI_Win_get_group(win, &wg1);
  step(dup);
  MPI_Win_get_group(win, &wg2);
  int win_same = wgot == weh && wg1 == wg2;
  MPI_Group_free(&wg1);
  MPI_Errhandler_free(&weh);
  step(dup);
  MPI_Win_call_errhandler(win, MPI_ERR_WIN);
  int wg2_size = 0;
  MPI_Group_size(wg2, &wg2_size);
  MPI_Group_free(&wg2);
  MPI_Errhandler_free(&wgot);
  MPI_Win_free(&win);

  /* a library's pattern: get, use, free, per call */
  int loop_ok = 1;
  for (int i = 0; i < 50; i++) {
    MPI_Group g;
    int gsize = 0;
    MPI_Comm_group(dup, &g);
    MPI_Group_size(g, &gsize);
    MPI_Group_free(&g);
    loop_ok &= gsize == size && g == MPI_GROUP_NULL;
    if (i % 10 == 0)
      step(dup);
  }
  MPI_Comm_free(&dup);

  bad += !eh_same + !eh_nulls + !group_same + !translated + !win_same + (wg2_size != size) +
         !loop_ok + (handler_calls != 3);
  if (rank == 0) {
    printf("comm errhandler got back as created: %s\n", eh_same ? "yes" : "no");
    printf("freed handles are null: %s\n", eh_nulls ? "yes" : "no");
    printf("handler calls %d, last code class %d\n", handler_calls, handler_code);
    printf("comm group got back twice: %s\n", group_same ? "yes" : "no");
    printf("translate through the remaining handle: %s\n", translated ? "yes" : "no");
    printf("window errhandler and group got back: %s, group size %d\n", win_same ? "yes" : "no",
           wg2_size);
    printf("get and free loop: %s\n", loop_ok ? "ok" : "bad");
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s\n", total == 0 ? "handle_identity: OK" : "handle_identity: FAILED");
  MPI_Finalize();
  return total != 0;
}
