#!/usr/bin/env bash
# batch_singleton.sh - a program a Slurm batch script runs without srun or mpiexec is an MPI
# singleton, and under mana_launch it is checkpointed and restarted as one, in an allocation
# of several tasks.  The batch script's environment has SLURM_PROCID=0 and the allocation's
# SLURM_NTASKS (2 here) but no job step: before, mana_launch took the program for rank 0 of 2,
# its coordinator waited for a rank 1 that never came (no checkpoint could be taken) and
# mana_restart refused the image ("1 ranks but 2 were started").
#
#   1. job 1 (sbatch -n 2): mana_launch tests/programs/cwd_relative, held before iteration
#      200; mana_status must show 1 rank, and --checkpoint --kill ends the job;
#   2. job 2 (sbatch -n 2): mana_restart from that checkpoint, released, to the end;
#   stdout of both jobs together equals a native singleton run's.
#
# usage: batch_singleton.sh --bin DIR --program PATH [--timeout S]
# Needs the private Slurm cluster of tests/setup/slurm-local.sh (started here when it does not
# run, and stopped again afterwards).  Exit 77 when Slurm cannot be set up.
set -euo pipefail

me=batch_singleton.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
timeout=180
# shellcheck source=tests/integration/job_lib.sh
. "$root/tests/integration/job_lib.sh"
parse_job_args tests/programs/cwd_relative "$@"

# shellcheck source=tests/slurm/slurm_lib.sh
. "$here/slurm_lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-batch-singleton.XXXXXX")
trap slurm_cleanup EXIT
slurm_up
export UCX_LOG_LEVEL=error

args=("$program" 400 "$work/h1" 200)
mkdir "$work/native" "$work/job"
touch "$work/h1"
# The native reference: a singleton too (no launcher), outside Slurm.
(cd "$work/native" && unset SLURM_JOB_ID SLURM_PROCID SLURM_NTASKS && exec "${args[@]}") \
  >"$work/native.out" 2>"$work/native.err" || fail "the native run failed: $(tail -3 "$work/native.err")"
rm "$work/h1"

# One batch job of two tasks whose script runs COMMAND... alone; the job's id in $job.
submit() {
  local name=$1
  shift
  printf '#!/bin/bash\n%s\n' "$*" >"$work/$name.sh"
  job=$(sbatch --parsable --ntasks=2 --job-name="mana-$name" --chdir="$work/job" --output="$work/$name.out" \
    --error="$work/$name.err" "$work/$name.sh") || fail "sbatch $name failed"
}

job_state() { scontrol -o show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

# Waits for the job to end; fails unless it COMPLETED.
wait_batch_job() {
  local end=$((SECONDS + timeout)) state
  while :; do
    state=$(job_state)
    case $state in
      COMPLETED) job=""; return 0 ;;
      PENDING | RUNNING | CONFIGURING | COMPLETING | "") ;;
      *) fail "$1: job $job ended $state: $(tail -3 "$work/$1.err")" ;;
    esac
    [ $SECONDS -lt $end ] || fail "$1: job $job still $state after ${timeout}s: $(tail -3 "$work/$1.err")"
    sleep 0.2
  done
}

# ---- 1. launched alone in a batch script, checkpointed at iteration 200 ----------------------
submit run1 "exec $bin/mana_launch --ckptdir $work/ck ${args[*]}"
end=$((SECONDS + timeout))
until grep -q "^holding" "$work/run1.out" 2>/dev/null; do
  [ $SECONDS -lt $end ] || fail "not held after ${timeout}s: $(tail -3 "$work/run1.err" 2>/dev/null)"
  case $(job_state) in PENDING | RUNNING | CONFIGURING | "") ;; *) fail "job 1 ended early: $(tail -3 "$work/run1.err")" ;; esac
  sleep 0.1
done
# The coordinator must count one rank (before: the allocation's two, one never connecting).
until status=$("$bin/mana_status" --ckptdir "$work/ck" 2>&1) && [[ $status == *"1 ranks, 1 connected"* ]]; do
  case $status in
    *"Job:"*" ranks,"*) [[ $status == *"Job:"*" 1 ranks,"* ]] || fail "the coordinator waits for more than one rank: $(head -1 <<<"$status")" ;;
  esac
  [ $SECONDS -lt $end ] || fail "mana_status does not show one connected rank of one: $status"
  sleep 0.1
done
out=$(timeout "$timeout" "$bin/mana_status" --ckptdir "$work/ck" --checkpoint --kill --wait 2>&1) ||
  fail "the checkpoint of the batch job's singleton: $out"
wait_batch_job run1
if grep -q "warning" "$work/run1.err"; then fail "warnings: $(grep warning "$work/run1.err")"; fi
say "a singleton in a 2-task batch job, checkpointed at iteration 200: $out"

# ---- 2. restarted alone in another batch job, to the end ------------------------------------
touch "$work/h1"
submit run2 "exec $bin/mana_restart --ckptdir $work/ck"
wait_batch_job run2
cat "$work/run1.out" "$work/run2.out" | cmp -s - "$work/native.out" ||
  fail "output differs from native: $(cat "$work/run1.out" "$work/run2.out" |
    diff "$work/native.out" - | head -6 | tr '\n' '|')"
say "checkpointed in one batch job, restarted in another: output identical to native ($(wc -l <"$work/native.out") lines)"
say "PASS"
