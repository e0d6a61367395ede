/* MPI Sessions (MPI 4).  A session handle is virtualized like any other handle (the generated
 * wrappers); what needs care is what MPI_COMM_WORLD usually provides.  A program may use
 * sessions only and never call MPI_Init: MPI_COMM_WORLD is then not usable, and the records
 * of groups and communicators (group.c, comm.c), which name members by their world ranks,
 * translate through the group of the process set "mpi://WORLD" of a live session instead,
 * which has the same processes in the same order.
 *
 * A session is recorded as what MPI_Session_init was given: the info's key/value pairs and
 * the error handler (kept up to date by MPI_Session_set_errhandler).  A restart initializes
 * it again with them.  Groups taken from its process sets and communicators made from them
 * are recorded by world ranks like any other and are rebuilt from MPI_COMM_WORLD, which the
 * restarted lower half initializes; "mpi://WORLD" and "mpi://SELF" have the same members
 * there.  A program that never calls MPI_Init gets the world model all the same, from mana
 * at its first MPI_Session_init (init.c, mana_world_for_sessions), at the thread level the
 * session's info asks for. */
#include <stdlib.h>
#include <string.h>

#include "p2p.h"
#include "records.h"
#include "stub_hooks.h"

struct session_rec {
  struct mana_kvlist info;
  struct mana_eh_ref errhandler;
};

static struct session_rec *rec_of(MPI_Session v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_SESSION, (uint32_t)v);
  return s ? s->meta : NULL;
}

/* The level a session's info asks for under MPICH's key "thread_level"; MPICH's default
 * otherwise (MPI_THREAD_SINGLE; the lower half raises it to what it needs). */
static int asked_level(MPI_Info info)
{
  static const struct {
    const char *name;
    int level;
  } levels[] = {{"MPI_THREAD_SINGLE", MPI_THREAD_SINGLE},
                {"MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED},
                {"MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED},
                {"MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE}};
  char value[32] = "";
  int len = (int)sizeof(value), flag = 0;
  MPI_Info real = MANA_REAL(INFO, MPI_Info, info);
  if (real == MPI_INFO_NULL ||
      MANA_LH_CALL_NOPARK(MPI_Info_get_string, real, "thread_level", &len, value, &flag) !=
          MPI_SUCCESS ||
      !flag)
    return MPI_THREAD_SINGLE;
  for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
    if (strcmp(value, levels[i].name) == 0)
      return levels[i].level;
  return MPI_THREAD_SINGLE;
}

int mana_before_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
  (void)errhandler;
  (void)session;
  return mana_world_for_sessions(asked_level(info));
}

void mana_after_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_SESSION, (uint32_t)*session);
  struct session_rec *r = calloc(1, sizeof(*r));
  if (!s || !r || mana_info_snapshot(info, &r->info) != 0) {
    free(r); /* no record: a checkpoint is refused (check below) */
    return;
  }
  mana_eh_ref_of_virtual(errhandler, &r->errhandler);
  s->meta = r;
}

void mana_after_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler)
{
  struct session_rec *r = rec_of(session);
  if (r)
    mana_eh_ref_of_virtual(errhandler, &r->errhandler);
}

static void release(struct mana_slot *s)
{
  struct session_rec *r = s->meta;
  if (r) {
    mana_kvlist_free(&r->info);
    free(r);
  }
  s->meta = NULL;
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->meta) {
      mana_reason(reason, len, "mana could not record", "session",
                  mana_handle_make(MANA_KIND_SESSION, i));
      return 0;
    }
  }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if (!(s->flags & MANA_SLOT_USED))
      continue;
    MPI_Session real = (MPI_Session)s->real;
    MANA_LH_CALL_NOPARK(MPI_Session_finalize, &real);
  }
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct session_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r)
      continue;
    MPI_Info info;
    int rc = mana_kvlist_to_real(&r->info, &info);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("session", mana_handle_make(MANA_KIND_SESSION, i),
                                "MPI_Info_create/MPI_Info_set", rc);
    MPI_Session real = MPI_SESSION_NULL;
    MPI_Errhandler eh = mana_eh_ref_real(&r->errhandler);
    rc = MANA_LH_CALL_NOPARK(MPI_Session_init, info, eh, &real);
    MANA_LH_CALL_NOPARK(MPI_Info_free, &info);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("session", mana_handle_make(MANA_KIND_SESSION, i),
                                "MPI_Session_init", rc);
    /* MPICH 4.0.2 keeps MPI_ERRORS_ARE_FATAL on a session whatever MPI_Session_init is given
     * (a user handler set at init never ran); setting it afterwards works. */
    rc = MANA_LH_CALL_NOPARK(MPI_Session_set_errhandler, real, eh);
    if (rc != MPI_SUCCESS)
      return mana_rebuild_error("session", mana_handle_make(MANA_KIND_SESSION, i),
                                "MPI_Session_set_errhandler", rc);
    s->real = (uint64_t)(uint32_t)real;
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_session_ops = {
    .name = "session",
    .kind = MANA_KIND_SESSION,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};

void mana_sessions_finalize_for_exit(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Session real = (MPI_Session)s->real;
    if ((s->flags & MANA_SLOT_USED) && real != MPI_SESSION_NULL)
      MANA_LH_ANY(MPI_Session_finalize, &real);
  }
}

MPI_Group mana_session_world_group(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_SESSION];
  for (uint32_t i = 0; i < t->capacity && t->in_use; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    MPI_Group g = MPI_GROUP_NULL;
    if ((s->flags & MANA_SLOT_USED) &&
        MANA_LH_CALL_NOPARK(MPI_Group_from_session_pset, (MPI_Session)s->real, "mpi://WORLD", &g) ==
            MPI_SUCCESS)
      return g;
  }
  return MPI_GROUP_NULL;
}
