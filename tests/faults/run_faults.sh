#!/usr/bin/env bash
# run_faults.sh - fault injection: faults at named points of the writer, the coordinator and
# the restart path (MANA_FAULT, include/mana/fault.h) and damaged checkpoints, each against a
# 2-rank job with a committed generation to fall back on.
#
#   usage: run_faults.sh [--bin DIR] [--program PATH] [CASE...]
#     CASE   run only these (default: all): write-kill coord-kill-in-write enospc enospc-full
#            restart-kill restart-kill-launcher flipped-byte truncated missing-image
#            wrong-ranks wrong-ranks-per-rank other-build bad-fs-switch
#
# Every case must end with one clear error line; a lost rank must take the whole job down
# within 10 s, while a checkpoint that failed otherwise must leave the job running on (it
# must still make progress); nothing may be committed past the last good generation, and
# that generation still verified. At the end the last good generation is restarted and run to
# the end: its output must equal an uninterrupted native run. Prints a table: case, seconds
# from the fault to the end of the job (or of the refused restart), the error line.
# Exit status 0 when every case held, 1 otherwise, 77 when MPICH is missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$(dirname "$here")")
bin=$top/build/bin
program=$top/build/tests/programs/iterative
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    -*) echo "run_faults.sh: unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(write-kill coord-kill-in-write enospc enospc-full restart-kill
  restart-kill-launcher flipped-byte truncated missing-image wrong-ranks wrong-ranks-per-rank
  other-build bad-fs-switch)
command -v mpiexec.mpich >/dev/null || { echo "run_faults.sh: no mpiexec.mpich"; exit 77; }

iters=${MANA_FAULTS_ITERS:-40000}
limit=${MANA_FAULTS_LIMIT:-600}   # a whole run on a loaded machine; reaching it is a failure
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-faults.XXXXXX") || exit 1
ck=$work/ck
jobs_to_kill=()
cleanup() {
  local p
  for p in "${jobs_to_kill[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${tmpfs_mounted:-}" ] && umount "$work/small" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

failures=0 table=()
fail() { echo "run_faults.sh: FAIL ($case): $*"; failures=$((failures + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }

# last_step FILE: the last step the program reported (0: none yet)
last_step() {
  sed -n 's/^iterative: step \([0-9]*\) of .*/\1/p' "$1" 2>/dev/null | tail -n 1 | grep . || echo 0
}
# wait_step FILE STEP PID: until the job reports a step >= STEP; 1 if it ended or took too long
wait_step() {
  local waited=0
  while [ "$(last_step "$1")" -lt "$2" ]; do
    kill -0 "$3" 2>/dev/null || return 1
    [ "$waited" -lt $((limit * 10)) ] || return 1
    sleep 0.1
    waited=$((waited + 1))
  done
}
# wait_gone PID SECONDS: until PID has ended (polled every 50 ms); 1 if it is still there
wait_gone() {
  local waited=0
  while kill -0 "$1" 2>/dev/null; do
    [ "$waited" -lt $(($2 * 20)) ] || return 1
    sleep 0.05
    waited=$((waited + 1))
  done
}
# the generation to fall back on: committed, verified, LATEST naming it
check_intact() {
  local dir=$1
  [ "$(cat "$dir/LATEST" 2>/dev/null)" = 1 ] || fail "LATEST of $dir is '$(cat "$dir/LATEST" 2>/dev/null)', not 1"
  "$bin/mana_restart" --ckptdir "$dir" --check >"$work/check.out" 2>&1 ||
    fail "generation 1 no longer verifies: $(head -n 2 "$work/check.out")"
}
record() { # record CASE SECONDS JOB LINE
  table+=("$(printf '%-22s %7s s  %-12s %s' "$1" "$2" "$3" "$4")")
}
# one_line FILE: the file's first non-empty line (the error a user sees)
one_line() { grep -m 1 . "$1" 2>/dev/null | cut -c1-160; }

export ITERATIVE_PROGRESS=$((iters / 200))
echo "run_faults.sh: native reference ($program $iters at 2 ranks)"
timeout "$limit" mpiexec.mpich -n 2 "$program" "$iters" >"$work/native.out" 2>/dev/null ||
  { echo "run_faults.sh: FAIL: the native run failed"; exit 1; }

# generation 1, the one to fall back on: checkpoint and kill at a tenth of the run
"$bin/mana_launch" --ckptdir "$ck" mpiexec.mpich -n 2 "$program" "$iters" \
  >"$work/run0.out" 2>"$work/run0.err" </dev/null &
job=$!
jobs_to_kill+=("$job")
case=setup
wait_step "$work/run0.err" $((iters / 10)) "$job" || { fail "the job did not reach step $((iters / 10))"; exit 1; }
"$bin/mana_status" --ckptdir "$ck" --checkpoint --kill --wait >"$work/gen1.out" 2>&1 ||
  { fail "generation 1: $(cat "$work/gen1.out")"; exit 1; }
wait "$job"
restore_step=$(last_step "$work/run0.err")
check_intact "$ck"

# fault_in_checkpoint CASE PATTERN CKPTDIR [ENV=VALUE...]: restarts generation 1 with the
# environment given, checkpoints it once it runs, and checks what the fault did
fault_in_checkpoint() {
  local name=$1 pattern=$2 dir=$3 t0 ms
  shift 3
  env "$@" "$bin/mana_restart" --ckptdir "$dir" mpiexec.mpich -n 2 \
    >"$work/$name.out" 2>"$work/$name.err" </dev/null &
  local job=$!
  jobs_to_kill+=("$job")
  if ! wait_step "$work/$name.err" $((restore_step + 1)) "$job"; then
    fail "the restarted job did not run: $(tail -n 3 "$work/$name.err")"
    return
  fi
  t0=$(now_ms)
  if "$bin/mana_status" --ckptdir "$dir" --checkpoint --wait --timeout 60 \
      >"$work/$name.status" 2>&1; then
    fail "the checkpoint was committed: $(cat "$work/$name.status")"
  fi
  [ "$(grep -c . "$work/$name.status")" -eq 1 ] ||
    fail "mana_status printed $(grep -c . "$work/$name.status") lines: $(cat "$work/$name.status")"
  grep -q -- "$pattern" "$work/$name.status" || fail "unexpected message: $(cat "$work/$name.status")"
  ms=$(( $(now_ms) - t0 ))
  if [ -n "${rank_line:-}" ]; then
    # every rank says what happened to it, within 10 s
    local waited=0
    while [ "$(grep -c -- "$rank_line" "$work/$name.err")" -lt 2 ] && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    [ "$(grep -c -- "$rank_line" "$work/$name.err")" -ge 2 ] ||
      fail "not every rank said '$rank_line' within 10 s: $(grep mana_lh "$work/$name.err")"
  fi
  if [ "${orphan_removed:-}" = 1 ]; then
    # nobody can commit the half-written generation any more: the ranks remove it, at once
    # (not the next coordinator, which may never come)
    local waited=0
    while [ -e "$dir/gen-000002" ] && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    [ ! -e "$dir/gen-000002" ] ||
      fail "the uncommitted generation 2 is still on disk 10 s after its coordinator died"
  fi
  local fate="ended" at
  if [ "${job_ends:-}" = 1 ]; then
    # a rank is gone: the launcher must end the whole job, within 10 s
    wait_gone "$job" 10 || fail "the job still runs 10 s after the fault"
    ms=$(( $(now_ms) - t0 ))
  else
    # the job survives a checkpoint that failed without losing a rank: it must really go on
    # (no rank left parked), then it is stopped here; one that ran to its end went on too,
    # if it ended well
    fate="goes on"
    at=$(last_step "$work/$name.err")
    if wait_step "$work/$name.err" $((at + 2 * ITERATIVE_PROGRESS)) "$job"; then
      kill "$job" 2>/dev/null
      wait "$job" 2>/dev/null
    elif kill -0 "$job" 2>/dev/null; then
      fail "the job is alive but makes no progress after the failed checkpoint (step $at)"
      kill "$job" 2>/dev/null
      wait "$job" 2>/dev/null
    elif ! wait "$job"; then
      fail "the job failed after a checkpoint it could have survived: $(tail -n 3 "$work/$name.err")"
    fi
  fi
  # what the ranks said about it
  grep "mana_lh" "$work/$name.err" | sed 's/^/    job: /' | head -n 4
  record "$name" "$(secs "$ms")" "$fate" "$(one_line "$work/$name.status")"
  check_intact "$dir"
  [ ! -e "$dir/gen-000002/MANIFEST" ] || fail "a partial generation 2 has a MANIFEST"
}

# refused_restart CASE PATTERN COMMAND...: a restart that cannot go ahead ends within 10 s
refused_restart() {
  local name=$1 pattern=$2 t0 rc=0
  shift 2
  t0=$(now_ms)
  timeout 60 "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
  local ms=$(( $(now_ms) - t0 ))
  [ "$rc" -ne 0 ] || fail "the restart succeeded"
  [ "$rc" -ne 124 ] || fail "still running after 60 s (a hang)"
  [ "$ms" -le 10000 ] || fail "took $(secs "$ms") s to end (more than 10 s)"
  # Hydra reports a rank's death on its standard output
  cat "$work/$name.err" "$work/$name.out" >"$work/$name.both"
  grep -q -- "$pattern" "$work/$name.both" ||
    fail "unexpected error output: $(head -n 3 "$work/$name.both")"
  record "$name" "$(secs "$ms")" "refused" "$(grep -m 1 -- "$pattern" "$work/$name.both" | cut -c1-160)"
}

# a copy of the checkpoint directory with generation 1 damaged by CMD (run in the copy)
damaged_copy() {
  rm -rf "$work/bad" && cp -a "$ck" "$work/bad" && (cd "$work/bad/gen-000001" && eval "$1")
}

for case in "${cases[@]}"; do
  echo "run_faults.sh: case $case"
  case "$case" in
    write-kill)
      job_ends=1 fault_in_checkpoint "$case" "rank 1" "$ck" MANA_FAULT=write-kill:1 ;;
    coord-kill-in-write)
      rank_line="lost the coordinator" orphan_removed=1 fault_in_checkpoint "$case" "coordinator" "$ck" \
        MANA_FAULT=coord-kill-in-write ;;
    enospc|enospc-full)
      if [ "$(id -u)" -ne 0 ]; then echo "  skipped: needs root to mount a small tmpfs"; continue; fi
      mkdir -p "$work/small"
      # room for generation 1 and 2 MiB more: the next generation cannot fit (earlier
      # cases may have left an incomplete generation 2 in $ck: it is not copied); full: a
      # filler leaves 8 KiB, so that a rank's first write fails (the rank that lost the race
      # for the 2 MiB reported "no reason given" when that was its record's blob)
      kib=$(( $(du -sk "$ck/gen-000001" | cut -f1) + 2048 ))
      if ! mount -t tmpfs -o "size=${kib}k,mode=0700" tmpfs "$work/small"; then
        echo "  skipped: cannot mount a tmpfs"; continue
      fi
      tmpfs_mounted=1
      cp -a "$ck/LATEST" "$ck/gen-000001" "$ck/.mana" "$work/small/"
      rm -f "$work/small/.mana/coordinator.log"
      if [ "$case" = enospc-full ]; then
        avail=$(df -k --output=avail "$work/small" | tail -1)
        dd if=/dev/zero of="$work/small/filler" bs=1k count=$(( avail > 8 ? avail - 8 : 0 )) \
          2>/dev/null
      fi
      fault_in_checkpoint "$case" "No space left on device" "$work/small"
      umount "$work/small" && tmpfs_mounted="" ;;
    restart-kill)
      refused_restart "$case" "Killed (signal 9)" env MANA_FAULT=restart-kill:1 \
        mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck"
      check_intact "$ck" ;;
    restart-kill-launcher)
      refused_restart "$case" "Killed (signal 9)" env MANA_FAULT=restart-kill:1 \
        "$bin/mana_restart" --ckptdir "$ck" mpiexec.mpich -n 2
      check_intact "$ck" ;;
    flipped-byte)
      damaged_copy 'printf "\132" | dd of=rank-000001.img bs=1 seek=4096 conv=notrunc 2>/dev/null'
      refused_restart "$case" "damaged\|mismatch" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/bad" ;;
    truncated)
      damaged_copy 'truncate -s 100000 rank-000000.img'
      refused_restart "$case" "bytes but the manifest says\|truncated" \
        "$bin/mana_restart" --ckptdir "$work/bad" mpiexec.mpich -n 2 ;;
    missing-image)
      damaged_copy 'rm rank-000001.img'
      refused_restart "$case" "rank-000001.img" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/bad" ;;
    wrong-ranks)
      refused_restart "$case" "start it with -n 2\|restart with -n 2" \
        "$bin/mana_restart" --ckptdir "$ck" mpiexec.mpich -n 3 ;;
    wrong-ranks-per-rank)
      # every rank says which rank and host it is (the per-rank form has no launcher to)
      refused_restart "$case" "rank [0-9] on [^:]*: generation 1 has 2 ranks but 3 were started" \
        mpiexec.mpich -n 3 "$bin/mana_restart" --ckptdir "$ck" ;;
    other-build)
      # the image's stub and this lower half disagree on the boundary page: every rank says
      # so before it restores anything
      refused_restart "$case" "written by another build of mana" \
        env MANA_FAULT=restart-other-build mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck"
      [ "$(grep -c "written by another build of mana" "$work/$case.both")" -ge 2 ] ||
        fail "not every rank said why: $(grep -c "another build" "$work/$case.both") line(s)"
      check_intact "$ck" ;;
    bad-fs-switch)
      # an unknown MANA_FS_SWITCH: every rank says so at its start, before MPI_Init
      refused_restart "$case" "MANA_FS_SWITCH=segment: expected auto, selector or wrfsbase" \
        env MANA_FS_SWITCH=segment mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck"
      [ "$(grep -c "MANA_FS_SWITCH=segment" "$work/$case.both")" -ge 2 ] ||
        fail "not every rank said why: $(grep -c "MANA_FS_SWITCH" "$work/$case.both") line(s)"
      check_intact "$ck" ;;
    *) echo "run_faults.sh: unknown case $case" >&2; exit 2 ;;
  esac
done

case=final
# the last good generation, after all of that, runs to the native result
timeout "$limit" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck" >"$work/final.out" \
  2>"$work/final.err" </dev/null || fail "restarting generation 1 at the end: $(tail -n 3 "$work/final.err")"
if ! cat "$work/run0.out" "$work/final.out" | cmp -s "$work/native.out" -; then
  diff "$work/native.out" <(cat "$work/run0.out" "$work/final.out") | head -n 10
  fail "the last good generation did not run to the native result"
fi

echo
printf '%-22s %9s  %-12s %s\n' "case" "to end" "job" "error line"
printf '%s\n' "${table[@]}"
if [ "$failures" -ne 0 ]; then
  echo "run_faults.sh: $failures check(s) failed"
  exit 1
fi
echo "run_faults.sh: every fault ended cleanly; generation 1 restarted to the native result"
