#ifndef MANA_SERVICES_H
#define MANA_SERVICES_H
#include "mana/lh_services.h"
void mana_lh_services_fill(struct mana_lh_services *s);
/* The thread level the application was given, or -1 before MPI_Init. */
int mana_mpi_thread_level(void);
/* A restarted rank: the level the application was given, as its image recorded it (the next
 * checkpoint records it again, and a restart of that one must initialize MPI at it too). */
void mana_mpi_thread_level_restored(int level);
#endif
