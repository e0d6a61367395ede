/* coord_lock_probe: is a coordinator serving a checkpoint directory right now?
 *
 * A coordinator holds an exclusive flock on DIR/.mana/lock for its whole life, and the
 * kernel drops it when the process dies however it ends, so the lock, unlike the port file
 * DIR/.mana/coordinator that a killed coordinator leaves behind, always tells the truth
 * (on one host, or on a shared file system with working flock). */
#ifndef MANA_COORD_LOCK_PROBE_H
#define MANA_COORD_LOCK_PROBE_H

#include <stdbool.h>

/* True when a live process holds the lock of ckptdir. */
bool coord_dir_served(const char *ckptdir);

#endif
