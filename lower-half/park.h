/* Parking upper-half threads for a checkpoint (see park.c). */
#ifndef MANA_LH_PARK_H
#define MANA_LH_PARK_H

#include <stddef.h>

#include "mana/boundary.h" /* MANA_PARK_SIGNAL */

int mana_park_install(int signo);
/* Parks every upper-half thread; 0 when all are parked, -1 with a reason after timeout_ms. */
int mana_park_all(int signo, int timeout_ms, char *err, size_t errlen);
void mana_park_release(void);
/* Runs on the parking thread itself (upper half's thread pointer, no TLS). */
void mana_park_self(int in_signal_handler);

#endif
