/* Unit tests for coordinator/coord_ckpt.c: the generation state machine. The target table
 * (max over ranks), epochs, the termination and stall tests, the order of the phases and
 * every protocol violation, without sockets. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_ckpt.h"

#define G1 0x1000
#define G2 0x2000
#define G3 0x3000

static struct ckpt *c;

static void teardown(void)
{
  ckpt_free(c);
  c = NULL;
}

TestSuite(coord_ckpt, .fini = teardown);

static uint64_t target(uint64_t ggid)
{
  uint64_t t = 0;

  cr_assert(ckpt_target(c, ggid, &t), "no target for %lx", (unsigned long)ggid);
  return t;
}

/* Three ranks: G1 everywhere, G2 on ranks 0 and 2, G3 on rank 1 only. */
static void three_ranks_converging(void)
{
  const struct coord_entry r0[] = {{G1, 5}, {G2, 9}};
  const struct coord_entry r1[] = {{G1, 7}, {G3, 1}};
  const struct coord_entry r2[] = {{G2, 11}, {G1, 6}};

  c = ckpt_new(4, 3);
  cr_assert_not_null(c);
  cr_assert_eq(c->phase, CKPT_PHASE_SEQ);
  cr_assert_eq(ckpt_on_seq(c, 0, r0, 2, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_seq(c, 1, r1, 2, false), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 0, "no TARGETS before every SEQ");
  cr_assert_eq(ckpt_on_seq(c, 2, r2, 2, false), CKPT_ACT_TARGETS_ALL);
  cr_assert_eq(c->phase, CKPT_PHASE_CONVERGE);
  cr_assert_eq(c->epoch, 1);
}

static void park_all(uint64_t epoch)
{
  for (size_t r = 0; r + 1 < c->size; r++)
    cr_assert_eq(ckpt_on_parked(c, r, epoch, NULL), CKPT_ACT_NONE);
}

Test(coord_ckpt, targets_are_max_over_ranks)
{
  struct coord_entry e;
  size_t cursor = 0, n = 0;
  uint64_t sum = 0;

  three_ranks_converging();
  cr_assert_eq(target(G1), 7);
  cr_assert_eq(target(G2), 11);
  cr_assert_eq(target(G3), 1);
  cr_assert_eq(c->ntargets, 3);
  while (ckpt_next_target(c, 0, &cursor, &e)) {
    sum += e.ggid;
    n++;
  }
  cr_assert_eq(n, 3);
  cr_assert_eq(sum, G1 + G2 + G3, "each group once");
}

/* --- who is sent which target ------------------------------------------------------------ */

static int by_ggid(const void *a, const void *b)
{
  const struct coord_entry *x = a, *y = b;
  return x->ggid < y->ggid ? -1 : x->ggid > y->ggid;
}

/* rank's TARGETS at the current epoch are exactly want[0..n), in any order. */
static void expect_sent(size_t rank, const struct coord_entry *want, size_t n)
{
  struct coord_entry got[8];
  size_t cursor = 0, k = 0;

  while (k < 8 && ckpt_next_rank_target(c, rank, &cursor, &got[k]))
    k++;
  cr_assert(!ckpt_next_rank_target(c, rank, &cursor, &got[0]), "rank %zu: more than 8", rank);
  cr_assert_eq(k, n, "rank %zu at epoch %lu: %zu entries, expected %zu", rank,
               (unsigned long)c->epoch, k, n);
  qsort(got, k, sizeof(*got), by_ggid);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(got[i].ggid, want[i].ggid, "rank %zu: entry %zu is %lx", rank, i,
                 (unsigned long)got[i].ggid);
    cr_assert_eq(got[i].value, want[i].value, "rank %zu: %lx=%lu", rank, (unsigned long)got[i].ggid,
                 (unsigned long)got[i].value);
  }
}

Test(coord_ckpt, each_rank_is_sent_the_targets_of_its_own_groups_only)
{
  /* G1 everywhere, G2 on ranks 0 and 2, G3 on rank 1 only: each rank is in two groups */
  const struct coord_entry r0[] = {{G1, 7}, {G2, 11}}, r1[] = {{G1, 7}, {G3, 1}};
  const struct ckpt_park at = {G3, 1};

  three_ranks_converging();
  expect_sent(0, r0, 2);
  expect_sent(1, r1, 2);
  expect_sent(2, r0, 2);
  /* a change goes to the group's members; the others get an empty TARGETS to answer */
  cr_assert_eq(ckpt_on_raise(c, 2, G2, 12), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, (struct coord_entry[]){{G2, 12}}, 1);
  expect_sent(1, NULL, 0);
  expect_sent(2, (struct coord_entry[]){{G2, 12}}, 1);
  /* so does a release */
  cr_assert_eq(ckpt_on_running(c, 0, 2, true), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 2, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 2, &at), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_release(c), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, NULL, 0);
  expect_sent(1, (struct coord_entry[]){{G3, 2}}, 1);
  expect_sent(2, NULL, 0);
  /* two changes in one epoch: a rank in both groups gets both */
  cr_assert_eq(ckpt_on_parked(c, 0, 3, &(struct ckpt_park){G1, 7}), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 3, &(struct ckpt_park){G3, 2}), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_release(c), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, (struct coord_entry[]){{G1, 8}}, 1);
  expect_sent(1, (struct coord_entry[]){{G1, 8}, {G3, 3}}, 2);
  expect_sent(2, (struct coord_entry[]){{G1, 8}}, 1);
}

Test(coord_ckpt, a_rank_that_joins_a_group_after_seq_is_told_its_target)
{
  three_ranks_converging();
  /* rank 0 left the constructor of G3 after its SEQ: it says so with a RAISE of its SEQ
   * there, 0, below rank 1's 1; a new epoch tells rank 0 alone */
  cr_assert_eq(ckpt_on_raise(c, 0, G3, 0), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(c->epoch, 2);
  cr_assert_eq(c->raises, 0, "nothing was raised");
  cr_assert_eq(target(G3), 1);
  expect_sent(0, (struct coord_entry[]){{G3, 1}}, 1);
  expect_sent(1, NULL, 0);
  expect_sent(2, NULL, 0);
  /* a member now: the next change of G3 reaches it */
  cr_assert_eq(ckpt_on_raise(c, 1, G3, 2), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, (struct coord_entry[]){{G3, 2}}, 1);
  expect_sent(1, (struct coord_entry[]){{G3, 2}}, 1);
  expect_sent(2, NULL, 0);
  /* joining at the target, or again, tells nothing */
  cr_assert_eq(ckpt_on_raise(c, 2, G3, 2), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_raise(c, 0, G3, 0), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 3);
  /* a group nobody reported yet: its first member's RAISE is a change for that member */
  cr_assert_eq(ckpt_on_raise(c, 2, 0x4000, 1), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, NULL, 0);
  expect_sent(1, NULL, 0);
  expect_sent(2, (struct coord_entry[]){{0x4000, 1}}, 1);
  /* one made while converging, joined at 0: nothing to tell anyone yet */
  cr_assert_eq(ckpt_on_raise(c, 1, 0x6000, 0), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 4);
  cr_assert_eq(target(0x6000), 0);
  cr_assert_eq(ckpt_on_raise(c, 0, 0x6000, 1), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, (struct coord_entry[]){{0x6000, 1}}, 1);
  expect_sent(1, (struct coord_entry[]){{0x6000, 1}}, 1);
  expect_sent(2, NULL, 0);
}

Test(coord_ckpt, parking_at_a_group_never_reported_joins_it)
{
  three_ranks_converging();
  park_all(1);
  /* rank 2 parks at G3, which it never reported, below rank 1's target: its status cannot
   * count, and a new epoch tells it the target */
  cr_assert_eq(ckpt_on_parked(c, 2, 1, &(struct ckpt_park){G3, 0}), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(c->epoch, 2);
  cr_assert(!ckpt_converged(c));
  expect_sent(0, NULL, 0);
  expect_sent(1, NULL, 0);
  expect_sent(2, (struct coord_entry[]){{G3, 1}}, 1);
  /* at a group nobody has reported: a member at its own seq, nothing to tell */
  cr_assert_eq(ckpt_on_parked(c, 0, 2, &(struct ckpt_park){0x5000, 0}), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 2);
  cr_assert_eq(target(0x5000), 0);
  /* released there, it is told */
  cr_assert_eq(ckpt_on_running(c, 1, 2, true), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 2, NULL), CKPT_ACT_NONE);
  cr_assert(ckpt_stalled(c));
  cr_assert_eq(ckpt_release(c), CKPT_ACT_TARGETS_CHANGED);
  expect_sent(0, (struct coord_entry[]){{0x5000, 1}}, 1);
  expect_sent(1, NULL, 0);
  expect_sent(2, NULL, 0);
}

/* Under MPI_THREAD_MULTIPLE every rank may be blocked (a thread inside a constructor over
 * groups) while a thread of one of them is held at a collective that another rank's blocked
 * thread waits for (MPICH's threads/init/mult_session hung so): a stall, and the release lets
 * the held thread pass. */
Test(coord_ckpt, a_blocked_rank_with_a_held_thread_is_released)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_running(c, 0, 1, true), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 2, 1, true), CKPT_ACT_NONE);
  cr_assert(!ckpt_stalled(c), "all blocked, none held: nothing to release");
  cr_assert_eq(ckpt_release(c), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_blocked_held(c, 2, 1, &(struct ckpt_park){G2, 11}), CKPT_ACT_NONE);
  cr_assert(ckpt_stalled(c));
  cr_assert(!ckpt_converged(c));
  cr_assert_eq(ckpt_release(c), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(target(G2), 12);
  cr_assert_eq(c->epoch, 2);
  expect_sent(0, (struct coord_entry[]){{G2, 12}}, 1);
  expect_sent(2, (struct coord_entry[]){{G2, 12}}, 1);
  /* the next status without a held thread counts as plain blocked */
  cr_assert_eq(ckpt_on_running(c, 2, 2, true), CKPT_ACT_NONE);
  cr_assert_eq(c->now_blocked_held, 0);
  /* a thread held at a group its rank never named (made after its SEQ): the rank joins it
   * and is told its target, or a release would raise a target it never hears of */
  cr_assert_eq(ckpt_on_blocked_held(c, 1, 2, &(struct ckpt_park){G2, 11}),
               CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(c->epoch, 3);
  expect_sent(1, (struct coord_entry[]){{G2, 12}}, 1);
}

/* A communicator per node of 64 ranks: what a rank is sent does not grow with the job. */
Test(coord_ckpt, entries_sent_per_rank_do_not_grow_with_the_ranks)
{
  const size_t ranks = 4096;

  c = ckpt_new(1, ranks);
  for (size_t r = 0; r < ranks; r++) {
    const struct coord_entry seq[] = {{G1, 10 + r % 3}, {0x100 + r / 64, r % 5}};
    cr_assert_eq(ckpt_on_seq(c, r, seq, 2, false),
                 r + 1 < ranks ? CKPT_ACT_NONE : CKPT_ACT_TARGETS_ALL);
  }
  cr_assert_eq(c->ntargets, 1 + ranks / 64);
  for (size_t r = 0; r < ranks; r++)
    expect_sent(r, (struct coord_entry[]){{0x100 + r / 64, 4}, {G1, 12}}, 2);
  cr_assert_eq(ckpt_on_raise(c, 5, G1, 13), CKPT_ACT_TARGETS_CHANGED);
  for (size_t r = 0; r < ranks; r++)
    expect_sent(r, (struct coord_entry[]){{G1, 13}}, 1);
  cr_assert_eq(ckpt_on_raise(c, 70, 0x101, 5), CKPT_ACT_TARGETS_CHANGED);
  for (size_t r = 0; r < ranks; r++)
    expect_sent(r, (struct coord_entry[]){{0x101, 5}}, r / 64 == 1);
}

Test(coord_ckpt, seq_in_chunks)
{
  const struct coord_entry part1[] = {{G1, 3}};
  const struct coord_entry part2[] = {{G2, 4}};
  const struct coord_entry other[] = {{G1, 1}};

  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_seq(c, 0, part1, 1, true), CKPT_ACT_NONE);
  cr_assert_eq(c->seq_done, 0);
  cr_assert_eq(ckpt_on_seq(c, 0, part2, 1, false), CKPT_ACT_NONE);
  cr_assert_eq(c->seq_done, 1);
  cr_assert_eq(ckpt_on_seq(c, 1, other, 1, false), CKPT_ACT_TARGETS_ALL);
  cr_assert_eq(target(G1), 3);
  cr_assert_eq(target(G2), 4);
}

Test(coord_ckpt, empty_tables)
{
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_seq(c, 0, NULL, 0, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_seq(c, 1, NULL, 0, false), CKPT_ACT_TARGETS_ALL);
  cr_assert_eq(c->ntargets, 0);
  cr_assert_eq(ckpt_on_parked(c, 0, 1, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 1, NULL), CKPT_ACT_DRAIN);
}

Test(coord_ckpt, seq_twice_aborts)
{
  const struct coord_entry e[] = {{G1, 1}};

  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_seq(c, 0, e, 1, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_seq(c, 0, e, 1, false), CKPT_ACT_ABORT);
  cr_assert(strstr(c->reason, "rank 0 sent SEQ twice"), "%s", c->reason);
  cr_assert_eq(c->phase, CKPT_PHASE_ABORT);
}

/* --- termination ------------------------------------------------------------------------- */

Test(coord_ckpt, drain_when_all_parked_at_current_epoch)
{
  const struct ckpt_park at = {G1, 7};

  three_ranks_converging();
  cr_assert(!ckpt_converged(c));
  cr_assert_eq(ckpt_on_parked(c, 0, 1, &at), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 1, 1, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 1, NULL), CKPT_ACT_NONE);
  cr_assert(!ckpt_converged(c), "rank 1 is running");
  cr_assert_eq(ckpt_on_parked(c, 1, 1, NULL), CKPT_ACT_DRAIN);
  cr_assert_eq(c->phase, CKPT_PHASE_SUSPEND);
  for (size_t r = 0; r < 3; r++)
    cr_assert_eq(c->ranks[r].state, CKPT_RANK_SUSPENDING);
}

/* --- suspending: the drain starts on every rank or on none -------------------------------- */

static void to_suspend_phase(void)
{
  three_ranks_converging();
  park_all(1);
  cr_assert_eq(ckpt_on_parked(c, 2, 1, NULL), CKPT_ACT_DRAIN);
}

Test(coord_ckpt, go_when_all_suspended)
{
  to_suspend_phase();
  cr_assert_eq(ckpt_on_suspended(c, 2), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_NONE);
  cr_assert_eq(c->ranks[0].state, CKPT_RANK_SUSPENDED);
  cr_assert_eq(ckpt_on_suspended(c, 1), CKPT_ACT_GO);
  cr_assert_eq(c->phase, CKPT_PHASE_WRITE);
  for (size_t r = 0; r < 3; r++)
    cr_assert_eq(c->ranks[r].state, CKPT_RANK_DRAINING);
}

Test(coord_ckpt, a_rank_that_cannot_suspend_aborts_before_go)
{
  to_suspend_phase();
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_failed(c, 1, "1 of 2 threads parked within 10000 ms"), CKPT_ACT_ABORT);
  cr_assert(strstr(c->reason, "rank 1 could not suspend its threads: 1 of 2"), "%s", c->reason);
  cr_assert_eq(ckpt_on_suspended(c, 2), CKPT_ACT_NONE, "no GO after an abort");
}

Test(coord_ckpt, suspended_out_of_turn_aborts)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_suspend_phase();
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_ABORT, "twice");
  ckpt_free(c);
  to_suspend_phase();
  cr_assert_eq(ckpt_on_progress(c, 0, 0), CKPT_ACT_ABORT, "drained before GO");
}

Test(coord_ckpt, raise_starts_a_new_epoch)
{
  struct coord_entry e;
  size_t cursor = 0;

  three_ranks_converging();
  park_all(1);
  cr_assert_eq(ckpt_on_raise(c, 2, G1, 8), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(c->epoch, 2);
  cr_assert_eq(target(G1), 8);
  cr_assert_eq(c->raises, 1);
  /* only the changed entry goes out with epoch 2 */
  cr_assert(ckpt_next_target(c, 2, &cursor, &e));
  cr_assert_eq(e.ggid, G1);
  cr_assert_eq(e.value, 8);
  cr_assert(!ckpt_next_target(c, 2, &cursor, &e));
  /* ranks parked at epoch 1 no longer count */
  cr_assert(!ckpt_converged(c));
  cr_assert_eq(ckpt_on_parked(c, 2, 1, NULL), CKPT_ACT_NONE, "a stale PARKED");
  cr_assert_eq(ckpt_on_running(c, 0, 2, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 0, 2, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 2, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 2, NULL), CKPT_ACT_DRAIN);
}

Test(coord_ckpt, redundant_raise_changes_nothing)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_raise(c, 0, G1, 7), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_raise(c, 0, G1, 3), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 1);
  cr_assert_eq(target(G1), 7);
  cr_assert_eq(c->raises, 0);
  /* the raiser counts as running until it answers again */
  cr_assert_eq(c->ranks[0].state, CKPT_RANK_RUNNING);
}

Test(coord_ckpt, raise_of_a_new_group)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_raise(c, 1, 0x4000, 1), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(target(0x4000), 1);
  cr_assert_eq(c->ntargets, 4);
}

Test(coord_ckpt, raise_while_parked_unparks)
{
  three_ranks_converging();
  park_all(1);
  cr_assert_eq(ckpt_on_raise(c, 2, G2, 12), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(ckpt_on_parked(c, 0, 2, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 2, NULL), CKPT_ACT_NONE);
  cr_assert(!ckpt_converged(c), "rank 2 raised: it is running");
  cr_assert_eq(ckpt_on_parked(c, 2, 2, NULL), CKPT_ACT_DRAIN);
}

/* --- stalls ------------------------------------------------------------------------------ */

Test(coord_ckpt, stall_releases_parked_ranks)
{
  const struct ckpt_park at0 = {G1, 7}, at2 = {G2, 11};
  struct coord_entry e[4];
  size_t cursor = 0, n = 0;

  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 1, &at0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 1, &at2), CKPT_ACT_NONE);
  cr_assert(!ckpt_stalled(c), "rank 1 has not answered");
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE, "the caller times stalls");
  cr_assert(ckpt_stalled(c));
  cr_assert_eq(ckpt_release(c), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(c->epoch, 2);
  cr_assert_eq(c->releases, 1);
  cr_assert_eq(target(G1), 8);
  cr_assert_eq(target(G2), 12);
  while (ckpt_next_target(c, 2, &cursor, &e[n]))
    n++;
  cr_assert_eq(n, 2, "both released groups go out with epoch 2");
  cr_assert(!ckpt_stalled(c), "nobody answered epoch 2 yet");
  cr_assert_eq(ckpt_release(c), CKPT_ACT_NONE, "nobody is parked at epoch 2");
}

Test(coord_ckpt, release_without_effect)
{
  const struct ckpt_park at = {G1, 3}; /* the target of G1 is already 7 */

  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 1, &at), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_release(c), CKPT_ACT_NONE);
  cr_assert_eq(c->epoch, 1);
  cr_assert_eq(c->releases, 0);
  ckpt_free(c);
  c = ckpt_new(1, 1);
  cr_assert_eq(ckpt_release(c), CKPT_ACT_NONE, "not converging yet");
}

Test(coord_ckpt, no_stall_while_someone_runs)
{
  const struct ckpt_park at = {G1, 7};

  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 1, &at), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 2, 1, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE);
  cr_assert(!ckpt_stalled(c));
  cr_assert_eq(c->epoch, 1);
}

Test(coord_ckpt, no_stall_without_a_rank_at_a_collective)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 1, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 1, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE);
  cr_assert(!ckpt_stalled(c), "nobody can be released");
}

/* The state NUDGE is sent in: blocked ranks and done ones, nobody running or parked. */
Test(coord_ckpt, blocked_ranks_waiting_on_done_ones)
{
  const struct ckpt_park at = {G1, 7};

  three_ranks_converging();
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 2, 1, true), CKPT_ACT_NONE);
  cr_assert(!ckpt_waits_on_done(c), "rank 0 has not answered");
  cr_assert_eq(ckpt_on_parked(c, 0, 1, NULL), CKPT_ACT_NONE);
  cr_assert(ckpt_waits_on_done(c));
  cr_assert(!ckpt_stalled(c));
  /* the done one parked at a collective instead: a stall, for the stall rule */
  cr_assert_eq(ckpt_on_parked(c, 0, 1, &at), CKPT_ACT_NONE);
  cr_assert(!ckpt_waits_on_done(c));
  cr_assert(ckpt_stalled(c));
  cr_assert_eq(ckpt_on_parked(c, 0, 1, NULL), CKPT_ACT_NONE);
  cr_assert(ckpt_waits_on_done(c));
  /* one of the blocked ones running: it moves by itself */
  cr_assert_eq(ckpt_on_running(c, 2, 1, false), CKPT_ACT_NONE);
  cr_assert(!ckpt_waits_on_done(c));
  /* nobody blocked: nothing to wait for */
  cr_assert_eq(ckpt_on_parked(c, 2, 1, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 1, 1, NULL), CKPT_ACT_DRAIN);
  cr_assert(!ckpt_waits_on_done(c));
}

Test(coord_ckpt, stale_blocked_does_not_stall)
{
  const struct ckpt_park at = {G1, 7};

  three_ranks_converging();
  cr_assert_eq(ckpt_on_raise(c, 2, G3, 5), CKPT_ACT_TARGETS_CHANGED);
  cr_assert_eq(ckpt_on_parked(c, 0, 2, &at), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_parked(c, 2, 2, NULL), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_running(c, 1, 1, true), CKPT_ACT_NONE, "epoch 1 is old");
  cr_assert_eq(ckpt_on_running(c, 1, 0, true), CKPT_ACT_NONE, "no epoch: unknown");
  cr_assert(!ckpt_stalled(c));
}

/* --- writing ----------------------------------------------------------------------------- */

static void to_write_phase(void)
{
  to_suspend_phase();
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 1), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 2), CKPT_ACT_GO);
}

Test(coord_ckpt, commit_when_all_written)
{
  to_write_phase();
  cr_assert_eq(ckpt_on_progress(c, 0, 100), CKPT_ACT_NONE);
  cr_assert_eq(c->ranks[0].state, CKPT_RANK_WRITING);
  cr_assert_eq(ckpt_bytes(c), 100);
  cr_assert_eq(ckpt_on_written(c, 0, 200, "rank-000000.img", "0123456789abcdef", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 1, 300, "rank-000001.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 2, 400, "rank-000002.img", "bbbbbbbbbbbbbbbb", 0),
               CKPT_ACT_COMMIT);
  cr_assert_eq(c->phase, CKPT_PHASE_COMMIT);
  cr_assert_eq(ckpt_bytes(c), 900);
  cr_assert_str_eq(c->ranks[1].file, "rank-000001.img");
  cr_assert_str_eq(c->ranks[2].xxh, "bbbbbbbbbbbbbbbb");
}

/* Pruning trusts oldest: only the generation itself, or the base and older, can be read by
 * a restart from it. */
Test(coord_ckpt, oldest_within_the_base_chain)
{
  to_write_phase();
  c->base = 2;
  cr_assert_eq(ckpt_on_written(c, 0, 1, "a.img", "aaaaaaaa", 1), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 1, 1, "b.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(c->ranks[1].oldest, 4, "absent: the generation itself");
  cr_assert_eq(ckpt_on_written(c, 2, 1, "c.img", "aaaaaaaa", 2), CKPT_ACT_COMMIT);
  cr_assert_eq(ckpt_needs(c), 1);
}

Test(coord_ckpt, oldest_full_images_need_only_themselves)
{
  to_write_phase();
  c->base = 2;
  cr_assert_eq(ckpt_on_written(c, 0, 1, "a.img", "aaaaaaaa", 4), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 1, 1, "b.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 2, 1, "c.img", "aaaaaaaa", 4), CKPT_ACT_COMMIT);
  cr_assert_eq(ckpt_needs(c), 4);
}

Test(coord_ckpt, oldest_outside_the_chain_aborts)
{
  const uint64_t bad[] = {3, 5, 1000};

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    to_write_phase();
    c->base = 2;
    cr_assert_eq(ckpt_on_written(c, 1, 1, "b.img", "aaaaaaaa", bad[i]), CKPT_ACT_ABORT, "%llu",
                 (unsigned long long)bad[i]);
    cr_assert(strstr(c->reason, "rank 1 reported an image referring to generation"), "%s",
              c->reason);
    ckpt_free(c);
  }
  c = NULL;
  to_write_phase(); /* without a base, only itself */
  cr_assert_eq(ckpt_on_written(c, 0, 1, "a.img", "aaaaaaaa", 2), CKPT_ACT_ABORT);
}

Test(coord_ckpt, failures_while_writing_abort)
{
  to_write_phase();
  cr_assert_eq(ckpt_on_failed(c, 1, "No space left on device"), CKPT_ACT_ABORT);
  cr_assert(strstr(c->reason, "rank 1"), "%s", c->reason);
  cr_assert(strstr(c->reason, "No space left on device"), "%s", c->reason);
  /* after the abort nothing else triggers an action */
  cr_assert_eq(ckpt_on_written(c, 0, 1, "a.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_disconnect(c, 2), CKPT_ACT_NONE);
  cr_assert(strstr(c->reason, "No space"), "the first reason stays: %s", c->reason);
}

Test(coord_ckpt, bad_written_reports_abort)
{
  static const char *const names[] = {"", ".hidden", "a/b", "..", "MANIFEST", "a b", "x\n"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    to_write_phase();
    cr_assert_eq(ckpt_on_written(c, 0, 1, names[i], "aaaaaaaa", 0), CKPT_ACT_ABORT,
                 "accepted file name '%s'", names[i]);
    ckpt_free(c);
  }
  to_write_phase();
  cr_assert_eq(ckpt_on_written(c, 0, 1, "r.img", "ABCDEF01", 0), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_written(c, 0, 1, "r.img", "abc", 0), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_written(c, 0, 1, "r.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 0, 1, "r.img", "aaaaaaaa", 0), CKPT_ACT_ABORT, "twice");
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_written(c, 0, 1, "r.img", "aaaaaaaa", 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_written(c, 1, 1, "r.img", "aaaaaaaa", 0), CKPT_ACT_ABORT, "same file");
  cr_assert(strstr(c->reason, "both wrote"), "%s", c->reason);
}

/* --- protocol violations and refusals ------------------------------------------------------ */

Test(coord_ckpt, statuses_outside_convergence_abort)
{
  const struct coord_entry e[] = {{G1, 1}};

  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_parked(c, 0, 1, NULL), CKPT_ACT_ABORT);
  ckpt_free(c);
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_running(c, 0, 0, false), CKPT_ACT_ABORT);
  ckpt_free(c);
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_raise(c, 0, G1, 3), CKPT_ACT_ABORT);
  ckpt_free(c);
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_progress(c, 0, 3), CKPT_ACT_ABORT);
  ckpt_free(c);
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_written(c, 0, 3, "a.img", "aaaaaaaa", 0), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_seq(c, 0, e, 1, false), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_running(c, 0, 1, false), CKPT_ACT_ABORT);
  ckpt_free(c);
  to_write_phase();
  cr_assert_eq(ckpt_on_parked(c, 0, 0 + 2, NULL), CKPT_ACT_ABORT, "an epoch never sent");
}

/* A done rank reaches a collective while DRAIN is on its way: its PARKED crosses DRAIN. */
Test(coord_ckpt, parked_crossing_drain_is_ignored)
{
  const struct ckpt_park at = {G1, 7};

  to_suspend_phase();
  cr_assert_eq(ckpt_on_parked(c, 1, 1, &at), CKPT_ACT_NONE);
  cr_assert_eq(c->phase, CKPT_PHASE_SUSPEND);
  cr_assert_eq(c->ranks[1].state, CKPT_RANK_SUSPENDING);
  cr_assert_eq(ckpt_on_suspended(c, 0), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 1), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_suspended(c, 2), CKPT_ACT_GO);
  cr_assert_eq(ckpt_on_written(c, 1, 3, "rank-000001.img", "0123456789abcdef", 0), CKPT_ACT_NONE);
}

Test(coord_ckpt, epochs_never_sent_abort)
{
  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 2, NULL), CKPT_ACT_ABORT);
  cr_assert(strstr(c->reason, "epoch 2, which was never sent"), "%s", c->reason);
  ckpt_free(c);
  three_ranks_converging();
  cr_assert_eq(ckpt_on_parked(c, 0, 0, NULL), CKPT_ACT_ABORT);
  ckpt_free(c);
  three_ranks_converging();
  cr_assert_eq(ckpt_on_running(c, 0, 9, true), CKPT_ACT_ABORT);
}

Test(coord_ckpt, refuse_and_disconnect)
{
  c = ckpt_new(3, 2);
  cr_assert_eq(ckpt_on_refuse(c, 1, "MPI_Win_allocate memory"), CKPT_ACT_ABORT);
  cr_assert_str_eq(c->reason, "rank 1 refused the checkpoint: MPI_Win_allocate memory");
  ckpt_free(c);
  three_ranks_converging();
  cr_assert_eq(ckpt_on_disconnect(c, 2), CKPT_ACT_ABORT);
  cr_assert_str_eq(c->reason, "rank 2 disconnected during the checkpoint");
  cr_assert_eq(ckpt_abort(c, "again"), CKPT_ACT_NONE);
}

/* --- helpers ----------------------------------------------------------------------------- */

Test(coord_ckpt, generation_matching)
{
  c = ckpt_new(5, 1);
  cr_assert_eq(ckpt_match_gen(c, 5, 5), CKPT_GEN_CURRENT);
  cr_assert_eq(ckpt_match_gen(c, 5, 4), CKPT_GEN_STALE);
  cr_assert_eq(ckpt_match_gen(c, 5, 6), CKPT_GEN_FUTURE);
  cr_assert_eq(ckpt_match_gen(NULL, 5, 5), CKPT_GEN_STALE, "an aborted generation");
  cr_assert_eq(ckpt_match_gen(NULL, 0, 1), CKPT_GEN_FUTURE);
}

Test(coord_ckpt, names)
{
  cr_assert(ckpt_valid_file_name("rank-000001.img"));
  cr_assert(ckpt_valid_file_name("R_1.x-y"));
  cr_assert(ckpt_valid_xxh("0123456789abcdef"));
  cr_assert(!ckpt_valid_xxh("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"));
  for (int p = CKPT_PHASE_SEQ; p <= CKPT_PHASE_ABORT; p++)
    cr_assert_str_neq(ckpt_phase_name((enum ckpt_phase)p), "unknown");
  for (int s = CKPT_RANK_ASKED; s <= CKPT_RANK_WRITTEN; s++)
    cr_assert_str_neq(ckpt_rank_state_name((enum ckpt_rank_state)s), "unknown");
}

Test(coord_ckpt, large_tables)
{
  static struct coord_entry a[5000], b[5000];
  struct coord_entry e;
  size_t cursor = 0, n = 0;
  static bool seen[5004];

  for (size_t i = 0; i < 5000; i++) {
    a[i] = (struct coord_entry){.ggid = (i * 7919) % 5003 + 1, .value = i};
    b[i] = (struct coord_entry){.ggid = (i * 7919) % 5003 + 1, .value = 5000 - i};
  }
  c = ckpt_new(1, 2);
  cr_assert_eq(ckpt_on_seq(c, 0, a, 5000, false), CKPT_ACT_NONE);
  cr_assert_eq(ckpt_on_seq(c, 1, b, 5000, false), CKPT_ACT_TARGETS_ALL);
  cr_assert_eq(c->ntargets, 5000);
  while (ckpt_next_target(c, 0, &cursor, &e)) {
    cr_assert(!seen[e.ggid], "%lx twice", (unsigned long)e.ggid);
    seen[e.ggid] = true;
    cr_assert_geq(e.value, 2500);
    n++;
  }
  cr_assert_eq(n, 5000);
}

/* ---- the termination and stall tests are counted, not scanned ---- */

/* The two tests by their definition: a scan of every rank. */
static bool scanned_converged(const struct ckpt *k)
{
  if (k->phase != CKPT_PHASE_CONVERGE)
    return false;
  for (size_t i = 0; i < k->size; i++)
    if (k->ranks[i].epoch != k->epoch ||
        (k->ranks[i].state != CKPT_RANK_PARKED && k->ranks[i].state != CKPT_RANK_DONE))
      return false;
  return true;
}

static bool scanned_stalled(const struct ckpt *k)
{
  bool blocked = false, parked = false;
  if (k->phase != CKPT_PHASE_CONVERGE)
    return false;
  for (size_t i = 0; i < k->size; i++) {
    if (k->ranks[i].epoch != k->epoch || k->ranks[i].state == CKPT_RANK_RUNNING)
      return false;
    blocked |= k->ranks[i].state == CKPT_RANK_BLOCKED;
    parked |= k->ranks[i].state == CKPT_RANK_PARKED;
  }
  return blocked && parked;
}

/* Random statuses, raises and releases (old epochs too) on a few ranks: after every event the
 * counted tests agree with the scans, until the generation converges. */
Test(coord_ckpt, counted_tests_agree_with_a_scan_of_every_rank)
{
  uint32_t x = 12345;
  int converged = 0;
  for (int run = 0; run < 2000; run++) {
    size_t n = 1 + run % 6;
    struct coord_entry seq[] = {{G1, 3}, {G2, 2}};
    c = ckpt_new(1, n);
    for (size_t r = 0; r < n; r++)
      ckpt_on_seq(c, r, seq, 2, false);
    for (int step = 0; step < 60 && c->phase == CKPT_PHASE_CONVERGE; step++) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      size_t r = x % n;
      uint64_t epoch = c->epoch > 1 && (x >> 8) % 4 == 0 ? c->epoch - 1 : c->epoch;
      struct ckpt_park at = {G1, 3 + (x >> 12) % 3};
      switch ((x >> 4) % 7) {
      case 0:
        ckpt_on_running(c, r, epoch, false);
        break;
      case 1:
        ckpt_on_running(c, r, epoch, true);
        break;
      case 2:
      case 3:
        ckpt_on_parked(c, r, epoch, &at);
        break;
      case 4:
      case 5:
        ckpt_on_parked(c, r, epoch, NULL);
        break;
      default:
        if ((x >> 16) % 2)
          ckpt_on_raise(c, r, G2, 3 + (x >> 20) % 4);
        else
          ckpt_release(c);
      }
      cr_assert_eq(ckpt_stalled(c), scanned_stalled(c), "run %d step %d: stalled", run, step);
      if (c->phase == CKPT_PHASE_CONVERGE)
        cr_assert_eq(ckpt_converged(c), scanned_converged(c), "run %d step %d", run, step);
    }
    converged += c->phase == CKPT_PHASE_SUSPEND;
    ckpt_free(c);
    c = NULL;
  }
  cr_assert_gt(converged, 500, "only %d of 2000 runs converged: the events hardly test it",
               converged);
}

/* A second rank reporting an image file another rank wrote is caught (a hash, not a scan). */
Test(coord_ckpt, two_ranks_writing_one_file_abort)
{
  c = ckpt_new(1, 300);
  struct coord_entry seq[] = {{G1, 1}};
  for (size_t r = 0; r < 300; r++)
    ckpt_on_seq(c, r, seq, 1, false);
  for (size_t r = 0; r < 300; r++)
    ckpt_on_parked(c, r, 1, NULL);
  for (size_t r = 0; r < 300; r++)
    ckpt_on_suspended(c, r);
  char file[64];
  for (size_t r = 0; r < 299; r++) {
    snprintf(file, sizeof(file), "rank-%06zu.img", r);
    cr_assert_eq(ckpt_on_written(c, r, 10, file, "0123456789abcdef", 0), CKPT_ACT_NONE);
  }
  cr_assert_eq(ckpt_on_written(c, 299, 10, "rank-000137.img", "0123456789abcdef", 0),
               CKPT_ACT_ABORT);
  cr_assert(strstr(c->reason, "ranks 137 and 299 both wrote rank-000137.img"), "%s", c->reason);
}
