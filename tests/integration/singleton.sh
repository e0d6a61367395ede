#!/usr/bin/env bash
# singleton.sh - a program started under mana_launch without any launcher is an MPI
# singleton (rank 0 of 1): it gets a coordinator, is checkpointed, and mana_restart brings it
# back, alone too, to the native output.  Twice:
#
#   alone         no launcher variable at all;
#   batch script  the environment sbatch gives a batch script of a 2-task allocation
#                 (SLURM_JOB_ID, SLURM_PROCID=0, SLURM_NTASKS=2, no job step), set by hand:
#                 before, mana_launch took the program for rank 0 of 2, its coordinator waited
#                 for a rank 1 that never came and no checkpoint could be taken, and
#                 mana_restart refused the image ("1 ranks but 2 were started").
#                 tests/slurm/batch_singleton.sh does the same in a real batch job.
#
# The program is tests/programs/cwd_relative, held before iteration 200 until a file exists.
#
# usage: singleton.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=singleton.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/cwd_relative "$@"
job_workdir singleton
export UCX_LOG_LEVEL=error
unset PMI_RANK PMI_SIZE PMI_FD PMI_PORT PMIX_RANK SLURM_JOB_ID SLURM_PROCID SLURM_NTASKS \
  SLURM_STEP_ID SLURM_STEPID

args=("$program" 400 "$work/h1" 200)
mkdir "$work/native"
touch "$work/h1"
(cd "$work/native" && exec "${args[@]}") >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

# run_case NAME [VAR=VALUE...]: launch, checkpoint with --kill at the hold, restart to the end.
run_case() {
  local name=$1 d=$work/$1 status out
  shift
  mkdir "$d"
  rm -f "$work/h1"
  (cd "$d" && exec env "$@" "$bin/mana_launch" --ckptdir "$d/ck" "${args[@]}") \
    >"$d/run1.out" 2>"$d/run1.err" &
  job=$!
  local end=$((SECONDS + timeout))
  until grep -q "^holding" "$d/run1.out"; do
    [ $SECONDS -lt $end ] || fail "$name: not held after ${timeout}s: $(tail -3 "$d/run1.err")"
    kill -0 "$job" 2>/dev/null || fail "$name: the job ended before its hold: $(tail -3 "$d/run1.err")"
    sleep 0.05
  done
  # The coordinator must count one rank and see it.
  until status=$("$bin/mana_status" --ckptdir "$d/ck" 2>&1) && [[ $status == *"1 ranks, 1 connected"* ]]; do
    case $status in
      *"Job:"*" ranks,"*) [[ $status == *"Job:"*" 1 ranks,"* ]] ||
        fail "$name: the coordinator waits for more than one rank: $(head -1 <<<"$status")" ;;
    esac
    [ $SECONDS -lt $end ] || fail "$name: mana_status does not show one connected rank of one: $status"
    sleep 0.1
  done
  out=$(ask "$d/ck" --checkpoint --kill) || fail "$name: the checkpoint: $out"
  wait_job "$name: the singleton after its kill checkpoint" "$d/run1.err"
  if grep -q "warning" "$d/run1.err"; then fail "$name: warnings: $(grep warning "$d/run1.err")"; fi
  touch "$work/h1"
  (cd "$work" && exec env "$@" timeout "$timeout" "$bin/mana_restart" --ckptdir "$d/ck") \
    >"$d/run2.out" 2>"$d/run2.err" || fail "$name: the restart failed: $(tail -3 "$d/run2.err")"
  cat "$d/run1.out" "$d/run2.out" | cmp -s - "$work/native.out" ||
    fail "$name: output differs from native: $(cat "$d/run1.out" "$d/run2.out" |
      diff "$work/native.out" - | head -6 | tr '\n' '|')"
  say "$name: checkpointed at iteration 200 ($out), restarted from another directory: output identical to native"
}

run_case alone
run_case batch-script SLURM_JOB_ID=1 SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NODEID=0 \
  SLURM_JOB_NUM_NODES=1
say "PASS"
