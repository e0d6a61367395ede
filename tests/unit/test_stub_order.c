/* The rebuild order of communicators (wrappers/comm_order.c) and the map it counts with
 * (wrappers/u64map.c).  Simulated jobs make communicators over random member sets (each
 * creation collective over its members, as in MPI), free some, and then "rebuild": every
 * process must sort its communicators into an order consistent with every other process's,
 * and processes that rebuild in that order, one collective creation at a time, must all
 * finish. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cc_algorithm.h"
#include "comm_order.h"
#include "u64map.h"

Test(u64map, put_get_replace_remove_and_grow)
{
  struct mana_u64map m = {0};
  uint64_t v = 0, old = 0;
  for (uint64_t k = 1; k <= 5000; k++)
    cr_assert_eq(mana_u64map_put(&m, k * 0x10000, k, NULL), 0);
  cr_assert_eq(m.count, 5000);
  for (uint64_t k = 1; k <= 5000; k++) {
    cr_assert(mana_u64map_get(&m, k * 0x10000, &v));
    cr_assert_eq(v, k);
  }
  cr_assert_eq(mana_u64map_put(&m, 0x10000, 77, &old), 1, "an existing key is replaced");
  cr_assert_eq(old, 1);
  /* remove every other key; the rest must stay reachable (backward-shift deletion) */
  for (uint64_t k = 1; k <= 5000; k += 2)
    cr_assert(mana_u64map_remove(&m, k * 0x10000, NULL));
  for (uint64_t k = 1; k <= 5000; k++)
    cr_assert_eq(mana_u64map_get(&m, k * 0x10000, &v), (int)(k % 2 == 0), "key %lu", k);
  cr_assert_not(mana_u64map_remove(&m, 3 * 0x10000, NULL));
  cr_assert_eq(mana_u64map_put(&m, 0, 1, NULL), -1, "key 0 is reserved");
  mana_u64map_free(&m);
}

Test(comm_order, indexes_count_per_group)
{
  struct mana_u64map made = {0};
  cr_assert_eq(mana_comm_next_index(&made, 11), 0);
  cr_assert_eq(mana_comm_next_index(&made, 11), 1);
  cr_assert_eq(mana_comm_next_index(&made, 22), 0);
  cr_assert_eq(mana_comm_next_index(&made, 11), 2);
  mana_u64map_free(&made);
}

Test(comm_order, reversed_member_order_shares_the_group_id)
{
  /* MPI_Comm_split with reversed keys: the same members in another order. */
  int a[3] = {0, 2, 5}, b[3] = {5, 2, 0};
  cr_assert_eq(cc_group_id(a, 3), cc_group_id(b, 3));
  struct mana_comm_key k[3] = {{9, 1, 0}, {3, 7, 1}, {9, 0, 2}};
  mana_comm_sort(k, 3);
  cr_assert(k[0].ggid == 3 && k[1].slot == 2 && k[2].slot == 0);
}

enum { PROCS = 7, EVENTS = 300, MAXC = EVENTS };

struct process {
  struct mana_u64map made;
  struct mana_comm_key live[MAXC]; /* slot = global id of the communicator */
  size_t n;
};

struct job {
  struct process p[PROCS];
  int members[MAXC][PROCS]; /* world ranks in rank order, -1 terminated */
  int size[MAXC];
  int freed[MAXC];
  int ncomms;
};

static uint32_t next_random(uint32_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* One creation, collective over a random member set in a random rank order; sometimes the
 * same set as an earlier communicator (a dup). */
static void create(struct job *j, uint32_t *seed)
{
  int c = j->ncomms++;
  if (c > 0 && next_random(seed) % 3 == 0) {
    int from = (int)(next_random(seed) % (uint32_t)c);
    memcpy(j->members[c], j->members[from], sizeof(j->members[c]));
    j->size[c] = j->size[from];
  } else {
    int n = 0;
    for (int r = 0; r < PROCS; r++)
      if (next_random(seed) % 2)
        j->members[c][n++] = r;
    if (n == 0)
      j->members[c][n++] = (int)(next_random(seed) % PROCS);
    for (int i = n - 1; i > 0; i--) { /* shuffle: the rank order is arbitrary */
      int k = (int)(next_random(seed) % (uint32_t)(i + 1)), t = j->members[c][i];
      j->members[c][i] = j->members[c][k];
      j->members[c][k] = t;
    }
    j->size[c] = n;
  }
  uint64_t ggid = cc_group_id(j->members[c], (size_t)j->size[c]);
  for (int i = 0; i < j->size[c]; i++) {
    struct process *p = &j->p[j->members[c][i]];
    uint64_t index = mana_comm_next_index(&p->made, ggid);
    p->live[p->n++] = (struct mana_comm_key){ggid, index, (uint32_t)c};
  }
}

static void free_comm(struct job *j, int c)
{
  j->freed[c] = 1;
  for (int i = 0; i < j->size[c]; i++) {
    struct process *p = &j->p[j->members[c][i]];
    for (size_t k = 0; k < p->n; k++)
      if (p->live[k].slot == (uint32_t)c) {
        p->live[k] = p->live[--p->n];
        break;
      }
  }
}

static void make_job(struct job *j, uint32_t seed)
{
  memset(j, 0, sizeof(*j));
  for (int e = 0; e < EVENTS; e++) {
    if (j->ncomms > 0 && next_random(&seed) % 4 == 0) {
      int c = (int)(next_random(&seed) % (uint32_t)j->ncomms);
      if (!j->freed[c])
        free_comm(j, c);
    } else {
      create(j, &seed);
    }
  }
  for (int r = 0; r < PROCS; r++)
    mana_comm_sort(j->p[r].live, j->p[r].n);
}

static size_t position(const struct process *p, uint32_t c)
{
  for (size_t k = 0; k < p->n; k++)
    if (p->live[k].slot == c)
      return k;
  return SIZE_MAX;
}

Test(comm_order, every_pair_of_processes_agrees_on_the_order)
{
  static struct job j;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    make_job(&j, seed * 2654435761u);
    for (int a = 0; a < PROCS; a++)
      for (int b = a + 1; b < PROCS; b++) {
        /* the shared communicators, in a's order, must be in increasing positions of b's */
        size_t last = 0;
        int first = 1;
        for (size_t k = 0; k < j.p[a].n; k++) {
          size_t pb = position(&j.p[b], j.p[a].live[k].slot);
          if (pb == SIZE_MAX)
            continue;
          cr_assert(first || pb > last, "seed %u: processes %d and %d disagree", seed, a, b);
          first = 0;
          last = pb;
        }
      }
    /* a communicator has the same key on all of its members */
    for (int r = 0; r < PROCS; r++)
      for (size_t k = 0; k < j.p[r].n; k++) {
        const struct mana_comm_key *key = &j.p[r].live[k];
        const struct process *m0 = &j.p[j.members[key->slot][0]];
        const struct mana_comm_key *other = &m0->live[position(m0, key->slot)];
        cr_assert(other->ggid == key->ggid && other->index == key->index);
      }
  }
}

Test(comm_order, rebuilding_in_sorted_order_never_deadlocks)
{
  static struct job j;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    make_job(&j, seed * 40503u + 7);
    size_t at[PROCS] = {0};
    for (;;) {
      int progress = 0, done = 1;
      for (int r = 0; r < PROCS; r++) {
        if (at[r] == j.p[r].n)
          continue;
        done = 0;
        /* the creation completes when every member is at it */
        uint32_t c = j.p[r].live[at[r]].slot;
        int ready = 1;
        for (int i = 0; i < j.size[c]; i++) {
          const struct process *m = &j.p[j.members[c][i]];
          int mr = j.members[c][i];
          ready &= at[mr] < m->n && m->live[at[mr]].slot == c;
        }
        if (ready) {
          for (int i = 0; i < j.size[c]; i++)
            at[j.members[c][i]]++;
          progress = 1;
        }
      }
      if (done)
        break;
      cr_assert(progress, "seed %u: the rebuild deadlocks", seed);
    }
  }
}
