/* The order in which communicators are rebuilt at restart.
 *
 * Rebuilding a communicator is collective over its members, so all of them must rebuild their
 * communicators in orders that agree.  A communicator is named by its group id (the same on
 * every member: cc_group_id of the members' world ranks) and its creation index among the
 * communicators with that group id on this process; members make communicators of the same
 * membership in the same order, since making one is collective over them, so the pair names
 * the same communicator on every member.  Sorting by the pair gives every process a
 * subsequence of one global order, and processes that rebuild in such an order cannot
 * deadlock: the smallest pair not yet rebuilt anywhere has every member waiting for it.
 *
 * Pure code (no MPI), shared by comm.c and its unit test. */
#ifndef MANA_COMM_ORDER_H
#define MANA_COMM_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "u64map.h"

struct mana_comm_key {
  uint64_t ggid;
  uint64_t index;
  uint32_t slot; /* the caller's: which communicator */
};

/* The creation index of the next communicator with this group id (0, 1, 2, ...), counted in
 * `made`; UINT64_MAX when out of memory. */
uint64_t mana_comm_next_index(struct mana_u64map *made, uint64_t ggid);

/* Sorts by (ggid, index). */
void mana_comm_sort(struct mana_comm_key *keys, size_t n);

#endif
