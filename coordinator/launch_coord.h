/* launch_coord: give a job started by mana_launch a coordinator.
 *
 * The launcher form uses the coordinator already serving the checkpoint directory when
 * one is waiting there for a job (started by hand with "mana_coordinator --daemon"), and
 * otherwise starts one: "mana_coordinator --daemon --port 0 --ckptdir DIR" bound to the
 * life of the launcher (--watch-pid: mana_launch execs the launcher, which keeps its pid),
 * so that no coordinator outlives a launcher that failed.
 *
 * The per-rank form uses the live one of the directory too.  Without one, the process the
 * launcher numbers 0 starts it the same way, for as many ranks as the launcher starts, but
 * not bound to its own life (rank 0 may end first, or fail at its start while the others
 * come); every other rank waits for it to appear in the checkpoint directory, which is how
 * ranks on other nodes find it when the directory is shared.
 */
#ifndef MANA_LAUNCH_COORD_H
#define MANA_LAUNCH_COORD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "coord_net.h"

struct launch_coord {
  char address[COORD_HOSTPORT_MAX]; /* HOST:PORT for MANA_COORDINATOR */
  char secret_file[PATH_MAX];       /* for MANA_SECRET_FILE */
  pid_t started_pid;                /* the daemon we started, 0 if we reused one */
};

/* What the launcher form knows about the job. */
struct launch_coord_request {
  const char *bin_dir;                          /* where mana_coordinator is */
  const char *ckptdir;                          /* absolute; created (0700) if missing */
  unsigned long ranks;                          /* 0: unknown */
  const char *interval;                         /* seconds, or NULL */
  const char *ckpt_signal, *ckpt_signal_action; /* mana_coordinator's options, or NULL */
  bool forked_writers;
  bool incremental;
  const char *full_every, *keep; /* mana_coordinator's --full-every and --keep, or NULL */
  const char *command;           /* the job's command line, for MANIFEST, or NULL */
  const char *host;              /* address to listen on, or NULL: every address */
  /* Launcher form: the coordinator ends with this process (the launcher, after the exec).
   * Per-rank form: false; rank 0 may end before the others, and the coordinator ends when
   * its ranks have all disconnected (or its connect timeout passes without any). */
  bool bound_to_caller;
};

/* Returns 0 with lc filled, or -1 with err. */
int launch_coord_start(const struct launch_coord_request *req, struct launch_coord *lc, char *err,
                       size_t errlen);

/* Per-rank form: 1 with lc filled when a live coordinator serves ckptdir, else 0. */
int launch_coord_find(const char *ckptdir, struct launch_coord *lc);

/* Per-rank form, a rank other than 0: launch_coord_find until one appears, for at most
 * wait_ms. */
int launch_coord_await(const char *ckptdir, long wait_ms, struct launch_coord *lc);

/* The launcher could not be started: stop the coordinator started for it. */
void launch_coord_abandon(const struct launch_coord *lc);

#endif
