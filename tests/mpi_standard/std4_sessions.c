/*
 * std4_sessions.c - the Sessions Model next to the World Model: MPI_Session_init with an info
 * object and an error handler, MPI_Session_get_info, process set queries
 * (MPI_Session_get_num_psets, MPI_Session_get_nth_pset, MPI_Session_get_pset_info),
 * MPI_Group_from_session_pset, MPI_Comm_create_from_group, communication on the session's
 * communicators, session error handlers, MPI_Session_finalize; MPI_Info_create_env.
 *
 * Source: MPI-4.1, chapter 12 (Process Initialization, Creation, and Management):
 *   section 12.3.4 "Sessions Model Examples", its three examples: (1) library_foo_init(): a
 *     session asking for thread_level MPI_THREAD_MULTIPLE, the level checked with
 *     MPI_Session_get_info and MPI_Info_get_string, a group from "mpi://WORLD" and a
 *     communicator from it with the stringtag "org.mpi-forum.mpi-v4_0.example-ex11_8";
 *     (2) the process set query: the process sets listed (name lengths asked first with a
 *     zero length and a NULL name), the one whose name holds a fragment selected, its
 *     "mpi_size" read with MPI_Session_get_pset_info (length first), a group made from it;
 *     (3) the Fortran 2008 example, in C: at least two process sets, the second one's name
 *     (index 1) with the length asked first, a group and a communicator ("session_example")
 *     from it, MPI_Barrier on it, then freed and the session finalized;
 *   section 12.3.1 (MPI_Session_init, MPI_Session_get_info) and 12.3.3 (the info key
 *     mpi_size), and section 10.3.4 "Error Handlers for Sessions" (no example there):
 *     MPI_Session_create_errhandler, MPI_Session_set_errhandler, MPI_Session_get_errhandler,
 *     MPI_Session_call_errhandler;
 *   section 12.2.1 "Starting MPI Processes": MPI_Info_create_env (its keys "command", "argv",
 *     "maxprocs" need not be there; those present are checked: Debian's MPICH 4.0.2 returns
 *     an empty info, and an empty MPI_INFO_ENV).
 * The HTML edition shows these examples as images; their code was read from a Markdown
 * rendering of the same standard text.
 * Adaptations: MPI is also initialized in the World Model (MPI_Init) for the checks and their
 * report on MPI_COMM_WORLD; the examples' printf/fprintf become checks; example 2's fragment,
 * its argv[1], is fixed ("WORLD", then "SELF"), and its "mpi_size" is compared with the size
 * of the world and 1; the communicators of examples 1 and 3 carry ROUNDS rounds of
 * communication (allreduce, a ring shift, a broadcast) checked against computed values, with
 * an MPI_Allreduce on MPI_COMM_WORLD between the rounds; example 1's thread level is checked
 * against the level MPI_Session_get_info reports (the example's failure branch, "Did not get
 * thread multiple support", is a failed check).  Example 3 runs on the second process set
 * whatever it is ("mpi://SELF" on MPICH): its communicator's size is checked against the set's
 * mpi_size.
 * Adapted because of Debian's MPICH 4.0.2: example 2 asks for the length of "mpi_size" with
 * valuelen 0 and a NULL value, which MPICH refuses ("Null pointer in parameter value"): a
 * one-byte buffer is passed instead, still with valuelen 0.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 4

static MPI_Session lib_shandle = MPI_SESSION_NULL;
static MPI_Comm lib_comm = MPI_COMM_NULL;

/* Example 1 */
static int library_foo_init(void)
{
  int rc, flag, valuelen;
  int ret = 0;
  const char pset_name[] = "mpi://WORLD";
  const char mt_key[] = "thread_level";
  const char mt_value[] = "MPI_THREAD_MULTIPLE";
  char out_value[100]; /* large enough */
  MPI_Group wgroup = MPI_GROUP_NULL;
  MPI_Info sinfo = MPI_INFO_NULL;
  MPI_Info tinfo = MPI_INFO_NULL;

  MPI_Info_create(&sinfo);
  MPI_Info_set(sinfo, mt_key, mt_value);
  rc = MPI_Session_init(sinfo, MPI_ERRORS_RETURN, &lib_shandle);
  if (rc != MPI_SUCCESS) {
    ret = -1;
    goto fn_exit;
  }

  /*
   * check we got thread support level foo library needs
   */
  rc = MPI_Session_get_info(lib_shandle, &tinfo);
  if (rc != MPI_SUCCESS) {
    ret = -1;
    goto fn_exit;
  }

  valuelen = sizeof(out_value);
  MPI_Info_get_string(tinfo, mt_key, &valuelen, out_value, &flag);
  if (0 == flag) {
    mt_check(0, "example 1: key %s in the session's info", mt_key);
    ret = -1;
    goto fn_exit;
  }

  if (strcmp(out_value, mt_value)) {
    mt_check(0, "example 1: thread multiple support (got %s)", out_value);
    ret = -1;
    goto fn_exit;
  }

  /*
   * create a group from the WORLD process set
   */
  rc = MPI_Group_from_session_pset(lib_shandle, pset_name, &wgroup);
  if (rc != MPI_SUCCESS) {
    ret = -1;
    goto fn_exit;
  }

  /*
   * get a communicator
   */
  rc = MPI_Comm_create_from_group(wgroup, "org.mpi-forum.mpi-v4_0.example-ex11_8", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &lib_comm);
  if (rc != MPI_SUCCESS) {
    ret = -1;
    goto fn_exit;
  }

  /*
   * free group, library doesn't need it.
   */

fn_exit:
  if (wgroup != MPI_GROUP_NULL)
    MPI_Group_free(&wgroup);

  if (sinfo != MPI_INFO_NULL) {
    MPI_Info_free(&sinfo);
  }

  if (tinfo != MPI_INFO_NULL) {
    MPI_Info_free(&tinfo);
  }

  if (ret != 0) {
    MPI_Session_finalize(&lib_shandle);
  }

  return ret;
}

/* Example 2, as a function of the fragment (its argv[1]); returns the group's size, or -1 */
static int pset_query(const char *fragment, int *mpi_size)
{
  int i, n_psets, psetlen, rc, ret;
  int valuelen;
  int flag = 0;
  char *pset_name = NULL;
  char *info_val = NULL;
  MPI_Session shandle = MPI_SESSION_NULL;
  MPI_Info sinfo = MPI_INFO_NULL;
  MPI_Group pgroup = MPI_GROUP_NULL;

  *mpi_size = -1;
  rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &shandle);
  if (rc != MPI_SUCCESS)
    return -1;

  MPI_Session_get_num_psets(shandle, MPI_INFO_NULL, &n_psets);

  for (i = 0, pset_name = NULL; i < n_psets; i++) {
    psetlen = 0;
    MPI_Session_get_nth_pset(shandle, MPI_INFO_NULL, i, &psetlen, NULL);
    pset_name = (char *)malloc(sizeof(char) * psetlen);
    MPI_Session_get_nth_pset(shandle, MPI_INFO_NULL, i, &psetlen, pset_name);
    if (strstr(pset_name, fragment) != NULL)
      break;

    free(pset_name);
    pset_name = NULL;
  }
  if (pset_name == NULL) {
    MPI_Session_finalize(&shandle);
    return -1;
  }

  /*
   * get instance of an info object for this Session
   */

  MPI_Session_get_pset_info(shandle, pset_name, &sinfo);
  valuelen = 0;
  /* the example passes NULL: Debian's MPICH 4.0.2 refuses a NULL value even with valuelen 0 */
  char no_value[1];
  MPI_Info_get_string(sinfo, "mpi_size", &valuelen, no_value, &flag);
  if (flag) {
    info_val = (char *)malloc(valuelen);
    MPI_Info_get_string(sinfo, "mpi_size", &valuelen, info_val, &flag);
    *mpi_size = atoi(info_val);
    free(info_val);
  }

  /*
   * create a group from the process set
   */

  rc = MPI_Group_from_session_pset(shandle, pset_name, &pgroup);
  ret = -1;
  if (rc == MPI_SUCCESS)
    MPI_Group_size(pgroup, &ret);

  free(pset_name);
  MPI_Group_free(&pgroup);
  MPI_Info_free(&sinfo);
  MPI_Session_finalize(&shandle);
  return ret;
}

static int n_errh;
static int last_code;
static void session_errh(MPI_Session *session, int *code, ...)
{
  (void)session;
  n_errh++;
  last_code = *code;
}

/* rounds of communication on a communicator made from a session */
static int exercise(MPI_Comm comm, int base)
{
  int r, n, bad = 0;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  for (int round = 0; round < ROUNDS; round++) {
    int v = base + r * 10 + round, s = 0, want = 0;
    for (int q = 0; q < n; q++)
      want += base + q * 10 + round;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, comm);
    bad += s != want;
    int next = (r + 1) % n, prev = (r + n - 1) % n, in = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, next, 7, &in, 1, MPI_INT, prev, 7, comm, MPI_STATUS_IGNORE);
    bad += in != base + prev * 10 + round;
    int b = r == round % n ? base * 3 + round : -1;
    MPI_Bcast(&b, 1, MPI_INT, round % n, comm);
    bad += b != base * 3 + round;
    /* between the rounds, a collective on the World Model's communicator */
    int w = 1, ws = 0;
    MPI_Allreduce(&w, &ws, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad += ws != mt_.size;
  }
  return bad;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std4_sessions");
  int size = mt_.size;

  /* Example 1 */
  int ret = library_foo_init();
  mt_check_int("example 1: library_foo_init() returned", ret, 0);
  if (ret == 0) {
    int r, n;
    MPI_Comm_rank(lib_comm, &r);
    MPI_Comm_size(lib_comm, &n);
    mt_check(r == mt_.rank && n == size, "example 1: lib_comm has the ranks of mpi://WORLD");
  }
  mt_allreduce_steps(2);

  /* Example 2 with the fragments "WORLD" and "SELF" */
  int mpi_size;
  int gsize = pset_query("WORLD", &mpi_size);
  mt_check(gsize == size && mpi_size == size,
           "example 2: \"WORLD\" set: group size %d, mpi_size %d", gsize, mpi_size);
  gsize = pset_query("SELF", &mpi_size);
  mt_check(gsize == 1 && mpi_size == 1, "example 2: \"SELF\" set: group size %d, mpi_size %d",
           gsize, mpi_size);

  /* Example 3 (Fortran 2008 in C), its session kept open for the rounds below */
  MPI_Session shandle;
  MPI_Group pgroup;
  MPI_Comm pcomm = MPI_COMM_NULL;
  int ierror, n_psets, pset_len;
  char *pset_name;
  ierror = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &shandle);
  mt_check_int("example 3: MPI_Session_init", ierror, MPI_SUCCESS);
  MPI_Session_get_num_psets(shandle, MPI_INFO_NULL, &n_psets);
  mt_check(n_psets >= 2, "example 3: MPI_Session_get_num_psets returned at least 2 psets");
  int nlisted, nstd = mt_standard_psets(shandle, &nlisted);
  mt_check_int("example 3: mpi://WORLD and mpi://SELF listed", nstd, 2);
  /* Just get the second pset's length and name */
  pset_len = 0;
  MPI_Session_get_nth_pset(shandle, MPI_INFO_NULL, 1, &pset_len, NULL);
  pset_name = mt_alloc((size_t)pset_len);
  MPI_Session_get_nth_pset(shandle, MPI_INFO_NULL, 1, &pset_len, pset_name);
  /* create a group from the pset */
  MPI_Group_from_session_pset(shandle, pset_name, &pgroup);
  MPI_Info psinfo;
  MPI_Session_get_pset_info(shandle, pset_name, &psinfo);
  char sz[32];
  int szlen = sizeof sz, flag = 0;
  MPI_Info_get_string(psinfo, "mpi_size", &szlen, sz, &flag);
  int want_size = flag ? atoi(sz) : -1;
  MPI_Info_free(&psinfo);
  /* free the buffer used for the pset name */
  free(pset_name);
  /* create a MPI communicator from the group */
  MPI_Comm_create_from_group(pgroup, "session_example", MPI_INFO_NULL, MPI_ERRORS_RETURN, &pcomm);
  ierror = MPI_Barrier(pcomm);
  mt_check_int("example 3: barrier on the communicator", ierror, MPI_SUCCESS);
  int psize;
  MPI_Comm_size(pcomm, &psize);
  mt_check(psize == want_size, "example 3: the second set's communicator has mpi_size processes");

  /* the communicators of examples 1 and 3 in use, several rounds */
  if (ret == 0)
    mt_check_int("example 1: lib_comm rounds: wrong", exercise(lib_comm, 100), 0);
  mt_check_int("example 3: pcomm rounds: wrong", exercise(pcomm, 200), 0);
  /* a second communicator from the WORLD set of example 3's session, and a split of it */
  MPI_Group wg;
  MPI_Comm wc, half;
  MPI_Group_from_session_pset(shandle, "mpi://WORLD", &wg);
  MPI_Comm_create_from_group(wg, "org.example.std4-sessions.world", MPI_INFO_NULL,
                             MPI_ERRORS_ARE_FATAL, &wc);
  MPI_Group_free(&wg);
  int wr;
  MPI_Comm_rank(wc, &wr);
  MPI_Comm_split(wc, wr % 2, -wr, &half);
  mt_check_int("a split of a session's WORLD communicator: rounds wrong", exercise(half, 300), 0);
  MPI_Comm_free(&half);
  mt_check_int("a session's WORLD communicator: rounds wrong", exercise(wc, 400), 0);
  MPI_Comm_free(&wc);

  /* error handlers for sessions */
  MPI_Errhandler eh, got;
  MPI_Session_create_errhandler(session_errh, &eh);
  MPI_Session_set_errhandler(shandle, eh);
  MPI_Session_get_errhandler(shandle, &got);
  mt_check(got == eh, "MPI_Session_get_errhandler returns the handler set");
  MPI_Errhandler_free(&got);
  MPI_Session_call_errhandler(shandle, MPI_ERR_OTHER);
  mt_check(n_errh == 1 && last_code == MPI_ERR_OTHER,
           "MPI_Session_call_errhandler invoked the handler once with MPI_ERR_OTHER");
  MPI_Session_set_errhandler(shandle, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);

  MPI_Comm_free(&pcomm);
  MPI_Group_free(&pgroup);
  ierror = MPI_Session_finalize(&shandle);
  mt_check(ierror == MPI_SUCCESS && shandle == MPI_SESSION_NULL, "example 3: MPI_Session_finalize");
  if (ret == 0) {
    MPI_Comm_free(&lib_comm);
    MPI_Session_finalize(&lib_shandle);
  }

  /* MPI_Info_create_env */
  MPI_Info env;
  MPI_Info_create_env(argc, argv, &env);
  int nkeys = -1, bad_env = 0;
  MPI_Info_get_nkeys(env, &nkeys);
  char v[1024];
  int vlen = sizeof v;
  flag = 0;
  MPI_Info_get_string(env, "maxprocs", &vlen, v, &flag);
  if (flag)
    bad_env += atoi(v) != size;
  vlen = sizeof v;
  MPI_Info_get_string(env, "command", &vlen, v, &flag);
  if (flag)
    bad_env += strstr(argv[0], v) == NULL && strstr(v, argv[0]) == NULL;
  MPI_Info dup;
  MPI_Info_dup(env, &dup);
  int nd = -2;
  MPI_Info_get_nkeys(dup, &nd);
  bad_env += nd != nkeys || nkeys < 0;
  MPI_Info_free(&dup);
  MPI_Info_free(&env);
  mt_check_int("MPI_Info_create_env: keys present with wrong values", bad_env, 0);

  mt_allreduce_steps(4);
  return mt_end();
}
