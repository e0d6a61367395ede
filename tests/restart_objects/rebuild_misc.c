/*
 * rebuild_misc.c - the other kinds of MPI objects survive a rebuild in place: groups (incl,
 * excl, range, set operations), user reduction operations (commutative or not, used by
 * Allreduce, Reduce and Reduce_local), an error handler and a keyval the program freed while
 * objects still use them (the keyval's handle stays usable by the callbacks, which may free it
 * again, and by a copy the program kept; a freed keyval nothing uses can be freed again too),
 * info objects (key order, deleted and replaced keys, dups),
 * persistent requests of every send mode and receives (one with a datatype freed after
 * MPI_Send_init), the buffer of buffered sends, and error classes, codes and strings the
 * program added.  The objects are used before the first rebuild, between the two rebuilds and
 * after the second.
 * Ranks: 2.
 */
#include "rebuild.h"

static void weighted_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += 2 * ((int *)in)[i];
}

/* Not commutative: keeps the order of the operands visible. */
static void concat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] = ((int *)in)[i] * 10 + ((int *)inout)[i];
}

static int handled;
static void error_fn(MPI_Comm *comm, int *code, ...)
{
  (void)comm;
  handled += *code == MPI_ERR_OTHER;
}

static int deletes, kv_saved, kv_wrong, kv_refree_failed;
static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
  (void)comm;
  (void)extra;
  deletes += (int)(intptr_t)value;
  kv_wrong += keyval != kv_saved;
  kv_refree_failed += MPI_Comm_free_keyval(&keyval) != MPI_SUCCESS;
  return MPI_SUCCESS;
}

static void show_group(const char *what, MPI_Group g)
{
  int size, rank, world[4], in[4] = {0, 1, 2, 3};
  MPI_Group wg;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_size(g, &size);
  MPI_Group_rank(g, &rank);
  MPI_Group_translate_ranks(g, size, in, wg, world);
  mt_append("OK   group %s: size %d, my rank %d, world ranks ", what, size, rank);
  mt_fmt_ints(world, size);
  mt_append("\n");
  MPI_Group_free(&wg);
}

static void show_info(const char *what, MPI_Info info)
{
  int n;
  MPI_Info_get_nkeys(info, &n);
  mt_append("OK   info %s: %d keys:", what, n);
  for (int i = 0; i < n; i++) {
    char key[MPI_MAX_INFO_KEY + 1], value[64];
    int flag;
    MPI_Info_get_nthkey(info, i, key);
    MPI_Info_get(info, key, sizeof(value) - 1, value, &flag);
    mt_append(" %s=%s", key, value);
  }
  mt_append("\n");
}

static void use_ops(MPI_Op sum2, MPI_Op cat, int round)
{
  int v[2] = {mt_.rank + 1, round}, all[2], red[2] = {0, 0}, local[2] = {3, 4};
  MPI_Allreduce(v, all, 2, MPI_INT, sum2, MPI_COMM_WORLD);
  MPI_Reduce(v, red, 2, MPI_INT, cat, 0, MPI_COMM_WORLD);
  MPI_Reduce_local(v, local, 2, MPI_INT, cat);
  int commute;
  MPI_Op_commutative(cat, &commute);
  mt_log("ops round %d: allreduce [%d %d] reduce [%d %d] local [%d %d] cat commutes %d", round,
         all[0], all[1], red[0], red[1], local[0], local[1], commute);
}

struct persistent {
  MPI_Request req[6];
  int sbuf[4][8], rbuf[4][8];
};

/* Rank 0 sends with every mode, rank 1 receives; the vector type keeps every other int. */
static void use_persistent(struct persistent *p, int round)
{
  for (int m = 0; m < 4; m++)
    for (int i = 0; i < 8; i++) {
      p->sbuf[m][i] = 1000 * round + 100 * m + i;
      p->rbuf[m][i] = -1;
    }
  if (mt_.rank == 1) {
    MPI_Startall(4, p->req); /* receives first: the ready send needs them */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(4, p->req, MPI_STATUSES_IGNORE);
    for (int m = 0; m < 4; m++) {
      mt_append("OK   persistent round %d mode %d received ", round, m);
      mt_fmt_ints(p->rbuf[m], 8);
      mt_append("\n");
    }
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int m = 0; m < 4; m++) {
      MPI_Start(&p->req[m]);
      MPI_Wait(&p->req[m], MPI_STATUS_IGNORE);
    }
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_misc");
  mt_require_size(2);
  int me = mt_.rank;

  /* groups */
  MPI_Group wg, g1, g0, grange, gunion, ginter, gdiff;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_incl(wg, 1, (int[]){1}, &g1);
  MPI_Group_excl(wg, 1, (int[]){1}, &g0);
  MPI_Group_range_incl(wg, 1, (int[][3]){{1, 0, -1}}, &grange); /* {1, 0} */
  MPI_Group_union(g1, g0, &gunion);
  MPI_Group_intersection(grange, g1, &ginter);
  MPI_Group_difference(wg, g1, &gdiff);

  /* operations */
  MPI_Op sum2, cat;
  MPI_Op_create(weighted_sum, 1, &sum2);
  MPI_Op_create(concat, 0, &cat);
  use_ops(sum2, cat, 0);

  /* an error handler and a keyval the program frees while a communicator uses them */
  MPI_Comm comm;
  MPI_Errhandler eh;
  int kv;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_create_errhandler(error_fn, &eh);
  MPI_Comm_set_errhandler(comm, eh);
  MPI_Errhandler_free(&eh);
  int kv_unused, kv_unused_saved;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv, NULL);
  kv_saved = kv;
  MPI_Comm_set_attr(comm, kv, (void *)(intptr_t)5);
  MPI_Comm_free_keyval(&kv);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_unused, NULL);
  kv_unused_saved = kv_unused;
  MPI_Comm_free_keyval(&kv_unused);

  /* info objects */
  MPI_Info info, info_dup, empty;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alpha", "1");
  MPI_Info_set(info, "beta", "2");
  MPI_Info_set(info, "gamma", "3");
  MPI_Info_delete(info, "beta");
  MPI_Info_set(info, "alpha", "10");
  MPI_Info_dup(info, &info_dup);
  MPI_Info_set(info_dup, "delta", "4");
  MPI_Info_create(&empty);

  /* persistent requests; the vector type is freed at once, the requests keep it */
  struct persistent p;
  MPI_Datatype every_other;
  MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  int bsize = 4 * (8 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *bbuf = malloc((size_t)bsize);
  MPI_Buffer_attach(bbuf, bsize);
  if (me == 0) {
    MPI_Send_init(p.sbuf[0], 1, every_other, 1, 10, MPI_COMM_WORLD, &p.req[0]);
    MPI_Bsend_init(p.sbuf[1], 8, MPI_INT, 1, 11, MPI_COMM_WORLD, &p.req[1]);
    MPI_Ssend_init(p.sbuf[2], 8, MPI_INT, 1, 12, MPI_COMM_WORLD, &p.req[2]);
    MPI_Rsend_init_c(p.sbuf[3], 8, MPI_INT, 1, 13, MPI_COMM_WORLD, &p.req[3]);
  } else {
    MPI_Recv_init(p.rbuf[0], 1, every_other, 0, 10, MPI_COMM_WORLD, &p.req[0]);
    MPI_Recv_init(p.rbuf[1], 8, MPI_INT, 0, 11, MPI_COMM_WORLD, &p.req[1]);
    MPI_Recv_init_c(p.rbuf[2], 8, MPI_INT, 0, 12, MPI_COMM_WORLD, &p.req[2]);
    MPI_Recv_init(p.rbuf[3], 8, MPI_INT, 0, 13, MPI_COMM_WORLD, &p.req[3]);
  }
  MPI_Type_free(&every_other);
  use_persistent(&p, 0);

  /* error classes, codes and strings; a class, code and string added and deleted before them
   * (MPI 4.1's deletions, MPIX_ in MPICH 4.0.2) are not made again */
  int cls, code, gone_cls, gone_code;
  MPI_Add_error_class(&gone_cls);
  MPI_Add_error_code(gone_cls, &gone_code);
  MPI_Add_error_string(gone_code, "never mind");
  MPIX_Delete_error_string(gone_code);
  MPIX_Delete_error_code(gone_code);
  MPIX_Delete_error_class(gone_cls);
  MPI_Add_error_class(&cls);
  MPI_Add_error_code(cls, &code);
  MPI_Add_error_string(code, "the sky fell");
  MPI_Add_error_string(cls, "sky trouble");
  /* a class deleted after one added later (MPICH's errhan/adderr checkpointed mid-loop): the
   * later one keeps its number, and the deleted one's number is free again */
  int hole_cls, late_cls;
  MPI_Add_error_class(&hole_cls);
  MPI_Add_error_class(&late_cls);
  MPI_Add_error_string(late_cls, "late trouble");
  MPIX_Delete_error_class(hole_cls);

  for (int round = 1; round <= 2; round++) {
    char when[8];
    snprintf(when, sizeof(when), "(%d)", round);
    rebuild_checked(when);

    show_group("world", wg);
    show_group("{1}", g1);
    show_group("{0}", g0);
    show_group("range {1,0}", grange);
    show_group("union", gunion);
    show_group("intersection", ginter);
    show_group("difference", gdiff);
    int cmp;
    MPI_Group_compare(grange, wg, &cmp);
    mt_check(cmp == MPI_SIMILAR, "range {1,0} is similar to world (%d)", cmp);

    use_ops(sum2, cat, round);

    MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    mt_check(handled == round, "freed error handler still runs (%d)", handled);
    void *attr;
    int flag, copy = kv_saved;
    MPI_Comm_get_attr(comm, kv_saved, &attr, &flag);
    mt_check(flag && attr == (void *)(intptr_t)5, "attribute of the freed keyval, by a kept copy");
    mt_check(MPI_Comm_free_keyval(&copy) == MPI_SUCCESS, "the freed keyval freed again");
    copy = kv_unused_saved;
    mt_check(MPI_Comm_free_keyval(&copy) == MPI_SUCCESS, "an unused freed keyval freed again");
    int sum = 0;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm);
    mt_check_int("allreduce on comm", sum, 1);

    show_info("info", info);
    show_info("dup", info_dup);
    show_info("empty", empty);
    MPI_Info_set(empty, round == 1 ? "first" : "second", "x");

    use_persistent(&p, round);
    int payload[3] = {me, round, 7}, got[3] = {0, 0, 0};
    if (me == 0)
      MPI_Bsend(payload, 3, MPI_INT, 1, 20, MPI_COMM_WORLD);
    else
      MPI_Recv(got, 3, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (me == 1)
      mt_log("bsend round %d: got %d %d %d", round, got[0], got[1], got[2]);

    char text[MPI_MAX_ERROR_STRING];
    int len, c;
    MPI_Error_string(code, text, &len);
    MPI_Error_class(code, &c);
    mt_log("error code: class %s, text '%s'", c == cls ? "mine" : "other", text);
    MPI_Error_string(cls, text, &len);
    mt_log("error class text '%s'", text);
    MPI_Error_string(late_cls, text, &len);
    mt_log("class added after a deleted one: text '%s'", text);
    int again = -1;
    MPI_Add_error_class(&again);
    mt_check(again == hole_cls, "a new class takes the deleted one's number (%d)", again);
    MPIX_Delete_error_class(again);
  }

  MPI_Comm_free(&comm);
  mt_log("delete callback after the keyval was freed: %d (other keyval %d, failed frees %d)",
         deletes, kv_wrong, kv_refree_failed);
  for (int i = 0; i < 4; i++)
    MPI_Request_free(&p.req[i]);
  int size;
  MPI_Buffer_detach(&bbuf, &size);
  free(bbuf);
  MPI_Info_free(&info);
  MPI_Info_free(&info_dup);
  MPI_Info_free(&empty);
  MPI_Op_free(&sum2);
  MPI_Op_free(&cat);
  MPI_Group *groups[] = {&wg, &g1, &g0, &grange, &gunion, &ginter, &gdiff};
  for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
    MPI_Group_free(groups[i]);
  return mt_end();
}
