#!/usr/bin/env bash
# aborted_checkpoint.sh - a checkpoint aborted because a rank could not park leaves the job
# exactly as if none had been asked for (issue 7, point 5: after such an abort MPICH's
# bsendpending and comm_group_rand once ended with UCX warnings about unmatched receives,
# the remains of a drain only some ranks had started).
#
#   tests/programs/iterative (halo exchanges and a token ring in flight at any moment) under
#   mana_launch with MANA_FAULT=park-fail:1 (include/mana/fault.h: rank 1 reports once that a
#   thread would not park):
#   1. the first checkpoint is aborted with rank 1's reason; nothing is committed;
#   2. the job goes on, and the next checkpoint commits;
#   3. the job ends with the native output, and its stderr holds nothing but the program's
#      progress lines and mana's own (no warning of MPI or UCX at MPI_Finalize);
#   4. the committed generation restarts to the native output.
#
# usage: aborted_checkpoint.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=aborted_checkpoint.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/iterative "$@"
job_workdir aborted

iters=12000 every=1000
mpiexec.mpich -n 2 "$program" $iters >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

MANA_FAULT=park-fail:1 ITERATIVE_PROGRESS=$every "$bin/mana_launch" --ckptdir "$work/ck" \
  mpiexec.mpich -n 2 "$program" $iters >"$work/run.out" 2>"$work/run.err" &
job=$!
wait_step "$work/run.err" 2000
if out=$(ask "$work/ck" --checkpoint); then fail "the checkpoint committed although rank 1 could not park: $out"; fi
case $out in
  *"rank 1: a thread did not park"*) ;;
  *) fail "the abort does not give rank 1's reason: $out" ;;
esac
[ ! -e "$work/ck/LATEST" ] || fail "the aborted checkpoint left LATEST ($(cat "$work/ck/LATEST"))"
say "aborted: $out"

at=$(sed -n 's/^iterative: step \([0-9]*\) of .*/\1/p' "$work/run.err" | tail -1)
wait_step "$work/run.err" $((at + every))
out=$(ask "$work/ck" --checkpoint) || fail "the checkpoint after the aborted one: $out"
say "then: $out"
wait_job "the job" "$work/run.err"
cmp -s "$work/run.out" "$work/native.out" ||
  fail "the job's output differs from native: $(diff "$work/run.out" "$work/native.out" | head -5)"
extra=$(grep -v -e '^iterative: ' -e '^mana' "$work/run.err" | grep -vxF -f "$work/native.err" | head -3 || true)
[ -z "$extra" ] || fail "the job's stderr has lines a native run does not: $extra"

"$bin/mana_restart" --ckptdir "$work/ck" mpiexec.mpich -n 2 >"$work/restart.out" 2>"$work/restart.err" ||
  fail "the restart failed: $(tail -3 "$work/restart.err")"
cmp -s "$work/restart.out" "$work/native.out" || fail "the restart's output differs from native"
say "the job went on to the native output with a clean stderr; the next generation restarts as natively"
say "PASS"
