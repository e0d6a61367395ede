/* The MPI_T event interface and MPI_Comm_spawn_multiple: forwarded with their callbacks and
 * handle arrays adapted. */
#include "records.h"

/* ---- MPI_T events: callbacks get the user_data given at registration ---- */

struct event_record {
  MPI_T_event_cb_function *cb;
  MPI_T_event_dropped_cb_function *dropped;
  MPI_T_event_free_cb_function *free_cb;
  void *user_data;
};

static struct event_record *last_registration_record; /* for set_dropped_handler */

static void event_tramp(MPI_T_event_instance inst, MPI_T_event_registration reg,
                        MPI_T_cb_safety safety, void *user)
{
  struct event_record *r = user;
  uint64_t saved = mana_callback_enter();
  r->cb(inst, reg, safety, r->user_data);
  mana_callback_leave(saved);
}

static void dropped_tramp(MPI_Count count, MPI_T_event_registration reg, int source,
                          MPI_T_cb_safety safety, void *user)
{
  struct event_record *r = user;
  uint64_t saved = mana_callback_enter();
  if (r && r->dropped)
    r->dropped(count, reg, source, safety, r->user_data);
  mana_callback_leave(saved);
}

static void free_tramp(MPI_T_event_registration reg, MPI_T_cb_safety safety, void *user)
{
  struct event_record *r = user;
  uint64_t saved = mana_callback_enter();
  if (r->free_cb)
    r->free_cb(reg, safety, r->user_data);
  mana_callback_leave(saved);
  free(r);
}

int MPI_T_event_register_callback(MPI_T_event_registration reg, MPI_T_cb_safety safety,
                                  MPI_Info info, void *user_data, MPI_T_event_cb_function cb)
{
  struct event_record *r = calloc(1, sizeof(*r));
  if (!r)
    return MPI_T_ERR_MEMORY;
  r->cb = cb;
  r->user_data = user_data;
  int rc = MANA_LH_CALL(MPI_T_event_register_callback, reg, safety, MANA_REAL(INFO, MPI_Info, info),
                        r, cb ? event_tramp : NULL);
  if (rc != MPI_SUCCESS)
    free(r);
  else
    last_registration_record = r;
  return rc;
}

int MPI_T_event_set_dropped_handler(MPI_T_event_registration reg,
                                    MPI_T_event_dropped_cb_function dropped)
{
  if (last_registration_record)
    last_registration_record->dropped = dropped;
  return MANA_LH_CALL(MPI_T_event_set_dropped_handler, reg, dropped ? dropped_tramp : NULL);
}

int MPI_T_event_handle_free(MPI_T_event_registration reg, void *user_data,
                            MPI_T_event_free_cb_function free_cb)
{
  struct event_record *r = calloc(1, sizeof(*r));
  if (!r)
    return MPI_T_ERR_MEMORY;
  r->free_cb = free_cb;
  r->user_data = user_data;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_event_handle_free, reg, r, free_tramp);
  if (rc == MPI_SUCCESS)
    mana_mpi_t_event_handle_freed();
  MANA_PARK_CHECK();
  return rc;
}

int MPI_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                         int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                         int *desc_len, int *bind)
{
  MPI_Info real_info = MPI_INFO_NULL;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_event_get_info, event_index, name, name_len, verbosity,
                               array_of_datatypes, array_of_displacements, num_elements, enumtype,
                               info ? &real_info : NULL, desc, desc_len, bind);
  if (rc == MPI_SUCCESS && info) {
    *info = MANA_NEW(INFO, MPI_Info, real_info);
    mana_info_created(*info, MPI_INFO_NULL);
  }
  if (rc == MPI_SUCCESS && array_of_datatypes && num_elements)
    for (int i = 0; i < *num_elements; i++) {
      array_of_datatypes[i] = MANA_NEW(DATATYPE, MPI_Datatype, array_of_datatypes[i]);
      mana_datatype_referenced(array_of_datatypes[i]);
    }
  MANA_PARK_CHECK(); /* once the handles exist (stub.h) */
  return rc;
}

/* ---- dynamic processes ---- */

int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                            const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                            MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
  MPI_Info stack[MANA_STACK_HANDLES];
  MPI_Info *infos = array_of_info && count > 0
                        ? mana_real_array_info(array_of_info, (size_t)count, stack)
                        : (MPI_Info *)array_of_info;
  MPI_Comm real;
  mana_cc_enter(comm, 1);
  MPI_Comm real_comm = MANA_REAL(COMM, MPI_Comm, comm);
  int rc = MANA_LH_CALL_NOPARK(MPI_Comm_spawn_multiple, count, array_of_commands, array_of_argv,
                               array_of_maxprocs, infos, root, real_comm, &real, array_of_errcodes);
  if (rc == MPI_SUCCESS) {
    *intercomm = MANA_NEW(COMM, MPI_Comm, real);
    mana_comm_created(*intercomm, comm);
  }
  mana_cc_leave(MANA_CC_CONSTRUCTOR, rc == MPI_SUCCESS ? *intercomm : MPI_COMM_NULL);
  if (infos != stack && infos != array_of_info)
    free(infos);
  MANA_PARK_CHECK(); /* once the handle exists (stub.h) */
  return rc;
}
