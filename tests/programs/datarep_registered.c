/*
 * datarep_registered.c - user data representations (MPI_Register_datarep) around a
 * checkpoint: a representation registered before must still be registered after, so that a
 * second registration of its name is refused with MPI_ERR_DUP_DATAREP, as natively; a restart
 * that forgot it let the name be registered again.  MPICH 4.0.2 registers a representation
 * only without conversion functions and sets no file view with one; both answers are checked
 * as MPI gives them.  Allreduces on MPI_COMM_WORLD give a checkpoint places to fall
 * (run_at_calls.sh).
 * Expected: the error classes and sums, identical under mana.
 * Ranks: 1 or more.
 */
#include <unistd.h>

#include "mpitest.h"

static int extent_calls;

static int extent_of(MPI_Datatype type, MPI_Aint *extent, void *extra)
{
  (void)type;
  extent_calls++;
  *extent = *(int *)extra;
  return MPI_SUCCESS;
}

static int convert(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset pos,
                   void *extra)
{
  (void)userbuf, (void)type, (void)count, (void)filebuf, (void)pos, (void)extra;
  return MPI_SUCCESS;
}

static int error_class(int rc)
{
  int cls = -1;
  MPI_Error_class(rc, &cls);
  return cls;
}

static void check_registered(const char *when, int *four)
{
  char what[128];
  snprintf(what, sizeof(what), "registering \"mana-four\" again %s", when);
  mt_check_int(what,
               error_class(MPI_Register_datarep("mana-four", MPI_CONVERSION_FN_NULL,
                                                MPI_CONVERSION_FN_NULL, extent_of, four)),
               MPI_ERR_DUP_DATAREP);
  snprintf(what, sizeof(what), "registering \"mana-big\" again %s", when);
  mt_check_int(what,
               error_class(MPI_Register_datarep_c("mana-big", MPI_CONVERSION_FN_NULL_C,
                                                  MPI_CONVERSION_FN_NULL_C, extent_of, four)),
               MPI_ERR_DUP_DATAREP);
}

int main(int argc, char **argv)
{
  static int four = 4;
  MPI_Init(&argc, &argv);
  mt_begin("datarep_registered");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  mt_check_int("registering \"mana-four\"",
               MPI_Register_datarep("mana-four", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL,
                                    extent_of, &four),
               MPI_SUCCESS);
  mt_check_int("registering \"mana-big\" (large counts)",
               MPI_Register_datarep_c("mana-big", MPI_CONVERSION_FN_NULL_C,
                                      MPI_CONVERSION_FN_NULL_C, extent_of, &four),
               MPI_SUCCESS);
  /* What MPI answers here is MPI's: MPICH refuses conversion functions. */
  int with_fns =
      error_class(MPI_Register_datarep("mana-converted", convert, convert, extent_of, &four));
  mt_check_int("registering \"mana-converted\" with conversion functions", with_fns, with_fns);
  check_registered("before the loop", &four);

  MPI_File fh;
  char path[64];
  snprintf(path, sizeof(path), "/tmp/mana-datarep-%d.dat", (int)getpid());
  int view = -1;
  if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                    MPI_INFO_NULL, &fh) == MPI_SUCCESS) {
    view = error_class(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "mana-four", MPI_INFO_NULL));
    MPI_File_close(&fh);
  }
  mt_check_int("a view in \"mana-four\" (MPI's answer, the same under mana)", view, view);

  mt_allreduce_steps(12);
  check_registered("after the loop", &four);
  mt_check_int("calls of the extent function", extent_calls, 0);
  return mt_end();
}
