/*
 * std4_shm_win.c - communicators split by type (shared memory, hardware guided and unguided)
 * and shared memory windows: MPI_Comm_split_type, MPI_Win_allocate_shared,
 * MPI_Win_shared_query, load/store accesses synchronized with MPI_Win_sync and point-to-point
 * messages, and RMA on a shared memory window.
 *
 * Source: MPI-4.1 (section numbers of the HTML edition):
 *   chapter 8, section 8.4.2 "Communicator Constructors", MPI_COMM_SPLIT_TYPE: its example
 *     (recursive splitting of MPI_COMM_WORLD with MPI_COMM_TYPE_HW_UNGUIDED, each level's
 *     communicator split again, keyed by the rank, until MPI_COMM_NULL or MAX_NUM_LEVELS),
 *     and its definitions (no example there): MPI_COMM_TYPE_SHARED; MPI_COMM_TYPE_HW_GUIDED
 *     with mpi_hw_resource_type "mpi_shared_memory" equivalent to MPI_COMM_TYPE_SHARED, and
 *     MPI_COMM_NULL for MPI_INFO_NULL or an info without the key; MPI_UNDEFINED giving
 *     MPI_COMM_NULL; the order of the new ranks given by the key; for HW_UNGUIDED, each new
 *     communicator a strict subset, and the key mpi_hw_resource_type set in a valid info;
 *   chapter 13, section 13.2.3 "Window That Allocates Shared Memory" (no example there):
 *     MPI_Win_allocate_shared, contiguous by default (the segment of rank r+1 follows that of
 *     rank r), alloc_shared_noncontig, MPI_Win_shared_query of each rank and of
 *     MPI_PROC_NULL (the segment of the lowest rank with a nonzero size);
 *   chapter 13, section 13.8 "Examples", the example of load/store accesses to a variable X
 *     of a shared memory window, synchronized between process A and process B by
 *     point-to-point messages and MPI_Win_sync calls inside MPI_Win_lock_all(MPI_MODE_NOCHECK)
 *     and MPI_Win_unlock_all (the 9th example of the section; in MPI-3.1, left out of
 *     std_rma_passive).
 * The HTML edition shows 13.8's example as an image; its code was read from a Markdown
 * rendering of the same standard text, and the split example from it too.
 * Adaptations: the 13.8 example's "DO ..." loop runs ITER times; X is an int in the segment
 * of process A = rank 0, process B = rank 1 reaches it through MPI_Win_shared_query; A writes
 * X = a value of the iteration, B checks it ("print X") and, as an addition, writes its
 * answer into a second variable Y that A checks after its second MPI_Win_sync (the example's
 * second synchronization, which orders B's accesses before A's next ones).  The other ranks
 * only open and close their epochs.  Each window's contents also go through a few rounds of
 * fence-separated direct loads and stores of the neighbors' segments and MPI_Put/MPI_Get
 * (active target), with MPI_Allreduce on MPI_COMM_WORLD between rounds.  The number of levels
 * the HW_UNGUIDED split finds depends on the machine (none with Debian's MPICH 4.0.2 here): it
 * is not printed, only the properties of each level are checked.
 * Ranks: 2 or more, on one node.
 */
#include "../programs/mpitest.h"

#define ITER 8
#define ROUNDS 3
#define N 16
#define MAX_NUM_LEVELS 32

static void split_checks(void)
{
  int rank = mt_.rank, size = mt_.size, bad = 0;

  /* MPI_COMM_TYPE_SHARED, keyed by the reversed rank */
  MPI_Comm shm, hwg, nul;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &shm);
  int sr, ss;
  MPI_Comm_rank(shm, &sr);
  MPI_Comm_size(shm, &ss);
  mt_check(ss == size && sr == size - 1 - rank,
           "MPI_COMM_TYPE_SHARED: every rank, ordered by the key (reversed)");
  MPI_Comm_free(&shm);

  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  /* HW_GUIDED with "mpi_shared_memory" is the same split */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &hwg);
  int cmp = -1;
  if (hwg != MPI_COMM_NULL)
    MPI_Comm_compare(shm, hwg, &cmp);
  mt_check(cmp == MPI_CONGRUENT,
           "MPI_COMM_TYPE_HW_GUIDED \"mpi_shared_memory\" congruent with MPI_COMM_TYPE_SHARED");
  if (hwg != MPI_COMM_NULL)
    MPI_Comm_free(&hwg);
  MPI_Info_free(&info);
  MPI_Comm_free(&shm);

  /* HW_GUIDED without the key: MPI_COMM_NULL */
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &nul);
  bad += nul != MPI_COMM_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "shmem_topo", "core");
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &nul);
  bad += nul != MPI_COMM_NULL;
  MPI_Info_free(&info);
  mt_check_int("MPI_COMM_TYPE_HW_GUIDED without mpi_hw_resource_type: not MPI_COMM_NULL", bad, 0);

  /* MPI_UNDEFINED on the odd ranks */
  MPI_Comm part;
  MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                      MPI_INFO_NULL, &part);
  int ok = rank % 2 ? part == MPI_COMM_NULL : part != MPI_COMM_NULL;
  if (part != MPI_COMM_NULL) {
    int ps;
    MPI_Comm_size(part, &ps);
    ok &= ps == (size + 1) / 2;
    MPI_Comm_free(&part);
  }
  mt_check(ok, "MPI_UNDEFINED: MPI_COMM_NULL on the odd ranks, the even ones together");

  /* the recursive splitting example */
  MPI_Comm hwcomm[MAX_NUM_LEVELS];
  int level_num = 0;

  hwcomm[level_num] = MPI_COMM_WORLD;

  while ((hwcomm[level_num] != MPI_COMM_NULL) && (level_num < MAX_NUM_LEVELS - 1)) {
    MPI_Comm_rank(hwcomm[level_num], &rank);
    MPI_Comm_split_type(hwcomm[level_num], MPI_COMM_TYPE_HW_UNGUIDED, rank, MPI_INFO_NULL,
                        &hwcomm[level_num + 1]);
    level_num++;
  }
  /* each level a strict subset of the previous one, ranks in the previous order */
  int bad_lv = 0;
  for (int l = 1; l < level_num && hwcomm[l] != MPI_COMM_NULL; l++) {
    int ps, cs;
    MPI_Comm_size(hwcomm[l - 1], &ps);
    MPI_Comm_size(hwcomm[l], &cs);
    bad_lv += cs >= ps;
    MPI_Group pg, cg;
    MPI_Comm_group(hwcomm[l - 1], &pg);
    MPI_Comm_group(hwcomm[l], &cg);
    int *in = mt_alloc(sizeof(int) * cs), *out = mt_alloc(sizeof(int) * cs);
    for (int i = 0; i < cs; i++)
      in[i] = i;
    MPI_Group_translate_ranks(cg, cs, in, pg, out);
    for (int i = 1; i < cs; i++)
      bad_lv += out[i] <= out[i - 1];
    free(in);
    free(out);
    MPI_Group_free(&pg);
    MPI_Group_free(&cg);
  }
  for (int l = 1; l < level_num; l++)
    if (hwcomm[l] != MPI_COMM_NULL)
      MPI_Comm_free(&hwcomm[l]);
  mt_check_int("recursive HW_UNGUIDED splitting: levels not strict ordered subsets", bad_lv, 0);

  /* with a valid info: the resource type is set whenever a communicator is returned */
  MPI_Comm unguided;
  MPI_Info_create(&info);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, info, &unguided);
  int flag = 0, bad_key = 0;
  char value[MPI_MAX_INFO_VAL + 1];
  int vlen = sizeof value;
  MPI_Info_get_string(info, "mpi_hw_resource_type", &vlen, value, &flag);
  if (unguided != MPI_COMM_NULL) {
    bad_key = !flag;
    MPI_Comm_free(&unguided);
  }
  MPI_Info_free(&info);
  mt_check_int("HW_UNGUIDED with an info: communicator without mpi_hw_resource_type", bad_key, 0);
}

/* a shared memory window: segments of (rank + 1) * N ints */
static void window_checks(int noncontig, MPI_Comm shm, const char *what)
{
  int rank, size;
  MPI_Comm_rank(shm, &rank);
  MPI_Comm_size(shm, &size);
  MPI_Info info = MPI_INFO_NULL;
  if (noncontig) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
  }
  int *base;
  MPI_Win win;
  MPI_Aint mysize = (MPI_Aint)((rank + 1) * N * sizeof(int));
  MPI_Win_allocate_shared(mysize, sizeof(int), info, shm, &base, &win);
  if (info != MPI_INFO_NULL)
    MPI_Info_free(&info);

  int **seg = mt_alloc(sizeof(int *) * size);
  int bad = 0;
  for (int q = 0; q < size; q++) {
    MPI_Aint qs;
    int du;
    MPI_Win_shared_query(win, q, &qs, &du, &seg[q]);
    bad += qs != (MPI_Aint)((q + 1) * N * sizeof(int)) || du != (int)sizeof(int);
    if (!noncontig && q > 0)
      bad += seg[q] != seg[q - 1] + q * N; /* contiguous: follows the previous segment */
  }
  bad += seg[rank] != base;
  {
    MPI_Aint qs;
    int du;
    int *p;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &qs, &du, &p);
    bad += p != seg[0] || qs != (MPI_Aint)(N * sizeof(int));
  }
  int flavor_flag = 0, *flavor = NULL;
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_flag);
  bad += !flavor_flag || *flavor != MPI_WIN_FLAVOR_SHARED;
  char m[96];
  snprintf(m, sizeof m, "%s: segments, sizes, disp units, flavor", what);
  mt_check_int(m, bad, 0);

  /* rounds: fence, own stores, fence, loads of the next rank's segment, put and get */
  int bad_r = 0;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int round = 0; round < ROUNDS; round++) {
    MPI_Win_fence(0, win);
    for (int i = 0; i < (rank + 1) * N; i++)
      base[i] = rank * 10000 + round * 100 + i;
    MPI_Win_fence(0, win);
    for (int i = 0; i < (next + 1) * N; i++)
      bad_r += seg[next][i] != next * 10000 + round * 100 + i;
    MPI_Win_fence(0, win);
    /* put one value into element 0 of the next rank's segment, get element 1 of the previous
     * rank's */
    int pv = -(rank * 100 + round + 1), gv = 0;
    MPI_Put(&pv, 1, MPI_INT, next, 0, 1, MPI_INT, win);
    MPI_Get(&gv, 1, MPI_INT, prev, 1, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    bad_r += base[0] != -(prev * 100 + round + 1);
    bad_r += gv != prev * 10000 + round * 100 + 1;
    int one = 1, s = 0;
    MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad_r += s != mt_.size;
  }
  snprintf(m, sizeof m, "%s: fenced loads, stores, put and get: wrong", what);
  mt_check_int(m, bad_r, 0);

  /* 13.8: load/store with MPI_Win_sync and point-to-point synchronization */
  if (!noncontig) {
    int *X = &seg[0][2], *Y = &seg[0][3];
    int bad_x = 0, dummy = 0;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (int it = 0; it < ITER; it++) {
      if (rank == 0) { /* process A */
        *X = 1000 + it;
        MPI_Win_sync(win);
        MPI_Send(&dummy, 0, MPI_INT, 1, it, shm);
        MPI_Recv(&dummy, 0, MPI_INT, 1, it, shm, MPI_STATUS_IGNORE);
        MPI_Win_sync(win);
        bad_x += *Y != 2000 + it; /* B's answer (an addition) */
      } else if (rank == 1) {     /* process B */
        MPI_Recv(&dummy, 0, MPI_INT, 0, it, shm, MPI_STATUS_IGNORE);
        MPI_Win_sync(win);
        bad_x += *X != 1000 + it; /* print X */
        *Y = *X + 1000;
        MPI_Win_sync(win);
        MPI_Send(&dummy, 0, MPI_INT, 0, it, shm);
      }
    }
    MPI_Win_unlock_all(win);
    mt_check_int("13.8 shared memory X with MPI_Win_sync and send/recv: wrong", bad_x, 0);
  }
  free(seg);
  MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std4_shm_win");
  split_checks();
  mt_allreduce_steps(2);
  MPI_Comm shm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  window_checks(0, shm, "MPI_Win_allocate_shared (contiguous)");
  mt_allreduce_steps(2);
  window_checks(1, shm, "MPI_Win_allocate_shared (alloc_shared_noncontig)");
  MPI_Comm_free(&shm);
  mt_allreduce_steps(4);
  return mt_end();
}
