/*
 * ckpt_mpi_t.c - the MPI tool information interface in use across checkpoints: MPI_T is
 * initialized for the whole run and a control variable handle is held from start to end (as a
 * tool or a library tuning MPI would), while the program computes with MPI.  Every iteration
 * reads the variable through the held handle and asks MPI_T how many control variables and
 * categories there are: after a restart the answers must be those of before.  A performance
 * variable session is held as well (as a profiling tool makes one at start), and every
 * iteration starts and stops all of its handles: a checkpoint was refused while it existed,
 * and a restart must give it back usable.  The _get_info calls are also asked with NULL for
 * every output MPI lets a caller omit.
 *
 *   usage: ckpt_mpi_t [ITERS]   default 200
 *
 * Output depends only on the arguments and the rank count.  Ranks: any (2 in the tests).
 */
#include "mpitest.h"

/* The first integer control variable bound to no object, with one element, or -1. */
static int find_int_cvar(int num)
{
  for (int i = 0; i < num; i++) {
    char name[256], desc[1024];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS)
      continue;
    if (type == MPI_INT && bind == MPI_T_BIND_NO_OBJECT)
      return i;
  }
  return -1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("ckpt_mpi_t");
  const long iters = mt_arg("ckpt_mpi_t", argc, argv, 1, 200);
  int provided = -1;
  int rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  mt_check(rc == MPI_SUCCESS, "MPI_T initialized");
  int ncvars = 0, ncats = 0;
  MPI_T_cvar_get_num(&ncvars);
  MPI_T_category_get_num(&ncats);
  const int index = find_int_cvar(ncvars);
  mt_check(index >= 0, "an integer control variable bound to no object");
  /* MPI ignores the outputs a caller passes as NULL (MPICH's mpi_t/getindex does so). */
  char name[256];
  int name_len = sizeof name, npvars = 0;
  rc = MPI_T_cvar_get_info(index >= 0 ? index : 0, name, &name_len, NULL, NULL, NULL, NULL, NULL,
                           NULL, NULL);
  mt_check(rc == MPI_SUCCESS, "MPI_T_cvar_get_info with NULL outputs");
  MPI_T_pvar_get_num(&npvars);
  name_len = sizeof name;
  if (npvars > 0)
    mt_check(MPI_T_pvar_get_info(0, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                 NULL, NULL) == MPI_SUCCESS,
             "MPI_T_pvar_get_info with NULL outputs");
  MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
  mt_check(MPI_T_pvar_session_create(&session) == MPI_SUCCESS,
           "a performance variable session made");
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  int count = 0, first = 0;
  if (index >= 0) {
    MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
    MPI_T_cvar_read(handle, &first);
  }
  long wrong = 0;
  uint64_t digest = 1469598103934665603ULL;
  for (long it = 0; it < iters; it++) {
    int n = -1, c = -1, value = first - 1;
    if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS || n != ncvars)
      wrong++;
    if (MPI_T_category_get_num(&c) != MPI_SUCCESS || c != ncats)
      wrong++;
    if (index >= 0 && (MPI_T_cvar_read(handle, &value) != MPI_SUCCESS || value != first))
      wrong++;
    if (MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES) != MPI_SUCCESS ||
        MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES) != MPI_SUCCESS)
      wrong++;
    long mine = it + mt_.rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    digest = mt_mix(digest ^ (uint64_t)sum);
  }
  if (index >= 0)
    MPI_T_cvar_handle_free(&handle);
  mt_check(handle == MPI_T_CVAR_HANDLE_NULL, "the handle is null once freed");
  mt_check(MPI_T_pvar_session_free(&session) == MPI_SUCCESS && session == MPI_T_PVAR_SESSION_NULL,
           "the session freed, and null");
  mt_check_int("MPI_T answers that changed during the run", wrong, 0);
  mt_log("iterations %ld, digest %016llx", iters, (unsigned long long)digest);
  rc = MPI_T_finalize();
  mt_check(rc == MPI_SUCCESS, "MPI_T finalized");
  return mt_end();
}
