/* The steps of a restart other than restoring state (restart_steps.c). */
#ifndef MANA_RESTART_STEPS_H
#define MANA_RESTART_STEPS_H

#include <stddef.h>

#include "checkpoint.h"

struct mana_lh_table;

/* Before anything is restored: the rank count the launcher started is the image's, the image
 * fits this process (window, kernel, vDSO address), and in a committed generation it is the
 * image its MANIFEST lists.  0, or -1 with one line in err. */
int mana_restart_check_image(int dirfd, const char *dir, const char *name,
                             const struct mana_image_info *info, char *err, size_t errlen);

/* Points the restored boundary page at this lower half (its function table, thread pointer,
 * FSGSBASE). */
void mana_restart_refill_boundary(const struct mana_lh_table *table);

/* MPI_Init_thread at the image's thread level (at least SERIALIZED, for the checkpoint
 * thread); the job must give this process the image's rank and size. */
int mana_restart_init_mpi(const struct mana_rank_facts *facts, char *err, size_t errlen);

#endif
