/*
 * persist_objects.c - MPI objects across real checkpoint, kill and restart cycles (one rank,
 * so any moment between steps is a safe point for the lower half's local checkpoint).  The
 * program makes objects of every kind mana rebuilds, then uses all of them at every step and
 * prints what it sees; the output of a run checkpointed, killed and restarted several times
 * must equal an uninterrupted native run (tests/restart/run_local_restart.sh).
 *   usage: persist_objects STEPS STEP_MS
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void add_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += 3 * ((int *)in)[i];
}

static int handled;
static void on_error(MPI_Comm *comm, int *code, ...)
{
  (void)comm;
  handled += *code;
}

static int copies;
static int copy_attr(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
  (void)c;
  (void)kv;
  (void)extra;
  copies++;
  *(void **)out = (void *)((intptr_t)in + 1);
  *flag = 1;
  return MPI_SUCCESS;
}

static uint32_t fold(uint32_t h, const void *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const unsigned char *)p)[i]) * 16777619u;
  return h;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 20;
  int step_ms = argc > 2 ? atoi(argv[2]) : 40;

  MPI_Comm dup, split, cart, dist;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_name(dup, "persistent dup");
  MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &split);
  MPI_Cart_create(MPI_COMM_WORLD, 2, (int[]){1, 1}, (int[]){1, 1}, 0, &cart);
  int self = 0, weight = 5;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &self, &weight, 1, &self, &weight,
                                 MPI_INFO_NULL, 0, &dist);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(on_error, &eh);
  MPI_Comm_set_errhandler(split, eh);
  MPI_Errhandler_free(&eh);
  int kv;
  MPI_Comm_create_keyval(copy_attr, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
  MPI_Comm_set_attr(dup, kv, (void *)(intptr_t)100);

  MPI_Group wg, g;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_incl(wg, 1, &self, &g);
  MPI_Op op;
  MPI_Op_create(add_op, 1, &op);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "color", "blue");
  MPI_Info_set(info, "shape", "round");
  MPI_Info_delete(info, "color");

  MPI_Datatype vec, st, sub, res, big;
  MPI_Type_vector(4, 1, 3, MPI_INT, &vec);
  MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 16}, (MPI_Datatype[]){MPI_DOUBLE, vec},
                         &st);
  MPI_Type_create_subarray(2, (int[]){4, 4}, (int[]){2, 2}, (int[]){1, 1}, MPI_ORDER_C, MPI_INT,
                           &sub);
  MPI_Type_create_resized(vec, 0, 64, &res);
  MPI_Type_contiguous_c(3, MPI_SHORT, &big);
  MPI_Datatype *types[] = {&vec, &st, &sub, &res, &big};
  for (int i = 0; i < 5; i++)
    MPI_Type_commit(types[i]);
  MPI_Type_set_name(st, "persistent struct");

  int psend[16], precv[16];
  MPI_Datatype every_third;
  MPI_Type_vector(5, 1, 3, MPI_INT, &every_third);
  MPI_Type_commit(&every_third);
  MPI_Request preq[2];
  MPI_Recv_init(precv, 1, every_third, 0, 7, dup, &preq[0]);
  MPI_Send_init(psend, 1, every_third, 0, 7, dup, &preq[1]);
  MPI_Type_free(&every_third);
  static char bbuf[4096];
  MPI_Buffer_attach(bbuf, sizeof(bbuf));

  for (int step = 0; step < steps; step++) {
    uint32_t h = 2166136261u;
    int v[2] = {step, 1}, sum[2];
    MPI_Allreduce(v, sum, 2, MPI_INT, op, dup);
    h = fold(h, sum, sizeof(sum));
    MPI_Allreduce(v, sum, 2, MPI_INT, MPI_SUM, cart);
    h = fold(h, sum, sizeof(sum));
    int nb = -1, coords[2];
    MPI_Neighbor_allgather(&step, 1, MPI_INT, &nb, 1, MPI_INT, dist);
    MPI_Cart_coords(cart, 0, 2, coords);

    char out[256], in[256];
    for (int i = 0; i < 256; i++)
      out[i] = (char)(i * 3 + step);
    MPI_Datatype *t[] = {&vec, &st, &sub, &res, &big};
    for (int i = 0; i < 5; i++) {
      memset(in, 0, sizeof(in));
      MPI_Sendrecv(out, 1, *t[i], 0, i, in, 1, *t[i], 0, i, split, MPI_STATUS_IGNORE);
      h = fold(h, in, sizeof(in));
    }
    for (int i = 0; i < 16; i++) {
      psend[i] = 100 * step + i;
      precv[i] = -1;
    }
    MPI_Startall(2, preq);
    MPI_Waitall(2, preq, MPI_STATUSES_IGNORE);
    h = fold(h, precv, sizeof(precv));
    int b = step * 7, got = 0;
    MPI_Bsend(&b, 1, MPI_INT, 0, 9, split);
    MPI_Recv(&got, 1, MPI_INT, 0, 9, split, MPI_STATUS_IGNORE);

    char value[32] = "", name[MPI_MAX_OBJECT_NAME], tname[MPI_MAX_OBJECT_NAME];
    int flag, len, nkeys, gsize;
    MPI_Info_get(info, "shape", sizeof(value) - 1, value, &flag);
    MPI_Info_get_nkeys(info, &nkeys);
    MPI_Comm_get_name(dup, name, &len);
    MPI_Type_get_name(st, tname, &len);
    void *attr;
    MPI_Comm_get_attr(dup, kv, &attr, &flag);
    MPI_Comm_call_errhandler(split, 2);
    MPI_Group_size(g, &gsize);
    MPI_Comm d2;
    MPI_Comm_dup(dup, &d2); /* the copy callback, after every restart too */
    void *attr2;
    int flag2;
    MPI_Comm_get_attr(d2, kv, &attr2, &flag2);
    MPI_Comm_free(&d2);

    printf("step %d: sums %08x nb %d coords %d,%d bsend %d info %s/%d names '%s' '%s' attr %ld "
           "dup attr %ld copies %d handled %d group %d\n",
           step, h, nb, coords[0], coords[1], got, value, nkeys, name, tname, (long)(intptr_t)attr,
           (long)(intptr_t)attr2, copies, handled, gsize);
    fflush(stdout);
    struct timespec ts = {step_ms / 1000, (long)(step_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  MPI_Request_free(&preq[0]);
  MPI_Request_free(&preq[1]);
  void *bb;
  int bs;
  MPI_Buffer_detach(&bb, &bs);
  MPI_Finalize();
  return 0;
}
