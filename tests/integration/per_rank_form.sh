#!/usr/bin/env bash
# per_rank_form.sh - a job started in the per-rank form (mpiexec -n 2 mana_launch PROGRAM) has
# a coordinator (rank 0 starts it, coordinator/launch_coord.h), so it can be checkpointed; so
# has a job restarted in the per-rank form (mpiexec -n 2 mana_restart), and it ends with the
# native output.  Before, neither form had one unless started by hand: mana_status found no
# coordinator and the job could not be checkpointed.
#
#   1. tests/programs/iterative held at steps 1000 and 2000 (ITERATIVE_HOLD): launched per
#      rank, mana_status --kill at step 1000;
#   2. restarted per rank, mana_status --kill at step 2000 (the restarted job is checkpointed
#      again);
#   3. restarted per rank from that generation, to the end: stdout of the three runs equals
#      the native run's; the coordinator rank 0 started is gone once the job is;
#   4. launched per rank with a checkpoint directory that cannot be made (under a regular
#      file): rank 0 cannot start the coordinator, says so, and every rank runs on without
#      checkpoints to the native output (before this was handled, rank 0 exited and rank 1
#      waited for it in MPI_Init for ever).
#
# usage: per_rank_form.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=per_rank_form.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/iterative "$@"
job_workdir per_rank_form
export UCX_LOG_LEVEL=error

args=("$program" 3000 4096)
export ITERATIVE_PROGRESS=500 ITERATIVE_HOLD="$work/h1:1000,$work/h2:2000"
touch "$work/h1" "$work/h2"
mpiexec.mpich -n 2 "${args[@]}" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"
rm "$work/h1" "$work/h2"

coordinator_gone() {
  local end=$((SECONDS + timeout)) out
  while :; do
    out=$("$bin/mana_status" --ckptdir "$work/ck" 2>&1) || true
    case $out in *"no coordinator is running"*) return 0 ;; esac
    [ $SECONDS -lt $end ] || fail "$1: the coordinator is still there after ${timeout}s: $out"
    sleep 0.1
  done
}

# ---- 1. launched per rank, checkpointed at step 1000 -----------------------------------------
: >"$work/run1.err"
mpiexec.mpich -n 2 "$bin/mana_launch" --ckptdir "$work/ck" "${args[@]}" \
  >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_step "$work/run1.err" 1000
status=$("$bin/mana_status" --ckptdir "$work/ck" 2>&1) || fail "mana_status: $status"
case $status in *"2 ranks, 2 connected"*) ;; *) fail "mana_status does not show both ranks: $status" ;; esac
out=$(ask "$work/ck" --checkpoint --kill) || fail "the checkpoint of the per-rank job: $out"
wait_job "the per-rank job after its kill checkpoint" "$work/run1.err"
say "launched per rank, checkpointed at step 1000: $out"
if grep -q "warning" "$work/run1.err"; then fail "warnings: $(grep warning "$work/run1.err")"; fi
coordinator_gone "after the first job"

# ---- 2. restarted per rank, checkpointed again at step 2000 ----------------------------------
touch "$work/h1"
: >"$work/run2.err"
mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck" >"$work/run2.out" 2>"$work/run2.err" &
job=$!
wait_step "$work/run2.err" 2000
out=$(ask "$work/ck" --checkpoint --kill) || fail "the checkpoint of the restarted job: $out"
wait_job "the restarted job after its kill checkpoint" "$work/run2.err"
say "restarted per rank, checkpointed again at step 2000: $out"
coordinator_gone "after the restarted job"

# ---- 3. restarted per rank to the end --------------------------------------------------------
touch "$work/h2"
timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck" \
  >"$work/run3.out" 2>"$work/run3.err" || fail "the last restart failed: $(tail -3 "$work/run3.err")"
cat "$work/run1.out" "$work/run2.out" "$work/run3.out" | cmp -s - "$work/native.out" ||
  fail "output differs from native: $(cat "$work/run1.out" "$work/run2.out" "$work/run3.out" |
    diff "$work/native.out" - | head -6 | tr '\n' '|')"
coordinator_gone "after the last restart"
say "three per-rank runs, two checkpoints: output identical to native ($(wc -l <"$work/native.out") lines)"

# ---- 4. no coordinator can be started: the job runs without checkpoints ----------------------
touch "$work/not-a-dir"
start=$SECONDS
timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_launch" --ckptdir "$work/not-a-dir/ck" "${args[@]}" \
  >"$work/run4.out" 2>"$work/run4.err" ||
  fail "without a possible coordinator the job failed ($?): $(tail -3 "$work/run4.err")"
cmp -s "$work/run4.out" "$work/native.out" || fail "without a coordinator the output differs from native"
grep -q "rank 0: no coordinator for $work/not-a-dir/ck" "$work/run4.err" ||
  fail "rank 0 does not say it runs without a coordinator: $(tail -3 "$work/run4.err")"
grep -q "rank 1: the coordinator rank 0 starts did not appear" "$work/run4.err" ||
  fail "rank 1 does not say it runs without a coordinator: $(tail -3 "$work/run4.err")"
say "with a directory no coordinator can use: native output in $((SECONDS - start)) s, each rank said why"
echo "1 passed, 0 failed"
