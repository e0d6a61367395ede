/* What the real Fortran and C++ bindings (libmpichfort.so.12, loaded unchanged into the upper half) and
 * mpi.h-compiled applications need from libmpich.so.12 besides the MPI functions: MPICH's
 * sentinel objects, status conversion, and the MPII_ attribute entry points (the mark of a Fortran
 * generalized request is grequest.c's). */
#include "records.h"

/* Sentinels: applications compare and pass their addresses, so the stub owns its own and
 * translates them on the way to the real library. */
static int unweighted_obj, weights_empty_obj;
int *const MPI_UNWEIGHTED = &unweighted_obj;
int *const MPI_WEIGHTS_EMPTY = &weights_empty_obj;
/* The mpi_f08 binding passes the values of these for its own MPI_UNWEIGHTED and
 * MPI_WEIGHTS_EMPTY.  libmpichfort defines them as well, and its definition is the one every
 * library uses when it comes first in the program's link order (it does with mpifort), so they
 * are set when the stub is loaded, through the symbol, not at its definition. */
int *MPIR_C_MPI_UNWEIGHTED;
int *MPIR_C_MPI_WEIGHTS_EMPTY;

__attribute__((constructor)) static void set_f08_sentinels(void)
{
  MPIR_C_MPI_UNWEIGHTED = MPI_UNWEIGHTED;
  MPIR_C_MPI_WEIGHTS_EMPTY = MPI_WEIGHTS_EMPTY;
}

static MPI_Fint f_status_ignore_obj[MPI_F_STATUS_SIZE];
MPI_Fint *MPI_F_STATUS_IGNORE = f_status_ignore_obj;
MPI_Fint *MPI_F_STATUSES_IGNORE = f_status_ignore_obj;
MPI_F08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ;
MPI_F08_status MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1];
MPI_F08_status *MPI_F08_STATUS_IGNORE = &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
MPI_F08_status *MPI_F08_STATUSES_IGNORE = MPIR_F08_MPI_STATUSES_IGNORE_OBJ;
int MPIR_F08_MPI_IN_PLACE;
int MPIR_F08_MPI_BOTTOM;

static struct MPIR_T_pvar_handle_s *pvar_all_handles_obj;
struct MPIR_T_pvar_handle_s *const MPI_T_PVAR_ALL_HANDLES =
    (struct MPIR_T_pvar_handle_s *)&pvar_all_handles_obj;

MPI_T_pvar_handle mana_pvar_handle(MPI_T_pvar_handle handle)
{
  return handle == MPI_T_PVAR_ALL_HANDLES ? MANA_BOUNDARY->lh->svc.pvar_all_handles : handle;
}

int *mana_weights(const int *weights)
{
  const struct mana_lh_services *svc = &MANA_BOUNDARY->lh->svc;
  if (weights == MPI_UNWEIGHTED)
    return svc->unweighted;
  if (weights == MPI_WEIGHTS_EMPTY)
    return svc->weights_empty;
  return (int *)weights;
}

static MPI_Fint *real_f_status(const MPI_Fint *f)
{
  const struct mana_lh_services *svc = &MANA_BOUNDARY->lh->svc;
  if (f == MPI_F_STATUS_IGNORE)
    return svc->f_status_ignore;
  return (MPI_Fint *)f;
}

int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
  return MANA_LH_CALL(MPI_Status_c2f, c_status, real_f_status(f_status));
}

int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
  return MANA_LH_CALL(MPI_Status_f2c, real_f_status(f_status), c_status);
}

#define ATTR_GET(name, svc_fn, KIND, T)                                                        \
  int name(T obj, int keyval, void *value, int *flag, int attr_type)                           \
  {                                                                                            \
    return MANA_LH_SVC(svc_fn, MANA_REAL(KIND, T, obj),                                        \
                       (int)mana_handle_real(MANA_KIND_KEYVAL, (uint32_t)keyval), value, flag, \
                       attr_type);                                                             \
  }
/* Attributes set here are recorded for restart like those set from C (`record`), before the
 * thread may park (stub.h, MANA_LH_CALL_NOPARK): parked in between, it was checkpointed with the
 * attribute set in MPI and missing from its record (MPICH's f77/attr/attrmpi1f restarted
 * without it). */
#define ATTR_SET(name, svc_fn, KIND, T, record)                                                   \
  int name(T obj, int keyval, void *value, int attr_type)                                         \
  {                                                                                               \
    int rc = MANA_LH_SVC_NOPARK(svc_fn, MANA_REAL(KIND, T, obj),                                  \
                                (int)mana_handle_real(MANA_KIND_KEYVAL, (uint32_t)keyval), value, \
                                attr_type);                                                       \
    if (rc == MPI_SUCCESS)                                                                        \
      record(obj, keyval, value, attr_type);                                                      \
    MANA_PARK_CHECK();                                                                            \
    return rc;                                                                                    \
  }
void mana_win_attr_set(MPI_Win v, int virt_keyval, void *value, int attr_type);
int MPII_Comm_get_attr(MPI_Comm, int, void *, int *, int);
int MPII_Comm_set_attr(MPI_Comm, int, void *, int);
int MPII_Type_get_attr(MPI_Datatype, int, void *, int *, int);
int MPII_Type_set_attr(MPI_Datatype, int, void *, int);
int MPII_Win_set_attr(MPI_Win, int, void *, int);
ATTR_GET(MPII_Comm_get_attr, comm_get_attr, COMM, MPI_Comm)
ATTR_SET(MPII_Comm_set_attr, comm_set_attr, COMM, MPI_Comm, mana_comm_attr_set)
ATTR_GET(MPII_Type_get_attr, type_get_attr, DATATYPE, MPI_Datatype)
ATTR_SET(MPII_Type_set_attr, type_set_attr, DATATYPE, MPI_Datatype, mana_type_attr_set)
/* MPII_Win_get_attr is window.c's: it answers MPI_WIN_CREATE_FLAVOR. */
ATTR_SET(MPII_Win_set_attr, win_set_attr, WIN, MPI_Win, mana_win_attr_set)

/* MPICH's error-reporting entry points, which the C++ binding calls.  The variadic arguments of
 * MPIR_Err_create_code fill in specific_msg's format; they cannot be forwarded through a
 * function pointer, so the generic message is used alone. */
int MPIR_Err_create_code(int lastcode, int fatal, const char fcname[], int line, int error_class,
                         const char generic_msg[], const char specific_msg[], ...);
int MPIR_Err_create_code(int lastcode, int fatal, const char fcname[], int line, int error_class,
                         const char generic_msg[], const char specific_msg[], ...)
{
  (void)specific_msg;
  return MANA_LH_SVC(err_create_code, lastcode, fatal, fcname, line, error_class, generic_msg,
                     NULL);
}

/* The first argument is an MPICH-internal object pointer; callers outside MPICH pass NULL. */
int MPIR_Err_return_comm(void *comm_ptr, const char fcname[], int errcode);
int MPIR_Err_return_comm(void *comm_ptr, const char fcname[], int errcode)
{
  return MANA_LH_SVC(err_return_comm, comm_ptr, fcname, errcode);
}

int MPIR_Err_return_win(void *win_ptr, const char fcname[], int errcode);
int MPIR_Err_return_win(void *win_ptr, const char fcname[], int errcode)
{
  return MANA_LH_SVC(err_return_win, win_ptr, fcname, errcode);
}
