/*
 * misc.c - environment and miscellaneous calls: MPI_Initialized/MPI_Finalized before and
 * after, Get_version, Get_library_version (starts with "MPICH"; the text itself is not
 * printed), Get_processor_name (only its length is checked against gethostname), Wtime
 * monotonic and Wtick positive, Query_thread, Is_thread_main, Comm_get_parent is
 * MPI_COMM_NULL, MPI_Pcontrol, Alloc_mem/Free_mem, Get_address/Aint_add/Aint_diff,
 * MPI_COMM_SELF, and that MPI_Finalized is true after MPI_Finalize.
 * Ranks: 2.
 */
#include "mpitest.h"
#include <unistd.h>

int main(int argc, char **argv)
{
  int flag = -1;
  MPI_Initialized(&flag);
  int init_before = flag;
  MPI_Finalized(&flag);
  int fin_before = flag;

  MPI_Init(&argc, &argv);
  mt_begin("misc");
  const int me = mt_.rank;
  mt_check(init_before == 0 && fin_before == 0, "before MPI_Init: initialized %d finalized %d",
           init_before, fin_before);
  MPI_Initialized(&flag);
  mt_check_int("initialized after MPI_Init", flag, 1);
  MPI_Finalized(&flag);
  mt_check_int("finalized before MPI_Finalize", flag, 0);

  int ver, sub;
  MPI_Get_version(&ver, &sub);
  mt_check(ver == MPI_VERSION && sub == MPI_SUBVERSION, "get_version = %d.%d", ver, sub);

  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int liblen;
  MPI_Get_library_version(lib, &liblen);
  mt_check(strncmp(lib, "MPICH", 5) == 0 && liblen > 5 && liblen < MPI_MAX_LIBRARY_VERSION_STRING,
           "library version string starts with MPICH");

  char pname[MPI_MAX_PROCESSOR_NAME], host[256];
  int plen;
  MPI_Get_processor_name(pname, &plen);
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  mt_check(plen > 0 && plen == (int)strlen(pname) && plen == (int)strlen(host),
           "processor name length matches strlen and the host name length");

  /* Wtime: monotonic over many calls, and advances across a short sleep */
  {
    double t0 = MPI_Wtime(), prev = t0;
    int mono = 1;
    for (int i = 0; i < 10000; i++) {
      double t = MPI_Wtime();
      if (t < prev)
        mono = 0;
      prev = t;
    }
    usleep(20000);
    double t1 = MPI_Wtime();
    mt_check(mono, "wtime monotonic over 10000 calls");
    mt_check(t1 - t0 >= 0.019 && t1 - t0 < 30.0, "wtime advances across a 20 ms sleep");
    double tick = MPI_Wtick();
    mt_check(tick > 0 && tick < 1.0, "wtick is positive and below 1 s");
  }

  int level, ismain;
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&ismain);
  mt_log("query_thread after MPI_Init = %d", level);
  mt_check_int("is_thread_main", ismain, 1);

  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  mt_check(parent == MPI_COMM_NULL, "comm_get_parent is MPI_COMM_NULL");

  MPI_Pcontrol(0);
  MPI_Pcontrol(1);
  MPI_Pcontrol(2, "extra", 3);
  mt_log("pcontrol(0), pcontrol(1), pcontrol(2, ...) returned");

  /* MPI_Alloc_mem / Free_mem, used as a message buffer */
  {
    int *m = NULL;
    MPI_Alloc_mem(64 * sizeof(int), MPI_INFO_NULL, &m);
    mt_check(m != NULL, "alloc_mem returned memory");
    for (int i = 0; i < 64; i++)
      m[i] = me * 64 + i;
    int peer = (me + 1) % mt_.size, from = (me + mt_.size - 1) % mt_.size;
    MPI_Sendrecv_replace(m, 64, MPI_INT, peer, 0, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int ok = 1;
    for (int i = 0; i < 64; i++)
      if (m[i] != from * 64 + i)
        ok = 0;
    mt_check(ok, "alloc_mem buffer usable for communication");
    MPI_Free_mem(m);
  }

  /* address arithmetic */
  {
    double arr[10];
    MPI_Aint a0, a7;
    MPI_Get_address(&arr[0], &a0);
    MPI_Get_address(&arr[7], &a7);
    mt_check_int("aint_diff(&arr[7], &arr[0])", (long long)MPI_Aint_diff(a7, a0), 56);
    mt_check(MPI_Aint_add(a0, 56) == a7, "aint_add(&arr[0], 56) == &arr[7]");
  }

  /* MPI_COMM_SELF works as a communicator */
  {
    int sz, rk, v = me + 5, out = 0;
    MPI_Comm_size(MPI_COMM_SELF, &sz);
    MPI_Comm_rank(MPI_COMM_SELF, &rk);
    MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    mt_check(sz == 1 && rk == 0 && out == v, "allreduce on MPI_COMM_SELF");
  }

  int status = mt_report();
  MPI_Finalize();
  MPI_Finalized(&flag);
  int init_after;
  MPI_Initialized(&init_after);
  if (me == 0) {
    printf("after MPI_Finalize: finalized %d, initialized %d%s\n", flag, init_after,
           flag == 1 && init_after == 1 ? "" : "  FAIL");
    if (flag != 1 || init_after != 1)
      status = 1;
  }
  return status;
}
