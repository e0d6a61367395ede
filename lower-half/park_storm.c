/* Fault injection for the parking machinery: with MANA_TEST_PARK_STORM_MS=N in the
 * environment, a lower-half thread parks every upper-half thread every N milliseconds and
 * releases it again.  An application's results must not change; tests run real programs this
 * way to show that threads can be stopped anywhere (in computation, in MPI calls, in blocking
 * waits, in system calls) and go on unharmed.  (A thread inside a collective can only park once
 * its peers run again, so some rounds give up after 50 ms: that is not an error here.) */
#define _GNU_SOURCE
#include "park_storm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mana/park.h"
#include "lower_threads.h"
#include "park.h"

static int interval_ms;

static void *storm(void *arg)
{
  (void)arg;
  char err[256];
  unsigned long rounds = 0, failures = 0;
  for (;;) {
    struct timespec ts = {interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    /* Without the collective clock a thread inside a collective cannot park until its peers
     * are released: such a round gives up after a short while, which is expected here. */
    if (mana_park_all(MANA_PARK_SIGNAL, 50, err, sizeof(err)) != 0)
      failures++;
    mana_park_release();
    rounds++;
    if (getenv("MANA_TEST_PARK_STORM_VERBOSE") && (rounds & (rounds - 1)) == 0)
      fprintf(stderr, "mana_lh: park storm: %lu rounds, %lu failed\n", rounds, failures);
  }
  return NULL;
}

void mana_park_storm_start(void)
{
  const char *v = getenv("MANA_TEST_PARK_STORM_MS");
  if (!v || (interval_ms = atoi(v)) <= 0)
    return;
  pthread_t t;
  sigset_t mask;
  mana_lower_threads_mask_enter(&mask);
  if (pthread_create(&t, NULL, storm, NULL) != 0)
    fprintf(stderr, "mana_lh: cannot start the park storm thread\n");
  mana_lower_threads_mask_leave(&mask);
}
