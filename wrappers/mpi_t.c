/* The MPI tool information interface (MPI_T) across a restart.
 *
 * MPI_T has a state of its own, apart from MPI: how often MPI_T_init_thread was called and not
 * finalized.  A restarted lower half starts without it, and every MPI_T call would fail with
 * MPI_T_ERR_NOT_INITIALIZED, leaving its outputs unset (MPICH's threads/mpi_t/mpit_threading
 * then looped over garbage counts).  The rebuild initializes MPI_T as often, at the recorded
 * level.
 *
 * A control variable handle is a pointer into MPICH's memory, which a restart does not bring
 * back: the application gets a handle of the stub's (a record in upper-half memory) and the
 * rebuild allocates a real one for it again, for the same variable and object.  A performance
 * variable session is a pointer into MPICH's memory as well: the application holds the stub's
 * record of it, and the rebuild makes a new real session for each.  Performance variable
 * handles and event registrations are not rebuilt yet: a checkpoint is refused, with the
 * reason, while one exists.  (Debian's MPICH 4.0.2 has no performance variables and no events,
 * so neither can exist there; its MPI_T_pvar_handle_alloc crashes natively for index 0.) */
#include <stdio.h>
#include <stdlib.h>

#include "records.h"
#include "stub_hooks.h"
#include "stub_lock.h"

static int t_inits, t_level = MPI_THREAD_SINGLE;
static int live_pvar_handles, live_event_registrations;

/* The stub's records of MPICH's pointers, each in a list (under the stub's lock). */
struct link {
  struct link *next, *prev;
};

static void link_add(struct link **list, struct link *l)
{
  mana_stub_lock_take();
  l->prev = NULL;
  l->next = *list;
  if (*list)
    (*list)->prev = l;
  *list = l;
  mana_stub_lock_give();
}

static void link_remove(struct link **list, struct link *l)
{
  mana_stub_lock_take();
  if (l->prev)
    l->prev->next = l->next;
  else
    *list = l->next;
  if (l->next)
    l->next->prev = l->prev;
  mana_stub_lock_give();
}

/* The stub's control variable handle. */
struct cvar_handle {
  struct link link; /* first: the list's links are the records */
  MPI_T_cvar_handle real;
  int index;
  void *obj_handle; /* as the application passed it */
};
static struct link *cvars;

static MPI_T_cvar_handle real_cvar(MPI_T_cvar_handle h)
{
  return h == MPI_T_CVAR_HANDLE_NULL ? h : ((struct cvar_handle *)(void *)h)->real;
}

void mana_after_T_init_thread(int required, int *provided)
{
  (void)provided;
  if (t_inits++ == 0 || required > t_level)
    t_level = required;
}

void mana_after_T_finalize(void)
{
  if (t_inits > 0)
    t_inits--;
}

/* The stub's performance variable session. */
struct pvar_session {
  struct link link; /* first */
  MPI_T_pvar_session real;
  int handles; /* allocated in it and not freed */
};
static struct link *pvar_sessions;

MPI_T_pvar_session mana_pvar_session(MPI_T_pvar_session session)
{
  return session == MPI_T_PVAR_SESSION_NULL ? session
                                            : ((struct pvar_session *)(void *)session)->real;
}

int MPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
  struct pvar_session *r = calloc(1, sizeof(*r));
  if (!r)
    return MPI_T_ERR_MEMORY;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_pvar_session_create, session ? &r->real : NULL);
  if (rc != MPI_SUCCESS) {
    free(r);
    MANA_PARK_CHECK();
    return rc;
  }
  link_add(&pvar_sessions, &r->link);
  *session = (MPI_T_pvar_session)(void *)r;
  MANA_PARK_CHECK(); /* once the session and its record exist */
  return rc;
}

int MPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
  if (!session || *session == MPI_T_PVAR_SESSION_NULL)
    return MANA_LH_CALL(MPI_T_pvar_session_free, session);
  struct pvar_session *r = (struct pvar_session *)(void *)*session;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_pvar_session_free, &r->real);
  if (rc == MPI_SUCCESS) {
    link_remove(&pvar_sessions, &r->link);
    mana_stub_lock_take();
    live_pvar_handles -= r->handles; /* MPI frees a session's handles with it */
    mana_stub_lock_give();
    free(r);
    *session = MPI_T_PVAR_SESSION_NULL;
  }
  MANA_PARK_CHECK();
  return rc;
}

/* The generated wrappers call these under the stub's lock. */
void mana_after_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                    MPI_T_pvar_handle *handle, int *count)
{
  (void)pvar_index, (void)obj_handle, (void)handle, (void)count;
  ((struct pvar_session *)(void *)session)->handles++;
  live_pvar_handles++;
}

void mana_after_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
  (void)handle;
  struct pvar_session *r = (struct pvar_session *)(void *)session;
  if (r->handles > 0) {
    r->handles--;
    live_pvar_handles--;
  }
}

void mana_after_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                     MPI_T_event_registration *event_registration)
{
  (void)event_index;
  (void)obj_handle;
  (void)info;
  (void)event_registration;
  live_event_registrations++;
}

void mana_mpi_t_event_handle_freed(void)
{
  mana_stub_lock_take(); /* as the generated hooks run: other threads may count too */
  if (live_event_registrations > 0)
    live_event_registrations--;
  mana_stub_lock_give();
}

int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)
{
  struct cvar_handle *h = malloc(sizeof(*h));
  if (!h)
    return MPI_T_ERR_MEMORY;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_cvar_handle_alloc, cvar_index, obj_handle, &h->real, count);
  if (rc != MPI_SUCCESS) {
    free(h);
    MANA_PARK_CHECK();
    return rc;
  }
  h->index = cvar_index;
  h->obj_handle = obj_handle;
  link_add(&cvars, &h->link);
  *handle = (MPI_T_cvar_handle)(void *)h;
  MANA_PARK_CHECK(); /* once the handle and its record exist */
  return rc;
}

int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
  if (!handle || *handle == MPI_T_CVAR_HANDLE_NULL)
    return MANA_LH_CALL(MPI_T_cvar_handle_free, handle);
  struct cvar_handle *h = (struct cvar_handle *)(void *)*handle;
  int rc = MANA_LH_CALL_NOPARK(MPI_T_cvar_handle_free, &h->real);
  if (rc == MPI_SUCCESS) {
    link_remove(&cvars, &h->link);
    free(h);
    *handle = MPI_T_CVAR_HANDLE_NULL;
  }
  MANA_PARK_CHECK();
  return rc;
}

int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
  return MANA_LH_CALL(MPI_T_cvar_read, real_cvar(handle), buf);
}

int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
  return MANA_LH_CALL(MPI_T_cvar_write, real_cvar(handle), buf);
}

/* May run on the lower half's thread pointer: no snprintf (records.h). */
static int check(char *reason, size_t len)
{
  const char *what =
      live_pvar_handles          ? "mana cannot rebuild yet: an MPI_T performance variable handle"
      : live_event_registrations ? "mana cannot rebuild yet: an MPI_T event registration"
                                 : NULL;
  if (!what)
    return 1;
  size_t i = 0;
  for (; len && i + 1 < len && what[i]; i++)
    reason[i] = what[i];
  if (len)
    reason[i] = '\0';
  return 0;
}

/* Rebuild-in-place test mode: the real handles and MPI_T's own state go first. */
static int discard(void)
{
  for (struct link *l = cvars; l; l = l->next)
    MANA_LH_CALL_NOPARK(MPI_T_cvar_handle_free, &((struct cvar_handle *)l)->real);
  for (struct link *l = pvar_sessions; l; l = l->next)
    MANA_LH_CALL_NOPARK(MPI_T_pvar_session_free, &((struct pvar_session *)l)->real);
  for (int i = 0; i < t_inits; i++)
    MANA_LH_CALL_NOPARK(MPI_T_finalize);
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  for (int i = 0; i < t_inits; i++) {
    int provided, rc = MANA_LH_CALL_NOPARK(MPI_T_init_thread, t_level, &provided);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "mana: rebuilding MPI objects: MPI_T_init_thread failed (%d)\n", rc);
      return MPI_ERR_INTERN;
    }
  }
  for (struct link *l = cvars; l; l = l->next) {
    struct cvar_handle *h = (struct cvar_handle *)l;
    int count, rc = MANA_LH_CALL_NOPARK(MPI_T_cvar_handle_alloc, h->index, h->obj_handle, &h->real,
                                        &count);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr,
              "mana: rebuilding MPI objects: cannot allocate a handle for MPI_T "
              "control variable %d again (%d)\n",
              h->index, rc);
      return MPI_ERR_INTERN;
    }
  }
  /* Without handles (a checkpoint is refused while one exists): nothing else to give back. */
  for (struct link *l = pvar_sessions; l; l = l->next) {
    int rc = MANA_LH_CALL_NOPARK(MPI_T_pvar_session_create, &((struct pvar_session *)l)->real);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr,
              "mana: rebuilding MPI objects: cannot make an MPI_T performance variable "
              "session again (%d)\n",
              rc);
      return MPI_ERR_INTERN;
    }
  }
  return MPI_SUCCESS;
}

const struct mana_kind_ops mana_mpi_t_ops = {
    .name = "MPI_T interface",
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
};
