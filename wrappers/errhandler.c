/* User error handlers for communicators, windows, files and sessions.  MPICH invokes them from
 * the lower half with the real object handle; the trampoline switches to the application's
 * thread pointer and passes the handle the application holds. */
#include <stdarg.h>
#include <stdio.h>

#include "stub.h"
#include "trampoline_pool.h"

enum eh_kind { EH_COMM, EH_WIN, EH_FILE, EH_SESSION };

/* The C++ binding's dispatcher (MPII_Errhandler_set_cxx): kind 0 comm, 1 file, 2 win. */
typedef void(cxx_eh_dispatch)(int kind, int *handle, int *code, void (*fn)(void));

struct eh_record {
  cxx_eh_dispatch *cxx;
  void (*fn)(void *, int *, ...);
  enum eh_kind kind;
};
static struct eh_record handlers[MANA_POOL_SIZE];

static void run(int i, void *obj, int *code)
{
  static const enum mana_kind kinds[] = {MANA_KIND_COMM, MANA_KIND_WIN, MANA_KIND_FILE,
                                         MANA_KIND_SESSION};
  static const int cxx_kind[] = {0, 2, 1, 0};
  uint64_t saved = mana_callback_enter();
  struct eh_record *r = &handlers[i];
  /* The handle the application knows, in the representation of its C type. */
  MPI_File vfile = NULL;
  int vint = 0;
  void *vobj;
  if (r->kind == EH_FILE) {
    uint64_t real = (uint64_t)(uintptr_t) * (MPI_File *)obj;
    vfile = (MPI_File)(uintptr_t)mana_handle_virtual_of(MANA_KIND_FILE, real);
    vobj = &vfile;
  } else {
    vint = (int)mana_handle_virtual_of(kinds[r->kind], (uint32_t) * (int *)obj);
    vobj = &vint;
  }
  if (r->cxx)
    r->cxx(cxx_kind[r->kind], vobj, code, (void (*)(void))(void *)r->fn);
  else
    r->fn(vobj, code);
  mana_callback_leave(saved);
}

#define TRAMP(i)                                      \
  static void tramp_##i(void *obj, int *code, ...)    \
  {                                                   \
    run(0##i, obj, code); /* octal: 000 .. 077 */     \
  }
MANA_POOL_64(TRAMP)
typedef void (*eh_tramp)(void *, int *, ...);
static const eh_tramp tramps[] = {MANA_POOL_64(MANA_POOL_ENTRY)};

/* A trampoline stays bound to its function for the life of the process: MPI objects keep
 * using an error handler after the application frees its handle, so a slot is never recycled;
 * a function registered again reuses its slot. */
static int record_for(void *fn, enum eh_kind kind)
{
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (handlers[i].fn == (void (*)(void *, int *, ...))fn && handlers[i].kind == kind)
      return i;
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (!handlers[i].fn)
      return i;
  fprintf(stderr, "mana: more than %d distinct user error handler functions are not supported\n",
          MANA_POOL_SIZE);
  return -1;
}

static void keep(int i, void *fn, enum eh_kind kind, MPI_Errhandler real, MPI_Errhandler *out)
{
  handlers[i].fn = (void (*)(void *, int *, ...))fn;
  handlers[i].kind = kind;
  *out = MANA_NEW(ERRHANDLER, MPI_Errhandler, real);
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)*out);
  if (s)
    s->aux = (uint64_t)i + 1; /* which trampoline, for MPII_Errhandler_set_cxx */
}

#define CREATE(name, fn_t, kind)                                                         \
  int name(fn_t *user_fn, MPI_Errhandler *errhandler)                                    \
  {                                                                                      \
    int i = record_for((void *)user_fn, kind);                                           \
    if (i < 0)                                                                           \
      return MPI_ERR_INTERN;                                                             \
    MPI_Errhandler real;                                                                 \
    int rc = MANA_LH_CALL(name, (fn_t *)(void *)tramps[i], &real);                       \
    if (rc == MPI_SUCCESS)                                                               \
      keep(i, (void *)user_fn, kind, real, errhandler);                                  \
    return rc;                                                                           \
  }
CREATE(MPI_Comm_create_errhandler, MPI_Comm_errhandler_function, EH_COMM)
CREATE(MPI_Errhandler_create, MPI_Comm_errhandler_function, EH_COMM)
CREATE(MPI_Win_create_errhandler, MPI_Win_errhandler_function, EH_WIN)
CREATE(MPI_File_create_errhandler, MPI_File_errhandler_function, EH_FILE)
CREATE(MPI_Session_create_errhandler, MPI_Session_errhandler_function, EH_SESSION)

/* Kept on the stub's side: MPICH would call the dispatcher from the lower half. */
void MPII_Errhandler_set_cxx(MPI_Errhandler errhandler, void (*dispatch)(void));
void MPII_Errhandler_set_cxx(MPI_Errhandler errhandler, void (*dispatch)(void))
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)errhandler);
  if (s && s->aux)
    handlers[s->aux - 1].cxx = (cxx_eh_dispatch *)(void *)dispatch;
}
