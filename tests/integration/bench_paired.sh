#!/usr/bin/env bash
# bench_paired.sh - benchmarks/run_overhead.sh's interleaved rounds: the native job and the
# mana job of a round take turns batch by batch, so that each pair of batches compared ran on
# the same machine.  A short run (2 rounds, 10 batches of ~25 and ~65 ms per figure) must
#   - pair every batch: 2 rounds x (2 x 10 - 1) = 38 pairs per figure in the paired table;
#   - start with the native job in round 1 and with the mana job in round 2;
#   - never run a batch of one job beside one of the other (overhead.c's MANA_BENCH_TURN_LOG:
#     every timed batch's start and end, checked for overlap across the two jobs);
# and a round whose mana job fails at once must end the run with that job's error within
# seconds, not after the other job's wait for its turn (120 s), and leave no rank of the
# native job behind.  The figures themselves are not judged: the machine running the tests is
# not idle.
#
# usage: bench_paired.sh OVERHEAD_BINARY      (MANA_BIN: mana's bin directory)
set -uo pipefail
me=bench_paired.sh
bin=${1:?usage: $me OVERHEAD_BINARY}
: "${MANA_BIN:?MANA_BIN must name mana\'s bin directory}"
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$me: FAIL: $*" >&2; exit 1; }

export OVERHEAD_BIN=$bin FLOOR=0 MANA_BENCH_SCALE=0.5 MANA_BENCH_REPS=10
export MANA_BENCH_ONLY=comm_rank,iallreduce4_wait
MANA_BENCH_TURN_LOG=$work/turns timeout -k 5 300 "$src/benchmarks/run_overhead.sh" -r 2 -k \
  >"$work/out" 2>&1
rc=$?
[ $rc -le 1 ] || { tail -20 "$work/out" >&2; fail "run_overhead.sh exited $rc"; }
grep -q 'round 1/2 paired .*(native first)' "$work/out" || fail "round 1 did not start native"
grep -q 'round 2/2 paired .*(mana first)' "$work/out" || fail "round 2 did not start with mana"
for f in comm_rank iallreduce4_wait; do
  pairs=$(awk -v f="$f" '/^paired:/ { t = 1 } t && $1 == f { print $2; exit }' "$work/out")
  [ "$pairs" = 38 ] ||
    { cat "$work/out" >&2; fail "$f: ${pairs:-no} pairs in the paired table, not 38"; }
done
echo "$me: 38 pairs per figure, rounds alternate which job starts"

# Overlap: the two logs hold every timed batch of each job (each round rewrote them, so they
# are round 2's): 2 figures x (1 warm-up + 10) batches each, and no interval of one job may
# intersect one of the other.
for side in 0 1; do
  n=$(wc -l <"$work/turns.$side" 2>/dev/null || echo 0)
  [ "$n" = 22 ] || fail "side $side logged $n timed batches, not 22"
done
sort -k3,3n "$work/turns.0" "$work/turns.1" | awk '
  NR > 1 && $3 < end { printf "side %s batch %s starts %.0f ns before side %s batch %s ends\n",
                       $1, $2, end - $3, side, batch; bad = 1 }
  $4 > end { end = $4; side = $1; batch = $2 }
  END { exit bad }' || fail "batches of the two jobs overlapped"
echo "$me: no timed batch of one job ran beside one of the other"

# A mana job that cannot start: the run ends with its error, and soon.
t0=$(date +%s)
MANA_LAUNCH_ARGS=--no-such-option timeout -k 5 100 "$src/benchmarks/run_overhead.sh" -r 1 \
  >"$work/bad" 2>&1
rc=$? secs=$(($(date +%s) - t0))
[ $rc = 3 ] || { tail -20 "$work/bad" >&2; fail "a failing mana job gave exit status $rc, not 3"; }
grep -q 'mana job (round 1) failed' "$work/bad" ||
  { cat "$work/bad" >&2; fail "no word of the mana job's failure"; }
[ $secs -lt 30 ] || fail "the failing round took $secs s"
# the aborted job's ranks end with it; give a loaded machine 10 s to reap them
for _ in $(seq 100); do
  left=$(pgrep -f -x "$bin" | wc -l)
  [ "$left" = 0 ] && break
  sleep 0.1
done
[ "$left" = 0 ] || { pkill -9 -f -x "$bin"; fail "$left processes of $bin were left behind"; }
echo "$me: a mana job that fails ends the run in $secs s with exit status 3"
echo "$me: PASS"
