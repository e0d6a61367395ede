#ifndef MANA_PARK_STORM_H
#define MANA_PARK_STORM_H
/* Starts the park-storm fault injection if MANA_TEST_PARK_STORM_MS is set (see park_storm.c). */
void mana_park_storm_start(void);
#endif
