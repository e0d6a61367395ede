/* Initialization and thread level.  The real MPI is initialized by the lower half when the
 * application asks (see lower-half/main.c for why then); the stub remembers the level the
 * application was given and which of its threads is the main one. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "records.h"

static int app_thread_level = MPI_THREAD_SINGLE;
static pthread_t app_main_thread;

__attribute__((constructor)) static void check_boundary(void)
{
  struct mana_boundary *b = MANA_BOUNDARY;
  if (b->magic != MANA_BOUNDARY_MAGIC || b->version != MANA_BOUNDARY_VERSION) {
    /* Loaded without mana_lh, e.g. a stray LD_LIBRARY_PATH: there is no real MPI behind us. */
    static const char msg[] = "mana: this libmpich.so.12 is mana's stub and works only under "
                              "mana_launch (no lower half found)\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  mana_handles_init();
  /* Record keeping for restart, and the entry points the lower half calls for it. */
  mana_records_init();
}

static int init(int required, int *provided)
{
  int got = MPI_THREAD_SINGLE;
  int rc = MANA_LH_SVC(init_thread, required, &got);
  if (rc == MPI_SUCCESS) {
    app_thread_level = got;
    app_main_thread = pthread_self();
  }
  if (provided)
    *provided = got;
  return rc;
}

int MPI_Init(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  return init(MPI_THREAD_SINGLE, NULL);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  (void)argc;
  (void)argv;
  return init(required, provided);
}

int MPI_Finalize(void)
{
  return MANA_LH_CALL(MPI_Finalize);
}

int MPI_Query_thread(int *provided)
{
  int initialized = 0;
  MANA_LH_CALL(MPI_Initialized, &initialized);
  if (!initialized)
    return MANA_LH_CALL(MPI_Query_thread, provided); /* let MPI report the misuse */
  *provided = app_thread_level;
  return MPI_SUCCESS;
}

/* MPICH compares the lower half's thread identity, which is the same for every upper thread. */
int MPI_Is_thread_main(int *flag)
{
  int initialized = 0;
  MANA_LH_CALL(MPI_Initialized, &initialized);
  if (!initialized)
    return MANA_LH_CALL(MPI_Is_thread_main, flag);
  *flag = pthread_equal(pthread_self(), app_main_thread);
  return MPI_SUCCESS;
}

/* Variadic in the standard, and a no-op in MPICH unless a profiler is attached: forward the
 * level only. */
int MPI_Pcontrol(const int level, ...)
{
  return MANA_LH_CALL(MPI_Pcontrol, level);
}
