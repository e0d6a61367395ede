/* MPI-IO pieces that need more than handle translation: Fortran conversion of MPI_File (a
 * pointer in C, an integer in Fortran) and user data representations.
 *
 * A data representation the application registered is registered again at restart, before
 * the files are opened again, in the order of the first registrations: a restarted MPI
 * would otherwise accept a second registration of the name, which MPI refuses with
 * MPI_ERR_DUP_DATAREP, and could not set a view that names it.  (MPICH 4.0.2 registers a
 * representation only without conversion functions, and sets no view with one.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

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
  int large; /* registered with MPI_Register_datarep_c */
  char *name;
  struct datarep_record *next;
};

/* Every representation MPI accepted, in order: they live as long as the process. */
static struct datarep_record *registered, **registered_end = &registered;

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

static struct datarep_record *record(const char *name, void *extra,
                                     MPI_Datarep_extent_function *extent)
{
  struct datarep_record *r = calloc(1, sizeof(*r));
  if (r && !(r->name = strdup(name ? name : ""))) {
    free(r);
    return NULL;
  }
  if (r) {
    r->extra_state = extra;
    r->extent = extent;
  }
  return r;
}

static int call_register(const struct datarep_record *r)
{
  if (r->large)
    return MANA_LH_CALL_NOPARK(MPI_Register_datarep_c, r->name, r->read_c ? read_tramp_c : NULL,
                               r->write_c ? write_tramp_c : NULL, r->extent ? extent_tramp : NULL,
                               (void *)r);
  return MANA_LH_CALL_NOPARK(MPI_Register_datarep, r->name, r->read ? read_tramp : NULL,
                             r->write ? write_tramp : NULL, r->extent ? extent_tramp : NULL,
                             (void *)r);
}

/* MPI keeps r once it accepted it; a refused one is the application's error to see. */
static int register_new(struct datarep_record *r)
{
  int rc = call_register(r);
  if (rc != MPI_SUCCESS) {
    free(r->name);
    free(r);
    return rc;
  }
  mana_stub_lock_take();
  *registered_end = r;
  registered_end = &r->next;
  mana_stub_lock_give();
  return rc;
}

int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_fn,
                         MPI_Datarep_conversion_function *write_fn,
                         MPI_Datarep_extent_function *extent_fn, void *extra_state)
{
  struct datarep_record *r = record(datarep, extra_state, extent_fn);
  if (!r)
    return MPI_ERR_NO_MEM;
  r->read = read_fn;
  r->write = write_fn;
  return register_new(r);
}

int MPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_fn,
                           MPI_Datarep_conversion_function_c *write_fn,
                           MPI_Datarep_extent_function *extent_fn, void *extra_state)
{
  struct datarep_record *r = record(datarep, extra_state, extent_fn);
  if (!r)
    return MPI_ERR_NO_MEM;
  r->large = 1;
  r->read_c = read_fn;
  r->write_c = write_fn;
  return register_new(r);
}

/* MPI cannot forget a representation: the rebuild in place finds them all registered still. */
static int rebuild(void)
{
  for (const struct datarep_record *r = registered; r; r = r->next) {
    int rc = call_register(r), cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
      MANA_LH_CALL_NOPARK(MPI_Error_class, rc, &cls);
    if (rc != MPI_SUCCESS && cls != MPI_ERR_DUP_DATAREP) {
      char what[MPI_MAX_DATAREP_STRING + 32];
      snprintf(what, sizeof(what), "data representation \"%s\"", r->name);
      return mana_rebuild_error(what, 0, "MPI_Register_datarep", rc);
    }
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_datarep_ops = {
    .name = "data representation",
    .rebuild = rebuild,
};
