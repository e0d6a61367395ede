#!/usr/bin/env bash
# run_appended_log.sh - a restart from a checkpoint after which the job went on appending to
# its log (a crash after an interval checkpoint, or a restart from an older generation) must
# leave the log as a run without a checkpoint would: the restarted run appends those records
# again, so the restart cuts each log back to its size at the checkpoint
# (lower-half/state_files.c; before, every record between the two was there twice).
#
# tests/programs/posix_log with "append" (each rank appends one record per iteration to its
# own log, kept open with O_APPEND), with "reopen" (each record appended by opening the log
# with stdio's "a" and closing it: no descriptor of it is open at the checkpoint) and, as the
# control, without either (records written at the descriptor's offset, which a replay writes
# again at the same places: cut back as well, it must come out the same):
#   1. launched with a plain checkpoint at call 50 of rank 0 and one that ends the job at
#      call 150 (generations 1 and 2);
#   2. with "append", a restart from generation 1 whose rank 1 is killed before MPI_Init
#      (MANA_FAULT=restart-kill:1) fails and leaves both logs as they were: a failed restart
#      cuts nothing, or a restart from generation 2 after it would miss records;
#   3. restarted from generation 1 (the logs hold the records up to call 150): output and
#      logs identical to native, and every rank says it cut its log back;
#   4. restarted from generation 2, with the logs complete from step 3: identical again, and
#      every rank says it cut its log back;
#   5. with "append", restarted from generation 1 once more with mana_restart --keep-files:
#      every rank names its log and leaves it as it is (its records are appended a second
#      time, as they were before the cut).
#
# usage: run_appended_log.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=run_appended_log.sh
timeout=120
. "$(dirname "$0")/../integration/job_lib.sh"
parse_job_args tests/programs/posix_log "$@"
job_workdir appended-log
export UCX_LOG_LEVEL=error

# run NAME OUTDIR COMMAND...: runs COMMAND within the limit, its stdout to $work/NAME.out.
run() {
  local name=$1 rc=0
  shift
  timeout "$timeout" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [ "$rc" -ne 124 ] || fail "$name: no end within ${timeout}s"
  [ "$rc" -eq 0 ] ||
    fail "$name: exit $rc: $(grep -h -m2 FAIL "$work/$name.out" | tr '\n' '|')$(tail -n 3 "$work/$name.err" | tr '\n' '|')"
}

for mode in append reopen offset; do
  extra=()
  [ "$mode" = offset ] || extra=("$mode")
  mkdir -p "$work/$mode/native" "$work/$mode/mana"
  ck=$work/$mode/ck
  run "$mode-native" mpiexec.mpich -n 2 "$program" 200 "$work/$mode/native" "${extra[@]}"
  run "$mode-launch" env MANA_TEST_CHECKPOINT_AT_CALL=50,150 MANA_TEST_CHECKPOINT_RANK=0 \
    "$bin/mana_launch" --ckptdir "$ck" mpiexec.mpich -n 2 "$program" 200 "$work/$mode/mana" \
    "${extra[@]}"
  [ -d "$ck/gen-000002" ] || fail "$mode: generations 1 and 2 were not both committed"
  if [ "$mode" = append ]; then
    content=$(cat "$work/$mode/mana/rank-0.log" "$work/$mode/mana/rank-1.log" | cksum)
    rc=0
    MANA_FAULT=restart-kill:1 timeout "$timeout" "$bin/mana_restart" --ckptdir "$ck" \
      --generation 1 mpiexec.mpich -n 2 >"$work/failed.out" 2>"$work/failed.err" || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the restart with rank 1 killed exited $rc"
    [ "$(cat "$work/$mode/mana/rank-0.log" "$work/$mode/mana/rank-1.log" | cksum)" = "$content" ] ||
      fail "a restart that failed changed the logs: $(grep -m1 "cut back" "$work/failed.err")"
    say "$mode: a restart that failed (rank 1 killed) left the logs as they were"
  fi
  for gen in 1 2; do
    args=(--ckptdir "$ck")
    [ "$gen" = 1 ] && args+=(--generation 1)
    run "$mode-gen$gen" "$bin/mana_restart" "${args[@]}" mpiexec.mpich -n 2
    cat "$work/$mode-launch.out" "$work/$mode-gen$gen.out" | cmp -s - "$work/$mode-native.out" ||
      fail "$mode: the restart from generation $gen differs from native: $(cat "$work/$mode-launch.out" "$work/$mode-gen$gen.out" | diff "$work/$mode-native.out" - | head -4 | tr '\n' '|')"
    for r in 0 1; do
      cmp -s "$work/$mode/native/rank-$r.log" "$work/$mode/mana/rank-$r.log" ||
        fail "$mode: after the restart from generation $gen rank $r's log has $(wc -c <"$work/$mode/mana/rank-$r.log") bytes, native $(wc -c <"$work/$mode/native/rank-$r.log")"
    done
    cuts=$(grep -c "rank-[01].log: cut back from" "$work/$mode-gen$gen.err" || true)
    [ "$cuts" -eq 2 ] ||
      fail "$mode: $cuts of 2 ranks said they cut their log back at the restart from generation $gen"
    say "$mode: restarted from generation $gen: output and logs identical to native ($cuts logs cut back)"
  done
  [ "$mode" = append ] || continue
  before=$(wc -c <"$work/$mode/mana/rank-0.log")
  timeout "$timeout" "$bin/mana_restart" --keep-files --ckptdir "$ck" --generation 1 \
    mpiexec.mpich -n 2 >"$work/keep.out" 2>"$work/keep.err" || true
  kept=$(grep -c "rank-[01].log: $before bytes, [0-9]* at the checkpoint: left as it is" \
    "$work/keep.err" || true)
  [ "$kept" -eq 2 ] || fail "--keep-files: $kept of 2 ranks named their log: $(tail -n 3 "$work/keep.err" | tr '\n' '|')"
  [ "$(wc -c <"$work/$mode/mana/rank-0.log")" -gt "$before" ] ||
    fail "--keep-files: rank 0's log was cut back all the same"
  say "$mode: --keep-files: every rank named its log and left it as it was"
done
say "PASS"
