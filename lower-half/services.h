#ifndef MANA_SERVICES_H
#define MANA_SERVICES_H
#include "mana/lh_services.h"
void mana_lh_services_fill(struct mana_lh_services *s);
/* The thread level the application was given, or -1 before MPI_Init. */
int mana_mpi_thread_level(void);
#endif
