#!/usr/bin/env bash
# forked_writer.sh - checkpoints written by forked writers (mana_launch --forked-writers)
# while the application goes on changing its memory: every generation must restart to the
# native result, and a writer killed mid-way must leave its generation uncommitted, the
# previous one intact and the job running.
#
#   1. tests/programs/iterative under --forked-writers, three plain checkpoints at progress
#      points while it runs, then to its end: output equals native; restarting each of the
#      three generations gives the native output again (each image is the moment of its
#      checkpoint, not a mix of later memory).
#   2. generation 1 restarted with MANA_FAULT=write-kill:1 (rank 1's writer kills itself
#      halfway): the checkpoint is aborted with the writer's death as the reason, LATEST still
#      names generation 3, no directory of the aborted generation is left, and the job ends
#      with the native output.
#   3. (with POSIX_LOG=tests/programs/posix_log) a forked checkpoint, then a kill checkpoint:
#      the second holds the files' offsets of its own moment; the restart ends as natively.
#
# usage: forked_writer.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=forked_writer.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/iterative "$@"
job_workdir forked-writer

iters=12000 every=1000
st() { "$bin/mana_status" --ckptdir "$work/ck" "$@"; }
mpiexec.mpich -n 2 "$program" $iters >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

# ---- 1. three forked checkpoints while the job runs ------------------------------------------
ITERATIVE_PROGRESS=$every "$bin/mana_launch" --ckptdir "$work/ck" --forked-writers \
  mpiexec.mpich -n 2 "$program" $iters >"$work/run.out" 2>"$work/run.err" &
job=$!
for step in 2000 5000 8000; do
  wait_step "$work/run.err" $step
  out=$(ask "$work/ck" --checkpoint) || fail "checkpoint at step $step: $out"
  say "step $step: $out"
done
wait_job "the job" "$work/run.err"
cmp -s "$work/run.out" "$work/native.out" || fail "the job's output differs from the native run"
log=$work/ck/.mana/coordinator.log
[ "$(grep -c "started (.*written by forked writers while the job runs)" "$log")" -eq 3 ] ||
  fail "not three forked generations: $(grep generation "$log")"
for g in 1 2 3; do
  rc=0
  "$bin/mana_restart" --ckptdir "$work/ck" --generation $g mpiexec.mpich -n 2 \
    >"$work/restart$g.out" 2>"$work/restart$g.err" || rc=$?
  [ $rc -eq 0 ] || fail "the restart of generation $g exited $rc: $(tail -5 "$work/restart$g.err")"
  cmp -s "$work/restart$g.out" "$work/native.out" ||
    fail "generation $g restarts to another result: $(diff "$work/restart$g.out" "$work/native.out" | head -5)"
done
say "three forked generations taken while the job ran; each restarts to the native result"

# ---- 2. a writer killed mid-way -------------------------------------------------------------
latest=$(cat "$work/ck/LATEST")
MANA_FAULT=write-kill:1 ITERATIVE_PROGRESS=$every "$bin/mana_restart" --ckptdir "$work/ck" \
  --generation 1 --forked-writers mpiexec.mpich -n 2 >"$work/fault.out" 2>"$work/fault.err" &
job=$!
wait_step "$work/fault.err" 5000
if out=$(ask "$work/ck" --checkpoint); then fail "the checkpoint with a killed writer committed: $out"; fi
case $out in
  *"image writer (pid "*") was killed by signal 9"*) ;;
  *) fail "the abort does not name the writer's death: $out" ;;
esac
[ "$(cat "$work/ck/LATEST")" = "$latest" ] || fail "LATEST changed to $(cat "$work/ck/LATEST")"
left=$(find "$work/ck" -maxdepth 1 -name 'gen-*' -newer "$work/ck/LATEST" | head -3)
[ -z "$left" ] || fail "the aborted generation left $left"
wait_job "the job after the aborted checkpoint" "$work/fault.err"
cmp -s "$work/fault.out" "$work/native.out" || fail "after the aborted checkpoint the output differs"
say "a killed writer: '$out'; LATEST still $latest; the job ended with the native output"

# ---- 3. a forked checkpoint, then one that ends the job -------------------------------------
# The second, synchronous, must hold the file offsets of its own moment, not those read for the
# forked writer (tests/programs/posix_log.c: without that the restarted ranks overwrite their
# own records and the end offset is wrong).
if [ -n "${POSIX_LOG:-}" ]; then
  mkdir -p "$work/logs-native" "$work/logs"
  touch "$work/log-released-native"
  mpiexec.mpich -n 2 "$POSIX_LOG" 4000 "$work/logs-native" "$work/log-released-native:1000" \
    "$work/log-released-native:3000" >"$work/log-native.out" 2>&1 ||
    fail "posix_log natively: $(tail -3 "$work/log-native.out")"
  rm -rf "$work/ck"
  "$bin/mana_launch" --ckptdir "$work/ck" --forked-writers mpiexec.mpich -n 2 "$POSIX_LOG" 4000 \
    "$work/logs" "$work/log-first:1000" "$work/log-second:3000" >"$work/log1.out" \
    2>"$work/log1.err" &
  job=$!
  # logs_reach N: both ranks hold before iteration N (N records of 26 bytes each)
  logs_reach() {
    local end=$((SECONDS + timeout)) r
    for r in 0 1; do
      until [ "$(stat -c %s "$work/logs/rank-$r.log" 2>/dev/null || echo 0)" -ge $(($1 * 26)) ]; do
        [ $SECONDS -lt $end ] || fail "posix_log did not reach its hold at $1"
        sleep 0.05
      done
    done
  }
  logs_reach 1000
  out=$(ask "$work/ck" --checkpoint) || fail "posix_log: the forked checkpoint: $out"
  touch "$work/log-first"
  logs_reach 3000
  out=$(st --kill --wait 2>&1) || fail "posix_log: the kill checkpoint: $out"
  wait_job "posix_log after the kill checkpoint"
  touch "$work/log-second"
  rc=0
  "$bin/mana_restart" --ckptdir "$work/ck" mpiexec.mpich -n 2 >"$work/log2.out" 2>"$work/log2.err" ||
    rc=$?
  [ $rc -eq 0 ] || fail "posix_log's restart exited $rc: $(tail -3 "$work/log2.out" "$work/log2.err")"
  cat "$work/log1.out" "$work/log2.out" | cmp -s - "$work/log-native.out" ||
    fail "posix_log after a forked and a kill checkpoint: $(cat "$work/log1.out" "$work/log2.out" | diff - "$work/log-native.out" | head -6)"
  say "a forked checkpoint at iteration 1000, a kill checkpoint at 3000: the restart continues the logs at their offsets"
fi
say "PASS"
