/*
 * rebuild_inter.c - intercommunicators survive a rebuild in place (and a drain of the messages
 * in flight across them).  Groups A = {0,2} and B = {3,1} (B in reversed world order), bridged
 * through MPI_COMM_WORLD with local leaders that are not local rank 0; a dup of the
 * intercommunicator with a name and an attribute, a split of it (one side keeps one member
 * each), an intercommunicator between the halves of a dup of world, an MPI_Comm_create on an
 * intercommunicator and an intracommunicator merged from one.  Before the rebuild, messages
 * are left in flight across the intercommunicators and receives are posted that are satisfied
 * after it.  After the rebuild every object is used: remote groups, point-to-point in both
 * directions, Bcast from MPI_ROOT, Allreduce, Allgather, Barrier, a merge with the same high
 * flag on both sides (the order then depends on which side MPI calls low), and a new
 * intercommunicator made from a rebuilt one.  Natively the rebuild does nothing: the output
 * must be the same.
 * Ranks: 4.
 */
#include "drain.h"

static void show_remote(const char *what, MPI_Comm inter)
{
  int size, rsize, rank;
  MPI_Comm_size(inter, &size);
  MPI_Comm_remote_size(inter, &rsize);
  MPI_Comm_rank(inter, &rank);
  MPI_Group rg, wg;
  MPI_Comm_remote_group(inter, &rg);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int in[4] = {0, 1, 2, 3}, out[4];
  MPI_Group_translate_ranks(rg, rsize, in, wg, out);
  mt_append("OK   %s: rank %d of %d, remote members ", what, rank, size);
  mt_fmt_ints(out, rsize);
  mt_append("\n");
  MPI_Group_free(&rg);
  MPI_Group_free(&wg);
}

/* Collectives across: a Bcast from side A's rank 0 to side B, then one back (`a_side`: this
 * process is on A), an Allreduce (each side gets the other's sum), an Allgather, a Barrier. */
static void show_collectives(const char *what, MPI_Comm inter, int a_side)
{
  int rank, rsize, got[2] = {-1, -1};
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_remote_size(inter, &rsize);
  for (int round = 0; round < 2; round++) {
    int sending = round == 0 ? a_side : !a_side;
    int v = 100 * (round + 1) + mt_.rank;
    if (sending)
      MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else
      MPI_Bcast(&got[round], 1, MPI_INT, 0, inter);
  }
  int mine = mt_.rank * 10 + rank, sum = -1, all[4] = {-1, -1, -1, -1};
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter);
  MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, inter);
  MPI_Barrier(inter);
  mt_append("OK   %s: bcast received [%d %d], allreduce %d, allgather ", what, got[0], got[1], sum);
  mt_fmt_ints(all, rsize);
  mt_append("\n");
}

/* Local rank i and remote rank i exchange one message each way. */
static void show_p2p(const char *what, MPI_Comm inter, int tag)
{
  int rank, rsize, out, in = -1;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_remote_size(inter, &rsize);
  if (rank >= rsize) {
    mt_log("%s: no partner", what);
    return;
  }
  MPI_Status st;
  out = 1000 * tag + mt_.rank;
  MPI_Sendrecv(&out, 1, MPI_INT, rank, tag, &in, 1, MPI_INT, rank, tag, inter, &st);
  mt_log("%s: got %d from remote rank %d tag %d", what, in, st.MPI_SOURCE, st.MPI_TAG);
}

static void show_merge(const char *what, MPI_Comm inter, int high)
{
  MPI_Comm merged;
  MPI_Intercomm_merge(inter, high, &merged);
  int size, all[4] = {-1, -1, -1, -1};
  MPI_Comm_size(merged, &size);
  MPI_Allgather(&mt_.rank, 1, MPI_INT, all, 1, MPI_INT, merged);
  mt_append("OK   %s: merged world ranks ", what);
  mt_fmt_ints(all, size);
  mt_append("\n");
  MPI_Comm_free(&merged);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("rebuild_inter");
  mt_require_size(4);
  const int me = mt_.rank, inA = me % 2 == 0;

  /* A = {0,2} in world order, B = {3,1}: local leaders are local rank 1 (world 2 and 1). */
  MPI_Comm local, inter, dup, split, half_inter, created, merged_before;
  MPI_Comm_split(MPI_COMM_WORLD, inA, inA ? me : -me, &local);
  MPI_Intercomm_create(local, 1, MPI_COMM_WORLD, inA ? 1 : 2, 77, &inter);
  MPI_Comm_dup(inter, &dup);
  MPI_Comm_set_name(dup, "dup of inter");
  int keyval;
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
  MPI_Comm_set_attr(dup, keyval, (void *)(intptr_t)(500 + me));
  /* Each side keeps its local rank 0 (world 0 and 3); the others get MPI_COMM_NULL. */
  int lrank;
  MPI_Comm_rank(inter, &lrank);
  MPI_Comm_split(inter, lrank == 0 ? 1 : MPI_UNDEFINED, 0, &split);
  /* Halves of a dup of world: {0,1} and {2,3}, leaders world 0 and 2, peer the dup. */
  MPI_Comm wdup, halves;
  MPI_Comm_dup(MPI_COMM_WORLD, &wdup);
  MPI_Comm_split(wdup, me / 2, me, &halves);
  MPI_Intercomm_create(halves, 0, wdup, me < 2 ? 2 : 0, 5, &half_inter);
  /* MPI_Comm_create on an intercommunicator: the whole local group on both sides. */
  MPI_Group lg;
  MPI_Comm_group(inter, &lg);
  MPI_Comm_create(inter, lg, &created);
  MPI_Group_free(&lg);
  MPI_Intercomm_merge(inter, inA, &merged_before);

  /* Traffic in flight over the drain: B's rank 0 (world 3) sends A's rank 0 (world 0) two
   * messages nobody has asked for; A's rank 1 (world 2) posts a receive from B's rank 1
   * (world 1) that is sent only after the rebuild; half_inter carries one message each way. */
  MPI_Request later = MPI_REQUEST_NULL;
  int later_v = -1;
  if (me == 3) {
    int v = 31;
    MPI_Send(&v, 1, MPI_INT, 0, 8, inter);
    v = 32;
    MPI_Send(&v, 1, MPI_INT, 0, 9, dup);
  }
  if (me == 2)
    MPI_Irecv(&later_v, 1, MPI_INT, 1, 10, inter, &later);
  int hv = 40 + me, hin = -1;
  MPI_Send(&hv, 1, MPI_INT, me % 2, 11, half_inter);
  MPI_Barrier(MPI_COMM_WORLD);

  drain_checked("with messages across intercommunicators", 1);

  show_remote("inter", inter);
  show_remote("dup", dup);
  if (split != MPI_COMM_NULL)
    show_remote("split", split);
  show_remote("half_inter", half_inter);
  show_remote("created", created);
  {
    char name[MPI_MAX_OBJECT_NAME];
    int len, flag;
    void *val;
    MPI_Comm_get_name(dup, name, &len);
    MPI_Comm_get_attr(dup, keyval, &val, &flag);
    mt_log("dup: name '%s', attribute %d (flag %d)", name, (int)(intptr_t)val, flag);
  }

  /* the messages that crossed the drain */
  if (me == 0) {
    int a = -1, b = -1;
    MPI_Status st;
    MPI_Recv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 9, dup, &st);
    mt_log("after the drain, on dup: %d from remote rank %d", b, st.MPI_SOURCE);
    MPI_Recv(&a, 1, MPI_INT, 0, MPI_ANY_TAG, inter, &st);
    mt_log("after the drain, on inter: %d from remote rank %d tag %d", a, st.MPI_SOURCE,
           st.MPI_TAG);
  }
  if (me == 1) {
    int v = 21;
    MPI_Send(&v, 1, MPI_INT, 1, 10, inter);
  }
  if (me == 2) {
    MPI_Status st;
    MPI_Wait(&later, &st);
    mt_log("posted before, sent after: %d from remote rank %d", later_v, st.MPI_SOURCE);
  }
  MPI_Recv(&hin, 1, MPI_INT, me % 2, 11, half_inter, MPI_STATUS_IGNORE);
  mt_log("half_inter: %d", hin);

  /* A's first member is world 0, B's is world 3: MPI calls A the low group. */
  show_p2p("inter", inter, 1);
  show_p2p("dup", dup, 2);
  show_p2p("half_inter", half_inter, 3);
  show_p2p("created", created, 4);
  if (split != MPI_COMM_NULL)
    show_p2p("split", split, 5);
  show_collectives("inter", inter, inA);
  show_collectives("dup", dup, inA);
  show_collectives("half_inter", half_inter, me < 2);
  show_collectives("created", created, inA);
  show_merge("inter merged, same high flag", inter, 0);
  show_merge("dup merged, B high", dup, !inA);
  show_merge("half_inter merged, same high flag", half_inter, 1);
  {
    int all[4];
    MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, merged_before);
    mt_append("OK   merged before the rebuild: world ranks ");
    mt_fmt_ints(all, 4);
    mt_append("\n");
  }

  /* A second rebuild, with an intercommunicator made from a rebuilt one's local side. */
  MPI_Comm again;
  MPI_Intercomm_create(local, 0, inter, 0, 6, &again);
  rebuild_checked("a second time");
  show_remote("made after the first rebuild", again);
  show_collectives("made after the first rebuild", again, inA);
  show_merge("made after the first rebuild, merged", again, 0);

  MPI_Comm_free(&again);
  MPI_Comm_free(&merged_before);
  MPI_Comm_free(&created);
  MPI_Comm_free(&half_inter);
  MPI_Comm_free(&halves);
  MPI_Comm_free(&wdup);
  if (split != MPI_COMM_NULL)
    MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  MPI_Comm_free_keyval(&keyval);
  return mt_end();
}
