/* RMA windows: what the stub keeps about each one (docs/checkpoint-protocol.md, "RMA windows").
 *
 * window.c       the record, the constructors, Win_free, attributes and properties, and the
 *                kind's check / discard / rebuild;
 * window_sync.c  synchronization: fence bookkeeping, passive-target epochs (held locks), the
 *                stub's own post/start/complete/wait/test, the drain's window phase and the
 *                epochs made again after a rebuild;
 * window_shm.c   the memory of MPI_Win_allocate_shared: a shared file mapping inside the
 *                upper half, shared again among the node's ranks at restart.
 *
 * Every window gets a communicator of its own (a hidden virtual communicator, split from the
 * application's with the same members in the same order): the real window is made over it,
 * the stub's post/complete notices travel on it (so the drain counts and buffers them like any
 * message), the collective clock counts fences and Win_free on its id, and its group id and
 * creation index name the window in the global rebuild order. */
#ifndef MANA_WINDOW_H
#define MANA_WINDOW_H

#include "records.h"

struct win_lock {
  int rank, type, assert;
};

struct win_region {
  void *base;
  MPI_Aint size;
};

struct win_shm {
  char *map;      /* the whole node segment, mapped at the same address as before a restart */
  size_t map_len; /* page multiple */
  int n, me;
  MPI_Aint *sizes, *disp_units, *offsets; /* per rank of the window's communicator */
};

struct win_rec {
  struct win_rec *next; /* all windows, sorted by (ggid, cindex) */
  uint32_t self;        /* the application's (virtual) window */
  MPI_Comm comm;        /* the hidden communicator (virtual) */
  uint64_t ggid, cindex;
  int flavor; /* MPI_WIN_FLAVOR_*: what MPI_WIN_CREATE_FLAVOR answers */
  int large;  /* made by a _c constructor */
  void *base;
  MPI_Aint size, disp_unit;
  int disp_unit_attr; /* MPI_WIN_DISP_UNIT of a shared window, answered by the stub */
  struct mana_kvlist create_info, later_info;
  char *name;
  struct mana_eh_ref errhandler;
  /* The application set the handler (MPI_Win_set_errhandler).  MPICH keeps none for a window
   * whose handler was never set, raises its errors on MPI_COMM_WORLD's handler of the moment
   * and cannot unset one: such a window must never get one from mana. */
  int eh_set;
  struct mana_attr *attrs;
  struct win_region *regions; /* dynamic windows: attached, in order */
  int nregions, cap_regions;
  struct win_shm *shm; /* MPI_WIN_FLAVOR_SHARED */
  /* Synchronization (window_sync.c). */
  int fence_open; /* the last fence did not say MPI_MODE_NOSUCCEED */
  /* Since that fence this rank began a passive epoch (a lock, lock_all, or the stub's PSCW
   * locks): MPICH ended the fence epoch on this rank, and RMA calls outside the passive one
   * fail with MPI_ERR_RMA_SYNC.  A fence the drain or a rebuild makes opens it again, and
   * must be ended again (window_sync.c, end_fence_epoch). */
  int fence_ended;
  int lock_all, lock_all_assert;
  struct win_lock *locks; /* held MPI_Win_lock epochs */
  int nlocks, cap_locks;
  int *access;                  /* started (PSCW): targets, ranks of the window's group */
  unsigned char *access_locked; /* the stub's MPI_MODE_NOCHECK shared lock on each is held */
  int naccess;
  int *expose;                /* posted: origins */
  unsigned char *expose_done; /* their complete notice has arrived */
  int nexpose, exposing;
  int incomplete; /* something could not be recorded: refused */
};

/* The record of a window handle of the application's, or NULL. */
struct win_rec *mana_win_rec(MPI_Win v);
/* The first window in the global order (then ->next). */
struct win_rec *mana_win_first(void);
static inline MPI_Win mana_win_real(const struct win_rec *r)
{
  return (MPI_Win)mana_handle_real(MANA_KIND_WIN, r->self);
}

/* ---- window_sync.c ---- */
/* Puts the passive-target epochs this rank held back on a rebuilt window (locks, lock_all,
 * the stub's PSCW locks), and its fence state (collective: called in the global order). */
int mana_win_refence(struct win_rec *r);
int mana_win_relock(struct win_rec *r);
void mana_win_sync_release(struct win_rec *r);
/* The drain's window phase, after the message counts are exchanged (every rank is then in
 * its drain): completes every RMA operation this rank has issued.  0, or -1 with why. */
int mana_windows_drain(const char **why, int *rc_out);

/* ---- window_shm.c ---- */
/* Collective over the window's communicator (real): the segment, this rank's part at *base. */
int mana_win_shm_create(struct win_rec *r, MPI_Comm real_comm, MPI_Aint size, MPI_Aint disp_unit,
                        void **base);
/* At a rebuild: the same segment shared again at the same addresses (collective). */
int mana_win_shm_reshare(struct win_rec *r, MPI_Comm real_comm);
void mana_win_shm_free(struct win_rec *r);
int mana_win_shm_query(const struct win_rec *r, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                       void *baseptr);
/* What the real window of a shared window is made over (window_shm.c says why it differs
 * from the application's part). */
void mana_win_shm_real_part(const struct win_rec *r, void **base, MPI_Aint *size);

#endif
