/* MPI-IO pieces that need more than handle translation: Fortran conversion of MPI_File (a
 * pointer in C, an integer in Fortran) and user data representations. */
#include "stub.h"

/* The virtual MPI_File is a 32-bit pattern already; Fortran gets it as is. */
MPI_Fint MPI_File_c2f(MPI_File file)
{
  return (MPI_Fint)(uint32_t)(uintptr_t)file;
}

MPI_File MPI_File_f2c(MPI_Fint file)
{
  return (MPI_File)(uintptr_t)(uint32_t)file;
}

struct datarep_record {
  MPI_Datarep_conversion_function *read, *write;
  MPI_Datarep_conversion_function_c *read_c, *write_c;
  MPI_Datarep_extent_function *extent;
  void *extra_state;
};

static MPI_Datatype virt_type(MPI_Datatype real)
{
  return (MPI_Datatype)mana_handle_virtual_of(MANA_KIND_DATATYPE, (uint32_t)real);
}

static int convert(int writing, void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf,
                   MPI_Offset position, void *extra)
{
  struct datarep_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc;
  if (r->read_c || r->write_c)
    rc = (writing ? r->write_c : r->read_c)(userbuf, virt_type(dt), count, filebuf, position,
                                            r->extra_state);
  else
    rc = (writing ? r->write : r->read)(userbuf, virt_type(dt), (int)count, filebuf, position,
                                        r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

static int read_tramp(void *u, MPI_Datatype dt, int n, void *f, MPI_Offset pos, void *extra)
{
  return convert(0, u, dt, n, f, pos, extra);
}
static int write_tramp(void *u, MPI_Datatype dt, int n, void *f, MPI_Offset pos, void *extra)
{
  return convert(1, u, dt, n, f, pos, extra);
}
static int read_tramp_c(void *u, MPI_Datatype dt, MPI_Count n, void *f, MPI_Offset pos, void *extra)
{
  return convert(0, u, dt, n, f, pos, extra);
}
static int write_tramp_c(void *u, MPI_Datatype dt, MPI_Count n, void *f, MPI_Offset pos,
                         void *extra)
{
  return convert(1, u, dt, n, f, pos, extra);
}

static int extent_tramp(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
  struct datarep_record *r = extra;
  uint64_t saved = mana_callback_enter();
  int rc = r->extent(virt_type(dt), extent, r->extra_state);
  mana_callback_leave(saved);
  return rc;
}

static struct datarep_record *record(void *extra, MPI_Datarep_extent_function *extent)
{
  struct datarep_record *r = calloc(1, sizeof(*r)); /* lives as long as the datarep: forever */
  if (r) {
    r->extra_state = extra;
    r->extent = extent;
  }
  return r;
}

int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_fn,
                         MPI_Datarep_conversion_function *write_fn,
                         MPI_Datarep_extent_function *extent_fn, void *extra_state)
{
  struct datarep_record *r = record(extra_state, extent_fn);
  if (!r)
    return MPI_ERR_NO_MEM;
  r->read = read_fn;
  r->write = write_fn;
  return MANA_LH_CALL(MPI_Register_datarep, datarep, read_fn ? read_tramp : NULL,
                      write_fn ? write_tramp : NULL, extent_fn ? extent_tramp : NULL, r);
}

int MPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_fn,
                           MPI_Datarep_conversion_function_c *write_fn,
                           MPI_Datarep_extent_function *extent_fn, void *extra_state)
{
  struct datarep_record *r = record(extra_state, extent_fn);
  if (!r)
    return MPI_ERR_NO_MEM;
  r->read_c = read_fn;
  r->write_c = write_fn;
  return MANA_LH_CALL(MPI_Register_datarep_c, datarep, read_fn ? read_tramp_c : NULL,
                      write_fn ? write_tramp_c : NULL, extent_fn ? extent_tramp : NULL, r);
}
