#!/usr/bin/env bash
# local_crossings.sh - the calls mana answers in the upper half (`local` in mpi_api.txt) do not
# cross into the lower half: tests/programs/local_queries run for 1 and for 1 + ROUNDS rounds
# under mana_launch with MANA_TEST_COUNT_CALLS, and rank 0's crossings per round must stay
# below what the round's 214 local queries alone would add (it makes one reduction).
#
# usage: local_crossings.sh PROGRAM [ROUNDS]     (MANA_BIN: mana's bin directory)
set -euo pipefail
me=local_crossings.sh
prog=$1 rounds=${2:-30}
bin=${MANA_BIN:?MANA_BIN must name mana\'s bin directory}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

crossings() { # ROUNDS -> rank 0's crossings
  local counts=$work/counts.$1
  MANA_TEST_COUNT_CALLS=$counts timeout -k 5 120 "$bin/mana_launch" --ckptdir "$work/ck.$1" \
    mpiexec.mpich -n 2 "$prog" "$1" >"$work/out.$1" 2>&1 ||
    { echo "$me: FAIL: the run of $1 rounds failed:" >&2; tail -5 "$work/out.$1" >&2; exit 1; }
  awk '$1 == "rank" && $2 == 0 && $3 == "calls" { print $4 }' "$counts"
}

base=$(crossings 1)
full=$(crossings $((1 + rounds)))
[ -n "$base" ] && [ -n "$full" ] || { echo "$me: FAIL: no call count from rank 0"; exit 1; }
per_round=$(( (full - base) / rounds ))
echo "$me: rank 0 crosses $base times for 1 round, $full for $((1 + rounds)): $per_round per round of 214 local queries and 1 reduction"
if [ "$per_round" -ge 10 ]; then
  echo "$me: FAIL: the local queries cross into the lower half"
  exit 1
fi
echo "$me: PASS"
