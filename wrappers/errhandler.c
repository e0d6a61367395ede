/* User error handlers for communicators, windows, files and sessions.  MPICH invokes them from
 * the lower half with the real object handle; the trampoline switches to the application's
 * thread pointer and passes the handle the application holds. */
#include <stdarg.h>
#include <stdio.h>

#include "stub.h"
#include "trampoline_pool.h"

enum eh_kind { EH_COMM, EH_WIN, EH_FILE, EH_SESSION };

struct eh_record {
  void (*fn)(void *, int *, ...);
  enum eh_kind kind;
  MPI_Errhandler virt;
};
static struct eh_record handlers[MANA_POOL_SIZE];

static void run(int i, void *obj, int *code)
{
  uint64_t saved = mana_callback_enter();
  struct eh_record *r = &handlers[i];
  if (r->kind == EH_FILE) {
    MPI_File real = *(MPI_File *)obj;
    MPI_File v = (MPI_File)(uintptr_t)mana_handle_virtual_of(MANA_KIND_FILE, (uint64_t)(uintptr_t)real);
    r->fn(&v, code);
  } else {
    static const enum mana_kind kinds[] = {MANA_KIND_COMM, MANA_KIND_WIN, 0, MANA_KIND_SESSION};
    int v = (int)mana_handle_virtual_of(kinds[r->kind], (uint32_t) * (int *)obj);
    r->fn(&v, code);
  }
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

static int free_record(void)
{
  for (int i = 0; i < MANA_POOL_SIZE; i++)
    if (!mana_handle_slot(MANA_KIND_ERRHANDLER, (uint32_t)handlers[i].virt))
      return i;
  fprintf(stderr, "mana: more than %d user error handlers at once are not supported\n",
          MANA_POOL_SIZE);
  return -1;
}

static void keep(int i, void *fn, enum eh_kind kind, MPI_Errhandler real, MPI_Errhandler *out)
{
  handlers[i].fn = (void (*)(void *, int *, ...))fn;
  handlers[i].kind = kind;
  handlers[i].virt = *out = MANA_NEW(ERRHANDLER, MPI_Errhandler, real);
}

#define CREATE(name, fn_t, kind)                                                         \
  int name(fn_t *user_fn, MPI_Errhandler *errhandler)                                    \
  {                                                                                      \
    int i = free_record();                                                               \
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
