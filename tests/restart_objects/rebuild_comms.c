/*
 * rebuild_comms.c - communicators survive a rebuild in place: dup, split (reversed keys and
 * MPI_UNDEFINED), create, create_group, idup, dup_with_info, Cartesian (periodic, reordered)
 * and its sub-grid, graph, distributed graphs (weighted, unweighted), names (also on
 * MPI_COMM_SELF), error handlers (a user handler, MPI_ERRORS_RETURN on MPI_COMM_WORLD),
 * attributes (with copy and delete callbacks, also on MPI_COMM_WORLD), hints.  After the
 * rebuild every communicator is used and its properties printed; a second rebuild follows
 * new objects made after the first.
 * Ranks: 4.
 */
#include "rebuild.h"

static int copies, deletes;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
  (void)comm;
  (void)keyval;
  copies++;
  *(void **)out = (void *)((intptr_t)in + *(int *)extra); /* a new value: old + 1000 */
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
  (void)comm;
  (void)keyval;
  (void)value;
  (void)extra;
  deletes++;
  return MPI_SUCCESS;
}

static int handled, handled_code;
static MPI_Comm handled_comm;

static void error_fn(MPI_Comm *comm, int *code, ...)
{
  handled++;
  handled_code = *code;
  handled_comm = *comm;
}

/* The world ranks of c's members, in rank order, and c's rank and size. */
static void show_members(const char *what, MPI_Comm c)
{
  int size, rank;
  MPI_Comm_size(c, &size);
  MPI_Comm_rank(c, &rank);
  MPI_Group g, wg;
  MPI_Comm_group(c, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int in[8], out[8];
  for (int i = 0; i < size; i++)
    in[i] = i;
  MPI_Group_translate_ranks(g, size, in, wg, out);
  mt_append("OK   %s: rank %d of %d, members ", what, rank, size);
  mt_fmt_ints(out, size);
  mt_append("\n");
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
}

/* One collective on c: the sum of the members' world ranks times 10 plus their ranks. */
static void show_sum(const char *what, MPI_Comm c)
{
  int rank, v, s = -1;
  MPI_Comm_rank(c, &rank);
  v = mt_.rank * 10 + rank;
  MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
  mt_log("%s: allreduce = %d", what, s);
}

static void show_name(const char *what, MPI_Comm c)
{
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Comm_get_name(c, name, &len);
  mt_log("%s: name '%s'", what, name);
}

static void show_cart(MPI_Comm cart, MPI_Comm sub)
{
  int dims[2], periods[2], coords[2], src, dst, ndims;
  MPI_Cartdim_get(cart, &ndims);
  MPI_Cart_get(cart, 2, dims, periods, coords);
  mt_log("cart: ndims %d dims %dx%d periods %d%d coords (%d,%d)", ndims, dims[0], dims[1],
         periods[0], periods[1], coords[0], coords[1]);
  MPI_Cart_shift(cart, 0, 1, &src, &dst);
  mt_log("cart: shift dim 0: from %d to %d", src, dst);
  MPI_Cart_shift(cart, 1, 1, &src, &dst);
  mt_log("cart: shift dim 1: from %d to %d", src, dst);
  int sd, sp, sc;
  MPI_Cart_get(sub, 1, &sd, &sp, &sc);
  mt_log("cart_sub: dims %d period %d coord %d", sd, sp, sc);
  show_members("cart", cart);
  show_members("cart_sub", sub);
}

static void show_graph(MPI_Comm graph)
{
  int topo, nn, nbrs[4];
  MPI_Topo_test(graph, &topo);
  MPI_Graph_neighbors_count(graph, mt_.rank, &nn);
  MPI_Graph_neighbors(graph, mt_.rank, 4, nbrs);
  mt_append("OK   graph: topo %s, %d neighbours ", topo == MPI_GRAPH ? "graph" : "?", nn);
  mt_fmt_ints(nbrs, nn);
  mt_append("\n");
}

static void show_dist(const char *what, MPI_Comm d)
{
  int topo, in, out, weighted;
  MPI_Topo_test(d, &topo);
  MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted);
  int src[4], sw[4] = {0}, dst[4], dw[4] = {0};
  MPI_Dist_graph_neighbors(d, 4, src, weighted ? sw : MPI_UNWEIGHTED, 4, dst,
                           weighted ? dw : MPI_UNWEIGHTED);
  mt_log("%s: topo %s in %d out %d weighted %d; src %d w %d; dst %d w %d", what,
         topo == MPI_DIST_GRAPH ? "dist_graph" : "?", in, out, weighted, in ? src[0] : -1, sw[0],
         out ? dst[0] : -1, dw[0]);
  int mine = 100 + mt_.rank, got[4] = {-1, -1, -1, -1};
  MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, d);
  mt_append("OK   %s: neighbor_allgather ", what);
  mt_fmt_ints(got, in);
  mt_append("\n");
}

static void show_attr(const char *what, MPI_Comm c, int kv)
{
  long *v = NULL;
  int flag = 0;
  MPI_Comm_get_attr(c, kv, &v, &flag);
  if (flag)
    mt_log("%s: attribute %ld", what, (long)(intptr_t)v);
  else
    mt_log("%s: no attribute", what);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_comms");
  mt_require_size(4);
  int me = mt_.rank;

  int plus = 1000, kv;
  MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &plus);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(error_fn, &eh);

  MPI_Comm dup, split, odd_only, created = MPI_COMM_NULL, grouped = MPI_COMM_NULL, idup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_name(dup, "dup of world");
  MPI_Comm_set_attr(dup, kv, (void *)(intptr_t)(7 + me));
  MPI_Comm_set_attr(MPI_COMM_WORLD, kv, (void *)(intptr_t)(40 + me));
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &split); /* reversed rank order */
  MPI_Comm_split(MPI_COMM_WORLD, me % 2 ? 1 : MPI_UNDEFINED, me, &odd_only);
  MPI_Comm_set_errhandler(split, eh);

  MPI_Group wg, g310, g02;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_incl(wg, 3, (int[]){3, 1, 0}, &g310);
  MPI_Group_incl(wg, 2, (int[]){2, 0}, &g02);
  MPI_Comm_create(MPI_COMM_WORLD, g310, &created);
  if (me == 0 || me == 2)
    MPI_Comm_create_group(MPI_COMM_WORLD, g02, 5, &grouped);
  MPI_Request rq;
  MPI_Comm_idup(split, &idup, &rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);

  MPI_Info info;
  MPI_Comm hinted;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &hinted);
  MPI_Info_free(&info);

  MPI_Comm cart, cart_sub, graph, dist_w, dist_u;
  MPI_Cart_create(MPI_COMM_WORLD, 2, (int[]){2, 2}, (int[]){1, 0}, 1, &cart);
  MPI_Cart_sub(cart, (int[]){0, 1}, &cart_sub);
  /* a ring 0-1-2-3-0 */
  MPI_Graph_create(MPI_COMM_WORLD, 4, (int[]){2, 4, 6, 8}, (int[]){1, 3, 0, 2, 1, 3, 2, 0}, 0,
                   &graph);
  int next = (me + 1) % 4, prev = (me + 3) % 4, w = me + 1;
  MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, (int[]){1}, &next, &w, MPI_INFO_NULL, 0, &dist_w);
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, MPI_UNWEIGHTED, 1, &next, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &dist_u);
  MPI_Comm_set_name(MPI_COMM_SELF, "my self");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh); /* the communicator keeps it */

  rebuild_checked("(1)");

  show_members("world", MPI_COMM_WORLD);
  show_members("dup", dup);
  show_sum("dup", dup);
  show_name("dup", dup);
  show_attr("dup", dup, kv);
  show_attr("world", MPI_COMM_WORLD, kv);
  show_name("world", MPI_COMM_WORLD);
  show_name("self", MPI_COMM_SELF);
  show_members("split", split);
  show_sum("split", split);
  mt_check((me % 2 == 1) == (odd_only != MPI_COMM_NULL), "odd_only exists on odd ranks");
  if (odd_only != MPI_COMM_NULL)
    show_sum("odd_only", odd_only);
  if (created != MPI_COMM_NULL) {
    show_members("created", created);
    show_sum("created", created);
  }
  mt_check((me == 2) == (created == MPI_COMM_NULL), "created: null on rank 2 only");
  if (grouped != MPI_COMM_NULL) {
    show_members("grouped", grouped);
    show_sum("grouped", grouped);
  }
  show_members("idup", idup);
  show_sum("idup", idup);
  int res;
  MPI_Comm_compare(split, idup, &res);
  mt_check(res == MPI_CONGRUENT, "compare(split, idup) congruent (%d)", res);
  MPI_Comm_compare(dup, MPI_COMM_WORLD, &res);
  mt_check(res == MPI_CONGRUENT, "compare(dup, world) congruent (%d)", res);

  MPI_Info got;
  char value[64] = "";
  int flag = 0;
  MPI_Comm_get_info(hinted, &got);
  MPI_Info_get(got, "mpi_assert_no_any_tag", sizeof(value) - 1, value, &flag);
  mt_log("hinted: mpi_assert_no_any_tag %s '%s'", flag ? "set" : "unset", value);
  MPI_Info_free(&got);
  show_sum("hinted", hinted);

  show_cart(cart, cart_sub);
  show_sum("cart", cart);
  show_graph(graph);
  show_dist("dist_w", dist_w);
  show_dist("dist_u", dist_u);

  /* The user handler of split, freed by the application, still runs, with split's handle. */
  MPI_Comm_call_errhandler(split, MPI_ERR_OTHER);
  mt_check(handled == 1 && handled_code == MPI_ERR_OTHER && handled_comm == split,
           "user error handler on split ran once with split's handle");
  /* MPI_ERRORS_RETURN on world: an invalid rank comes back as an error code */
  int dummy = 0, cls = 0;
  int rc = MPI_Send(&dummy, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
  MPI_Error_class(rc, &cls);
  mt_check(rc != MPI_SUCCESS && cls == MPI_ERR_RANK, "world returns MPI_ERR_RANK for rank 99");

  /* Copy callbacks after the rebuild. */
  MPI_Comm dup2;
  MPI_Comm_dup(dup, &dup2);
  show_attr("dup2", dup2, kv);
  mt_log("callbacks so far: %d copies, %d deletes", copies, deletes);

  rebuild_checked("(2)");

  show_members("dup2", dup2);
  show_attr("dup2", dup2, kv);
  show_sum("dup2", dup2);
  show_cart(cart, cart_sub);
  show_dist("dist_w", dist_w);
  show_attr("world", MPI_COMM_WORLD, kv);

  MPI_Comm *all[] = {&dup,  &split,    &odd_only, &created, &grouped, &idup, &hinted,
                     &cart, &cart_sub, &graph,    &dist_w,  &dist_u,  &dup2};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (*all[i] != MPI_COMM_NULL)
      MPI_Comm_free(all[i]);
  MPI_Comm_delete_attr(MPI_COMM_WORLD, kv);
  mt_log("callbacks at the end: %d copies, %d deletes", copies, deletes);
  MPI_Comm_free_keyval(&kv);
  MPI_Group_free(&wg);
  MPI_Group_free(&g310);
  MPI_Group_free(&g02);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return mt_end();
}
