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
#   4. a forked checkpoint at rank 0's last MPI call before MPI_Finalize, its writers pausing
#      3 s before they read anything (MANA_FAULT=write-delay): the ranks reach MPI_Finalize
#      while their writers write, and must wait there for the verdict (a rank that exited then would
#      disconnect and abort the generation): the generation commits, the job's output is
#      native, and the generation restarts (the job printed everything before that call: the
#      restart finalizes, prints nothing and exits 0).
#   5. (with RMA_SHARED=tests/programs/rma_shared) a plain checkpoint with --forked-writers at
#      a fifth of rank 0's calls, writers pausing 3 s: the ranks share a window's memory, which
#      the peers and the resumed application change under a writer, so each rank writes its
#      image itself (silently: its stderr stays empty); restarting that generation gives the native output (a
#      writer reading the window 3 s late made the restart report a wrong sum).
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
# ---- 4. the ranks finalize while their writers still write ----------------------------------
counts=$work/calls
MANA_TEST_COUNT_CALLS=$counts "$bin/mana_launch" --ckptdir "$work/ck-count" \
  mpiexec.mpich -n 2 "$program" $iters >/dev/null 2>"$work/count.err" ||
  fail "the run that counts the calls failed: $(tail -3 "$work/count.err")"
last=$(awk '$1 == "rank" && $2 == 0 && $3 == "calls" { print $4 }' "$counts")
[ -n "$last" ] || fail "no call count from rank 0 in $counts"
MANA_TEST_CHECKPOINT_AT_CALL=$last MANA_TEST_CHECKPOINT_KEEP=1 MANA_FAULT=write-delay \
  "$bin/mana_launch" --ckptdir "$work/ck-late" --forked-writers mpiexec.mpich -n 2 "$program" \
  $iters >"$work/late.out" 2>"$work/late.err" ||
  fail "the job with a checkpoint at its last call failed: $(tail -3 "$work/late.err")"
log=$work/ck-late/.mana/coordinator.log
[ -f "$work/ck-late/LATEST" ] ||
  fail "the checkpoint at the last call did not commit: $(grep -E 'generation|disconnected' "$log" | tail -3)"
grep -q "generation 1 started (.*written by forked writers while the job runs)" "$log" ||
  fail "generation 1 was not written by forked writers: $(grep generation "$log")"
cmp -s "$work/late.out" "$work/native.out" ||
  fail "with a checkpoint at its last call the output differs from the native run"
rc=0
"$bin/mana_restart" --ckptdir "$work/ck-late" mpiexec.mpich -n 2 >"$work/late-restart.out" \
  2>"$work/late-restart.err" || rc=$?
[ $rc -eq 0 ] || fail "the restart from the last call exited $rc: $(tail -5 "$work/late-restart.err")"
# The job printed everything before its last call: the restart only finalizes.
[ ! -s "$work/late-restart.out" ] ||
  fail "the restart from the last call printed again: $(head -3 "$work/late-restart.out")"
say "a forked checkpoint at rank 0's last call ($last), writers 3 s slow: committed after the ranks reached MPI_Finalize; its restart finalizes and exits 0"
# ---- 5. memory shared with another process is not left to a forked writer ------------------
if [ -n "${RMA_SHARED:-}" ]; then
  mpiexec.mpich -n 2 "$RMA_SHARED" >"$work/shared-native.out" 2>&1 ||
    fail "rma_shared natively: $(tail -3 "$work/shared-native.out")"
  MANA_TEST_COUNT_CALLS=$work/shared-calls "$bin/mana_launch" --ckptdir "$work/ck-shared-count" \
    mpiexec.mpich -n 2 "$RMA_SHARED" >/dev/null 2>"$work/shared-count.err" ||
    fail "rma_shared's counting run failed: $(tail -3 "$work/shared-count.err")"
  n=$(awk '$1 == "rank" && $2 == 0 && $3 == "calls" { print $4 }' "$work/shared-calls")
  [ -n "$n" ] || fail "no call count from rank 0 of rma_shared"
  k=$((n / 5))
  MANA_TEST_CHECKPOINT_AT_CALL=$k MANA_TEST_CHECKPOINT_KEEP=1 MANA_FAULT=write-delay \
    "$bin/mana_launch" --ckptdir "$work/ck-shared" --forked-writers mpiexec.mpich -n 2 \
    "$RMA_SHARED" >"$work/shared.out" 2>"$work/shared.err" ||
    fail "rma_shared with a forked checkpoint failed: $(tail -3 "$work/shared.err")"
  [ -f "$work/ck-shared/LATEST" ] ||
    fail "rma_shared's checkpoint at call $k did not commit: $(grep -E 'aborted|refused' "$work/ck-shared/.mana/coordinator.log")"
  cmp -s "$work/shared.out" "$work/shared-native.out" || fail "rma_shared's output differs from native"
  rc=0
  "$bin/mana_restart" --ckptdir "$work/ck-shared" mpiexec.mpich -n 2 >"$work/shared-restart.out" \
    2>"$work/shared-restart.err" || rc=$?
  [ $rc -eq 0 ] || fail "rma_shared's restart exited $rc: $(grep -v '^\[' "$work/shared-restart.out" | tail -3; tail -3 "$work/shared-restart.err")"
  # rank 0's standard output is a pipe: what it printed before call k was still in its buffer,
  # so the restart prints the whole output again.
  cmp -s "$work/shared-restart.out" "$work/shared-native.out" ||
    fail "rma_shared restarted from call $k: $(diff "$work/shared-restart.out" "$work/shared-native.out" | head -4)"
  [ ! -s "$work/shared.err" ] || fail "rma_shared's ranks printed: $(head -3 "$work/shared.err")"
  say "rma_shared, a forked checkpoint at call $k of $n: the ranks wrote their images themselves; the restart gives the native output"
fi
say "PASS"
