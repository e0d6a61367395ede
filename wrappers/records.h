/* What the stub records about MPI objects so that a restart can rebuild them.
 *
 * At restart the upper half's memory comes back but MPI is new: every real handle in the
 * tables is stale.  Each object kind therefore keeps, in upper-half memory and from the moment
 * an object is made, what it takes to make an equivalent one (a communicator's members in rank
 * order and its topology, a datatype's recipe, an info object's keys, ...), and knows how to
 * rebuild from that record.  One file per kind holds both sides (communicators: comm.c,
 * datatypes: datatype.c, ...); restart_hook.c runs them in dependency order through the
 * table of `struct mana_kind_ops` below.
 *
 * Records are kept up to date by hooks that the generated wrappers call after successful calls
 * (gen_wrappers.py): `mana_<kind>_created(new, parent)` for every new handle of a recorded kind,
 * and `mana_after_<Function>(arguments)` for the functions mpi_api.txt marks `after`.  Object
 * creation is rare, so records may cost a few MPI calls there; nothing is added to the
 * communication paths.  Record keeping never parks the thread (MANA_LH_CALL_NOPARK): the
 * wrapper parks once the handle and its record exist, so a checkpoint never finds one
 * without the other. */
#ifndef MANA_RECORDS_H
#define MANA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "stub.h"

/* One kind of MPI state, as the restart orchestrator sees it.  Any member may be NULL. */
struct mana_kind_ops {
  const char *name;         /* for messages: "communicator", "datatype", ... */
  enum mana_kind kind;      /* its handle table; 0 for state without handles */
  mana_release_fn *release; /* frees a retired slot's record (default: free(meta)) */
  mana_retain_fn *retain;   /* keeps a slot the application frees (handles.h); NULL: never */
  /* Whether a checkpoint may be taken now: 1, or 0 with a one-line reason in `reason`.  May
   * run on the lower half's checkpoint thread while the application is parked: it reads the
   * records only, and calls neither MPI nor anything in libc that uses thread-local state. */
  int (*check)(char *reason, size_t len);
  /* Rebuild-in-place test mode only: free the real objects first, so the rebuild works from
   * the records alone, as it must at restart. */
  int (*discard)(void);
  /* Makes fresh real objects from the records and puts them in the existing virtual slots.
   * Returns MPI_SUCCESS, or an error already reported on stderr. */
  int (*rebuild)(void);
  /* After every kind is rebuilt: frees what only the rebuild needed (objects the application
   * had freed but others still depended on). */
  void (*finish)(void);
};

extern const struct mana_kind_ops mana_info_ops, mana_errhandler_ops, mana_keyval_ops, mana_op_ops,
    mana_group_ops, mana_datatype_ops, mana_comm_ops, mana_request_ops, mana_bsend_ops,
    mana_greq_class_ops, mana_datarep_ops, mana_file_ops, mana_win_ops, mana_message_ops,
    mana_session_ops, mana_mpi_t_ops;

/* MPI_T (mpi_t.c): an event registration was freed (tools.c). */
void mana_mpi_t_event_handle_freed(void);

/* ---- the rebuild in progress (restart_hook.c) ---- */

/* Counts rebuilds; records compare it with their own to know whether they are built yet. */
extern uint32_t mana_rebuild_epoch;
/* What the rebuild is doing.  While it does anything, attribute copy and delete callbacks
 * are mana's doing, not the application's, and are not passed on. */
enum { MANA_REBUILD_NONE, MANA_REBUILD_DISCARDING, MANA_REBUILD_MAKING };
extern int mana_rebuilding;

/* Reports a failed MPI call of the rebuild ("mana: restart: cannot rebuild communicator
 * 0x84000002: MPI_Comm_create_group: <MPI's error text>") and returns rc (never MPI_SUCCESS). */
int mana_rebuild_error(const char *what, uint32_t handle, const char *call, int rc);

/* Builds "<text> <what> <handle in hex>" into reason without libc's formatting (see check);
 * handle 0 is left out. */
void mana_reason(char *reason, size_t len, const char *text, const char *what, uint32_t handle);

/* Installs the release functions of every kind and the boundary entry points (init.c). */
void mana_records_init(void);

/* ---- cross-kind pieces ---- */

/* Sessions (session.c): a new real group of the processes of MPI_COMM_WORLD, from a live
 * session, for programs that use sessions without MPI_Init; the caller frees it.
 * MPI_GROUP_NULL without a session. */
MPI_Group mana_session_world_group(void);

/* Groups (group.c).  MPI_COMM_WORLD's group, real, made once per MPI (reset by the rebuild). */
MPI_Group mana_world_group(void);
void mana_world_group_forget(void);
/* World ranks of the n members of real group g, in rank order; returns how many members are
 * not in MPI_COMM_WORLD (MPI_UNDEFINED in ranks), or -1 if MPI failed. */
int mana_group_world_ranks(MPI_Group g, int n, int *ranks);
/* The members of the application's group v as world ranks in rank order (the record's own
 * array; MPI_GROUP_EMPTY has none): 0, or -1 without a usable record. */
int mana_group_members(MPI_Group v, int *size, const int **ranks);

/* Info (info.c): key/value lists in insertion order, as MPICH keeps and reports them. */
struct mana_kv {
  char *key, *value;
};
struct mana_kvlist {
  int n, cap;
  struct mana_kv *kv;
};
int mana_kvlist_set(struct mana_kvlist *l, const char *key, const char *value);
void mana_kvlist_delete(struct mana_kvlist *l, const char *key);
int mana_kvlist_copy(struct mana_kvlist *dst, const struct mana_kvlist *src);
void mana_kvlist_free(struct mana_kvlist *l);
/* The current contents of the application's info object v (empty for MPI_INFO_NULL). */
int mana_info_snapshot(MPI_Info v, struct mana_kvlist *out);
/* A new real info object holding l; the caller frees it. */
int mana_kvlist_to_real(const struct mana_kvlist *l, MPI_Info *real);

/* Error handlers (errhandler.c): which one an object uses, as a predefined handle or the
 * trampoline of the application's function. */
struct mana_eh_ref {
  MPI_Errhandler predefined; /* when index < 0 */
  int index;                 /* trampoline, or -1 */
};
void mana_eh_ref_of_virtual(MPI_Errhandler v, struct mana_eh_ref *ref);
void mana_eh_ref_of_real(MPI_Errhandler real, struct mana_eh_ref *ref);
/* During a rebuild: a real error handler for ref (made once per rebuild, freed by finish). */
MPI_Errhandler mana_eh_ref_real(const struct mana_eh_ref *ref);

/* Keyvals (keyval.c). */
struct keyval_record;
struct keyval_record *mana_keyval_record(int virt_keyval);
/* The real keyval now: during a rebuild, the rebuilt one (made on demand for keyvals the
 * application has freed while attributes still use them); -1 if it cannot be made. */
int mana_keyval_real(struct keyval_record *r);

/* Attributes (attr.c): the (keyval, value) pairs set on one communicator or datatype. */
struct mana_attr {
  struct mana_attr *next;
  struct keyval_record *keyval;
  void *value;
  int attr_type; /* MPICH's: 0 C pointer, 1 Fortran address-sized, 3 Fortran integer */
};
void mana_attr_set(struct mana_attr **list, int virt_keyval, void *value, int attr_type);
void mana_attr_delete(struct mana_attr **list, int virt_keyval);
/* After a duplication: the values the copy callbacks gave the new object (real), for the
 * keyvals the parent has attributes for. */
void mana_attr_inherit(struct mana_attr **child, const struct mana_attr *parent,
                       enum mana_kind kind, uint64_t real);
int mana_attr_replay(const struct mana_attr *list, enum mana_kind kind, uint64_t real,
                     const char *what, uint32_t virt);
void mana_attr_remove_all(const struct mana_attr *list, enum mana_kind kind, uint64_t real);
void mana_attr_free(struct mana_attr **list);

/* Datatypes (datatype.c): a datatype argument kept by another record (a persistent request),
 * valid even after the application frees the type. */
struct mana_dt_rec;
struct mana_dt_arg {
  /* when rec is NULL: the predefined type (MPI_DATATYPE_NULL too, which MPI takes with a count
   * of 0), or MANA_DT_ARG_NONE for a derived type that had no record */
  MPI_Datatype predefined;
  struct mana_dt_rec *rec;
};
#define MANA_DT_ARG_NONE ((MPI_Datatype)0) /* no MPICH handle is 0 */
void mana_dt_arg_get(MPI_Datatype v, struct mana_dt_arg *arg);
void mana_dt_arg_put(struct mana_dt_arg *arg);
int mana_dt_arg_ok(const struct mana_dt_arg *arg);
/* During a rebuild, after the datatypes: the rebuilt real type. */
MPI_Datatype mana_dt_arg_real(const struct mana_dt_arg *arg);

/* Communicators (comm.c). */
uint64_t mana_comm_ggid(MPI_Comm v);
/* The collective clock's id of v: equal on every member and after restart; 0 without a usable
 * record. */
uint64_t mana_comm_cc_id(MPI_Comm v);
void mana_comm_record_errhandler(MPI_Comm v, MPI_Errhandler errhandler);
/* Whether v's handler was never set, so that MPICH raises its errors on MPI_COMM_WORLD's
 * handler (comm.c); and, when the application has set MPI_COMM_WORLD's to real_errhandler,
 * giving it to every such communicator. */
int mana_comm_follows_world(MPI_Comm v);
void mana_comm_follow_world(MPI_Errhandler real_errhandler);
/* What files opened on intracommunicator v need to open again at restart, even after v is
 * freed: its group id, creation index (UINT64_MAX for MPI_COMM_WORLD and MPI_COMM_SELF),
 * size and members as world ranks in rank order (the record's own array: copy it).  0, or -1
 * without a usable record. */
int mana_comm_members(MPI_Comm v, uint64_t *ggid, uint64_t *index, int *size, const int **ranks);
/* Both groups of v as world ranks (the record's arrays; an intracommunicator has no remote
 * one): 0, or -1 without a usable record.  Reads records only. */
int mana_comm_world_members(MPI_Comm v, int *nlocal, const int **local, int *nremote,
                            const int **remote);

/* The collective clock's id of a constructor that is collective over its groups only
 * (MPI_Comm_create_group, MPI_Comm_create_from_group, MPI_Intercomm_create_from_groups):
 * every member of the union of the groups computes the same id from the members, the tag and
 * the parent (MPI_COMM_NULL: none); 0 when a group has no usable record. */
uint64_t mana_comm_group_cc_id(MPI_Comm parent, const MPI_Group *groups, int ngroups, uint64_t tag);
/* The tag of the constructors that take a string. */
uint64_t mana_string_tag(const char *stringtag);

/* Freed communicators that requests still pin (comm_freed.c): the kind's retain; after the
 * rebuild, frees the real handles of the freed ones again. */
int mana_comm_retain(struct mana_slot *s, uint32_t virt);
void mana_comm_freed_finish(void);
/* Whether MPI still holds freed communicator v (its real handle can be used).  Reads the
 * tables only. */
int mana_comm_freed_alive(MPI_Comm v);

/* Communicators this rank freed, kept inside MPI for messages still on their way
 * (comm_stranded.c): keep one (before its real free, or a restart's ghost), count a message
 * discarded from one (any thread), the real handle of the i-th (MPI_COMM_NULL: none; -1 past
 * the last), let them all go (the rebuild in place) or forget them (a restart's new MPI). */
void mana_comm_sink_keep(MPI_Comm real);
void mana_comm_sink_count(MPI_Comm real, const MPI_Status *st);
int mana_comm_sink_at(unsigned i, MPI_Comm *real);
void mana_comm_sinks_release(void);
void mana_comm_sinks_forget(void);

/* ---- hooks the generated wrappers call ---- */
void mana_comm_created(MPI_Comm v, MPI_Comm parent);
/* The same for a constructor over groups, named under its own clock id (comm.c). */
void mana_comm_created_in(MPI_Comm v, MPI_Comm parent, uint64_t key);
/* MPI_Comm_idup: a duplicate of parent that MPI completes later. */
void mana_comm_created_pending(MPI_Comm v, MPI_Comm parent);
void mana_group_created(MPI_Group v, MPI_Group parent);
void mana_datatype_created(MPI_Datatype v, MPI_Datatype parent);
void mana_info_created(MPI_Info v, MPI_Info parent);
void mana_errhandler_created(MPI_Errhandler v, MPI_Errhandler parent);
/* A datatype handle MPI hands out for an existing type (MPI_Type_get_contents). */
void mana_datatype_referenced(MPI_Datatype v);
/* Attributes set from Fortran (MPII_Comm_set_attr, MPII_Type_set_attr). */
void mana_comm_attr_set(MPI_Comm v, int virt_keyval, void *value, int attr_type);
void mana_type_attr_set(MPI_Datatype v, int virt_keyval, void *value, int attr_type);

#endif
