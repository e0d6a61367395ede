#!/usr/bin/env bash
# run_shm_placement.sh - ranks that shared POSIX shared memory at a checkpoint must be restarted
# on one node: on two, each would go on with its own copy and the job's results would be
# wrong without a word.  tests/programs/posix_shm (2 ranks sharing a segment) is checkpointed
# and killed at call K of rank 0, then restarted with rank 1 taking itself for a rank on
# another node (MANA_FAULT=restart-other-node:1, include/mana/fault.h): every rank must say
# why in one line and the restart must end with an error within the limit; the checkpoint
# must still restart to the native output afterwards.
#
# usage: run_shm_placement.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=run_shm_placement.sh
bin="" program="" timeout=120
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$bin/mana_launch" ] || { echo "$me: --bin must hold mana_launch" >&2; exit 2; }
[ -x "$program" ] || { echo "$me: --program must be tests/programs/posix_shm" >&2; exit 2; }

say() { printf '%s: %s\n' "$me" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-shm-placement.XXXXXX")
trap 'if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; else say "kept $work"; fi; rm -f /dev/shm/mana_shm_placement.*' EXIT
export UCX_LOG_LEVEL=error

args=("$program" 40 mana_shm_placement)
mpiexec.mpich -n 2 "${args[@]}" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

MANA_TEST_CHECKPOINT_AT_CALL=40 MANA_TEST_CHECKPOINT_RANK=0 timeout "$timeout" \
  "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "${args[@]}" \
  >"$work/run1.out" 2>"$work/run1.err" || fail "the checkpointed run failed: $(tail -3 "$work/run1.err")"
[ -e "$work/ck/LATEST" ] || fail "no checkpoint was committed at call 40: $(tail -3 "$work/run1.err")"

start=$SECONDS rc=0
env MANA_FAULT=restart-other-node:1 timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_restart" \
  --ckptdir "$work/ck" >"$work/split.out" 2>"$work/split.err" || rc=$?
took=$((SECONDS - start))
[ "$rc" -ne 0 ] || fail "a restart with the ranks on two nodes succeeded: $(cat "$work/split.out" | tail -3)"
[ "$rc" -ne 124 ] || fail "a restart with the ranks on two nodes hung for ${timeout}s"
why="ranks 0 and 1 shared POSIX shared memory on one node at the checkpoint but were restarted on different nodes"
lines=$(grep -c "$why" "$work/split.err" || true)
[ "$lines" -ge 2 ] || fail "not every rank said why ($lines line(s)): $(tail -4 "$work/split.err")"
say "ranks on two nodes: refused in ${took}s, exit $rc, on every rank: $(grep -m1 "$why" "$work/split.err")"

timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck" \
  >"$work/run2.out" 2>"$work/run2.err" || fail "the restart on one node failed: $(tail -3 "$work/run2.err")"
cat "$work/run1.out" "$work/run2.out" | cmp -s - "$work/native.out" ||
  fail "output differs from native: $(cat "$work/run1.out" "$work/run2.out" | diff "$work/native.out" - | head -4 | tr '\n' '|')"
say "restarted on one node afterwards: output identical to native"
say "PASS"
