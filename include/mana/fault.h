/* Named fault points, for the fault-injection tests (tests/faults/run_faults.sh).
 *
 * MANA_FAULT=NAME makes the code at fault point NAME fail the way a real fault there would
 * (a process killed, a rank lost), in every process that reaches it; MANA_FAULT=NAME:RANK
 * only in rank RANK. One point at a time. The points sit on rare paths only (writing a
 * checkpoint, committing it, restarting), where one getenv costs nothing; without
 * MANA_FAULT nothing changes.
 *
 *   write-kill             a rank is killed (SIGKILL) in the middle of writing its image
 *   write-delay            a rank's image writer pauses 3 s before it reads any state (a
 *                          slow file system: a forked writer still has everything to write
 *                          when its application goes on, or finalizes and exits)
 *   coord-kill-in-write    the coordinator is killed once a rank has begun writing
 *   restart-kill           a restarting rank is killed before it joins MPI
 *   park-fail              a rank reports, once per process, that a thread would not park
 *                          (its threads are parked then, as in a real failure some are):
 *                          the generation is aborted before any rank drains
 *   restart-other-build    a restarting rank takes itself for a build of mana whose boundary
 *                          page (mana/boundary.h) has another version than the image's
 *   restart-other-node     a restarting rank takes itself for one on another node than the
 *                          other ranks (the check of the ranks sharing POSIX shared memory)
 *   checkpoint-other-node  a rank takes itself for one on another node than the other ranks
 *                          when its image is written (the same check, the other way round)
 *   park-slow-rounds       every round of a park pauses 200 ms after it lists the threads,
 *                          and the first round that finds no new thread says so on stderr
 *                          (a thread created then must still be found: lower-half/park.c)
 *   wrapper-linger         MPI_Pcontrol stays in the stub's code after its last park check
 *                          until a park is asked for and about a second more, as a thread
 *                          preempted there would (read once, at the first MPI_Pcontrol): the
 *                          park must still catch the thread once it is back in the application
 *                          (tests/integration/park_on_way_out.sh)
 */
#ifndef MANA_FAULT_H
#define MANA_FAULT_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* True when MANA_FAULT names this point, for every rank or for `rank` (-1: not a rank). */
static inline bool mana_fault(const char *name, long rank)
{
  const char *v = getenv("MANA_FAULT");
  size_t n = strlen(name);

  if (!v || strncmp(v, name, n) != 0)
    return false;
  if (v[n] == '\0')
    return true;
  return v[n] == ':' && rank >= 0 && strtol(v + n + 1, NULL, 10) == rank;
}

#endif
