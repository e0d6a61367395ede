/*
 * errhandler.c - error handling:
 *   - the default handler of MPI_COMM_WORLD is MPI_ERRORS_ARE_FATAL;
 *   - MPI_ERRORS_RETURN on a duplicated communicator, then erroneous calls (invalid rank,
 *     negative count, invalid tag, invalid root, truncated receive) return error codes whose
 *     MPI_Error_class is checked; MPI_Error_string of the class is printed (the string of
 *     the code itself may contain addresses, so only its length is checked);
 *   - a user handler from MPI_Comm_create_errhandler is invoked with the communicator and
 *     the code, and the call then returns that code; MPI_Comm_call_errhandler;
 *     MPI_Comm_get_errhandler; MPI_Errhandler_free;
 *   - a window error handler invoked with MPI_Win_call_errhandler;
 *   - MPI_Add_error_class / Add_error_code / Add_error_string round trip;
 *   - MPI_Alltoallw with the same buffer and type array on both sides (MPI_ERR_BUFFER), a
 *     barrier through a copy of a freed communicator's handle (MPI_ERR_COMM).
 * Communication still works on the communicator after each error.
 * Ranks: 2.
 */
#include "mpitest.h"

static int handler_calls, handler_last_code, handler_bad_comm;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void my_handler(MPI_Comm *comm, int *code, ...)
{
  handler_calls++;
  handler_last_code = *code;
  if (*comm != handler_comm)
    handler_bad_comm++;
}

static int win_calls, win_code;
static MPI_Win the_win = MPI_WIN_NULL;
static void my_win_handler(MPI_Win *win, int *code, ...)
{
  win_calls++;
  win_code = *code;
  if (*win != the_win)
    handler_bad_comm++;
}

static const char *class_name(int c)
{
  switch (c) {
  case MPI_SUCCESS:
    return "MPI_SUCCESS";
  case MPI_ERR_RANK:
    return "MPI_ERR_RANK";
  case MPI_ERR_COUNT:
    return "MPI_ERR_COUNT";
  case MPI_ERR_TAG:
    return "MPI_ERR_TAG";
  case MPI_ERR_ROOT:
    return "MPI_ERR_ROOT";
  case MPI_ERR_TRUNCATE:
    return "MPI_ERR_TRUNCATE";
  case MPI_ERR_OTHER:
    return "MPI_ERR_OTHER";
  case MPI_ERR_COMM:
    return "MPI_ERR_COMM";
  case MPI_ERR_TYPE:
    return "MPI_ERR_TYPE";
  case MPI_ERR_ARG:
    return "MPI_ERR_ARG";
  case MPI_ERR_BUFFER:
    return "MPI_ERR_BUFFER";
  default:
    return "other class";
  }
}

/* check that rc is an error of class eclass and log the class string */
static void expect_class(const char *what, int rc, int eclass)
{
  int cls = MPI_SUCCESS, len = 0, clen = 0;
  char s[MPI_MAX_ERROR_STRING], cs[MPI_MAX_ERROR_STRING];
  if (rc != MPI_SUCCESS)
    MPI_Error_class(rc, &cls);
  mt_check(cls == eclass, "%s: returned error of class %s", what, class_name(cls));
  if (rc != MPI_SUCCESS) {
    MPI_Error_string(rc, s, &len);
    MPI_Error_string(cls, cs, &clen);
    mt_check(len > 0 && clen > 0 && (int)strlen(cs) == clen,
             "%s: error string of the code is non-empty", what);
    mt_log("  class string: \"%s\"", cs);
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("errhandler");
  mt_require_size(2);
  const int me = mt_.rank, peer = 1 - me;
  int rc;

  {
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    mt_check(eh == MPI_ERRORS_ARE_FATAL, "default world errhandler is MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&eh);
  }

  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  {
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(c, &eh);
    mt_check(eh == MPI_ERRORS_RETURN, "get_errhandler after set gives MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
  }

  int x = 1;
  rc = MPI_Send(&x, 1, MPI_INT, 5, 0, c);
  expect_class("send to rank 5 of 2", rc, MPI_ERR_RANK);
  rc = MPI_Send(&x, -1, MPI_INT, peer, 0, c);
  expect_class("send with count -1", rc, MPI_ERR_COUNT);
  rc = MPI_Send(&x, 1, MPI_INT, peer, -7, c);
  expect_class("send with tag -7", rc, MPI_ERR_TAG);
  rc = MPI_Bcast(&x, 1, MPI_INT, 9, c); /* every rank detects the bad root locally */
  expect_class("bcast with root 9", rc, MPI_ERR_ROOT);

  /* truncation: 10 ints into room for 4 */
  {
    int big[10], small[4];
    for (int i = 0; i < 10; i++)
      big[i] = i;
    if (me == 0) {
      MPI_Send(big, 10, MPI_INT, 1, 3, c);
      mt_log("sent 10 ints for the truncation test");
    } else {
      MPI_Status st;
      rc = MPI_Recv(small, 4, MPI_INT, 0, 3, c, &st);
      expect_class("receive 10 ints into 4", rc, MPI_ERR_TRUNCATE);
    }
  }

  /* the same buffer and the same type array on both sides of MPI_Alltoallw: MPICH reports
   * aliasing only when the type arrays are the same array */
  {
    int buf[4] = {0}, counts[2] = {1, 1}, displs[2] = {0, 4};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    rc = MPI_Alltoallw(buf, counts, displs, types, buf, counts, displs, types, c);
    expect_class("alltoallw with aliased buffers", rc, MPI_ERR_BUFFER);
  }

  /* a barrier through a copy of a freed communicator's handle: an error, not another
   * communicator that happens to have the freed one's handle inside MPI */
  {
    MPI_Comm gone, copy;
    MPI_Comm_dup(c, &gone);
    copy = gone;
    MPI_Comm_free(&gone);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Barrier(copy);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    expect_class("barrier on a freed communicator", rc, MPI_ERR_COMM);
  }

  /* the communicator still works */
  {
    int in = -1;
    rc = MPI_Sendrecv(&me, 1, MPI_INT, peer, 4, &in, 1, MPI_INT, peer, 4, c, MPI_STATUS_IGNORE);
    mt_check(rc == MPI_SUCCESS && in == peer, "sendrecv after errors succeeds (got %d)", in);
  }

  /* user-defined handler */
  {
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(my_handler, &eh);
    MPI_Comm_set_errhandler(c, eh);
    MPI_Errhandler_free(&eh); /* the communicator keeps its own reference */
    mt_check(eh == MPI_ERRHANDLER_NULL, "errhandler_free sets MPI_ERRHANDLER_NULL");
    handler_comm = c;
    rc = MPI_Send(&x, 1, MPI_INT, 7, 0, c);
    int cls;
    MPI_Error_class(rc, &cls);
    mt_check(handler_calls == 1 && handler_last_code == rc && cls == MPI_ERR_RANK,
             "user handler called %d time(s) with the returned code, class %s", handler_calls,
             class_name(cls));
    MPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    mt_check(handler_calls == 2 && handler_last_code == MPI_ERR_OTHER,
             "comm_call_errhandler invokes it with MPI_ERR_OTHER (calls %d)", handler_calls);
    int in = -1;
    rc = MPI_Sendrecv(&me, 1, MPI_INT, peer, 5, &in, 1, MPI_INT, peer, 5, c, MPI_STATUS_IGNORE);
    mt_check(rc == MPI_SUCCESS && in == peer && handler_calls == 2,
             "successful call does not invoke the handler");
    /* handler is inherited by a dup */
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    handler_comm = d;
    MPI_Comm_call_errhandler(d, MPI_ERR_ARG);
    mt_check(handler_calls == 3 && handler_last_code == MPI_ERR_ARG,
             "dup inherits the user handler");
    MPI_Comm_free(&d);
  }

  /* window error handler */
  {
    int buf[2];
    MPI_Win win;
    MPI_Errhandler weh;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    the_win = win;
    MPI_Win_create_errhandler(my_win_handler, &weh);
    MPI_Win_set_errhandler(win, weh);
    MPI_Errhandler_free(&weh);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    mt_check(win_calls == 1 && win_code == MPI_ERR_OTHER,
             "win_call_errhandler invoked the window handler");
    MPI_Win_free(&win);
  }

  /* user error classes, codes and strings */
  {
    int cls, code, code_cls, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(cls, "mana test class");
    MPI_Add_error_string(code, "mana test code");
    MPI_Error_class(code, &code_cls);
    mt_check(code_cls == cls, "error_class of the added code is the added class");
    MPI_Error_string(code, s, &len);
    mt_check(strcmp(s, "mana test code") == 0 && len == 14, "added code string: \"%s\"", s);
    MPI_Error_string(cls, s, &len);
    mt_check(strcmp(s, "mana test class") == 0, "added class string: \"%s\"", s);
    /* the user handler sees the user code */
    handler_comm = c;
    MPI_Comm_call_errhandler(c, code);
    mt_check(handler_last_code == code, "user handler receives the user code");
    void *lastused;
    int flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused, &flag);
    /* MPICH 4.0.2 updates MPI_LASTUSEDCODE for added classes but not for added codes
     * (those are encoded as class + (n << 8) and can be larger), so only the class is checked */
    mt_check(flag && *(int *)lastused >= cls, "MPI_LASTUSEDCODE covers the added class");
  }

  mt_check_int("handlers that received a foreign handle", handler_bad_comm, 0);
  MPI_Comm_free(&c);
  return mt_end();
}
