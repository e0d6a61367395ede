/* launch_locality: where the coordinator that mana_launch starts should listen.
 *
 * A coordinator that every rank reaches over loopback need not be reachable from the
 * network at all, so mana_launch binds it to 127.0.0.1 when it can tell that every rank
 * runs on this host, and to every address otherwise (or where --coordinator-host /
 * MANA_COORDINATOR_HOST says).
 */
#ifndef MANA_LAUNCH_LOCALITY_H
#define MANA_LAUNCH_LOCALITY_H

#include <stdbool.h>

#include "launch_args.h"

#define LAUNCH_ENV_COORD_HOST "MANA_COORDINATOR_HOST"

/* True when the launcher can only start ranks on this host: Hydra without host options
 * outside a multi-node allocation of a resource manager it reads (Slurm, PBS, LSF, SGE,
 * Cobalt), or srun inside a one-node Slurm allocation without node options; in the per-rank
 * form, when the launcher's environment says all ranks are here. When in doubt, false. */
bool launch_ranks_all_local(const struct launch_plan *plan);

/* The --host to give mana_coordinator: asked (--coordinator-host, else
 * MANA_COORDINATOR_HOST; "*": every address), else "127.0.0.1" when every rank is local,
 * else NULL (every IPv4 address). */
const char *launch_coordinator_host(const struct launch_plan *plan, const char *asked);

#endif
