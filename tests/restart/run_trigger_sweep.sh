#!/usr/bin/env bash
# run_trigger_sweep.sh - checkpoint, kill and restart a program at many deterministic points.
#
# usage: run_trigger_sweep.sh [options] PROGRAM [ARGS...]
#
# Runs PROGRAM natively once (the reference stdout and exit status) and once under mana to
# learn how many times rank R (0) crosses into the lower half (MANA_TEST_COUNT_CALLS), then, for
# each of POINTS values of K spread evenly over that range, runs
#
#   MANA_TEST_CHECKPOINT_AT_CALL=K MANA_TEST_CHECKPOINT_RANK=R \
#     mana_launch --ckptdir D mpiexec.mpich -n N PROGRAM ARGS
#   mana_restart --ckptdir D mpiexec.mpich -n N          (when the checkpoint was committed)
#
# and compares the two segments' stdout, concatenated, with the native stdout byte for byte
# (and the restart's exit status with the native one).  A checkpoint the coordinator refused
# or that came after the program's last MPI call leaves one segment, which must equal the
# native run alone.  Each K is one line: "K restarted", "K refused: REASON", "K no checkpoint"
# (the program had finalized MPI, or a rank had ended, first) or "K FAIL: why".
#
# Options:
#   -n, --ranks N        ranks (default 2)
#   --bin DIR            mana_launch and mana_restart (default $MANA_BIN, else <build>/bin when
#                        PROGRAM is in <build>/tests/...)
#   --rank R             the rank whose calls are counted (default 0)
#   --points P           how many values of K (default 20)
#   --from K0, --to K1   the range of K (default 1 .. rank R's count under mana)
#   --min-restarts M     fail unless at least M points restarted (default 1)
#   --refusals-fail      a refused checkpoint is a failure (state that must be restartable)
#   --timeout S          limit per run (default 120)
#   --keep               keep the work directory (printed)
# Exit status: 0 every point matched native, 1 a failure, 2 usage error.
set -uo pipefail

me=run_trigger_sweep.sh
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}
die_usage() { echo "$me: $*" >&2; exit 2; }

ranks=2 rank=0 bin=${MANA_BIN:-} points=20 from="" to="" min_restarts=1 refusals_fail=0 limit=120 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--ranks) ranks=${2:?}; shift 2 ;;
    --bin) bin=${2:?}; shift 2 ;;
    --rank) rank=${2:?}; shift 2 ;;
    --points) points=${2:?}; shift 2 ;;
    --from) from=${2:?}; shift 2 ;;
    --to) to=${2:?}; shift 2 ;;
    --min-restarts) min_restarts=${2:?}; shift 2 ;;
    --refusals-fail) refusals_fail=1; shift ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die_usage "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
prog=$1
shift
if [ -z "$bin" ]; then
  case "$prog" in
    */tests/*) bin=${prog%%/tests/*}/bin ;;
  esac
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] || die_usage "no mana_launch in '$bin' (--bin)"
[ "$points" -ge 1 ] || die_usage "--points must be at least 1"

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-sweep.XXXXXX")
if [ "$keep" = 1 ]; then
  echo "$me: work directory $work"
else
  trap 'rm -rf "$work"' EXIT
fi
launch=(mpiexec.mpich -n "$ranks")

timeout "$limit" "${launch[@]}" "$prog" "$@" >"$work/native.out" 2>"$work/native.err"
native_rc=$?
[ "$native_rc" -ne 124 ] || { echo "FAIL: the native run timed out"; exit 1; }

# The range of K: rank R's crossings into the lower half under mana (no checkpoint).
MANA_TEST_COUNT_CALLS="$work/counts" timeout "$limit" "$bin/mana_launch" --ckptdir "$work/count" \
  "${launch[@]}" "$prog" "$@" >"$work/count.out" 2>"$work/count.err"
rc=$?
[ "$rc" -eq "$native_rc" ] || { echo "FAIL: under mana without a checkpoint: exit $rc, natively $native_rc"; exit 1; }
cmp -s "$work/native.out" "$work/count.out" || {
  diff "$work/native.out" "$work/count.out" | head -5
  echo "FAIL: under mana without a checkpoint the output differs"
  exit 1
}
calls=$(awk -v r="$rank" '$1 == "rank" && $2 == r { print $4 }' "$work/counts" | head -1)
[ -n "$calls" ] || { echo "FAIL: rank $rank reported no call count"; exit 1; }
from=${from:-1}
to=${to:-$calls}
echo "$me: $prog: rank $rank makes $calls MPI calls under mana; K from $from to $to, $points points"

restarted=0 refused=0 late=0 failed=0
for ((i = 0; i < points; i++)); do
  if [ "$points" -eq 1 ]; then k=$from; else k=$((from + (to - from) * i / (points - 1))); fi
  d="$work/k$k"
  mkdir -p "$d"
  MANA_TEST_CHECKPOINT_AT_CALL=$k MANA_TEST_CHECKPOINT_RANK=$rank timeout "$limit" "$bin/mana_launch" --ckptdir "$d/ckpt" \
    "${launch[@]}" "$prog" "$@" >"$d/out1" 2>"$d/err1"
  rc1=$?
  log="$d/ckpt/.mana/coordinator.log"
  why=""
  if [ -e "$d/ckpt/LATEST" ]; then
    if [ "$rc1" -ne 0 ]; then
      why="the killed segment exited $rc1: $(tail -2 "$d/err1" | tr '\n' ' ')"
    else
      timeout "$limit" "$bin/mana_restart" --ckptdir "$d/ckpt" "${launch[@]}" >"$d/out2" 2>"$d/err2"
      rc2=$?
      if [ "$rc2" -ne "$native_rc" ]; then
        why="the restart exited $rc2 (natively $native_rc): $(tail -2 "$d/err2" | tr '\n' ' ')"
      elif ! cat "$d/out1" "$d/out2" | cmp -s - "$work/native.out"; then
        why="the output differs: $(cat "$d/out1" "$d/out2" | diff - "$work/native.out" | head -4 | tr '\n' ' ')"
      else
        echo "$k restarted"
        restarted=$((restarted + 1))
        continue
      fi
    fi
  elif [ "$rc1" -ne "$native_rc" ]; then
    why="exit $rc1 without a committed checkpoint (natively $native_rc): $(tail -2 "$d/err1" | tr '\n' ' ')"
  elif ! cmp -s "$d/out1" "$work/native.out"; then
    why="no checkpoint, and the output differs: $(diff "$d/out1" "$work/native.out" | head -4 | tr '\n' ' ')"
  elif grep -q "refused the checkpoint: the application has finalized" "$log" 2>/dev/null; then
    echo "$k no checkpoint: MPI finalized"
    late=$((late + 1))
    continue
  elif grep -q "refused the checkpoint" "$log" 2>/dev/null; then
    reason=$(grep -m1 -o "refused the checkpoint: .*" "$log")
    if [ "$refusals_fail" = 1 ]; then
      why="$reason"
    else
      echo "$k refused: ${reason#refused the checkpoint: }"
      refused=$((refused + 1))
      continue
    fi
  elif grep -qE "generation [0-9]+ aborted: rank [0-9]+ disconnected" "$log" 2>/dev/null; then
    echo "$k no checkpoint: a rank had ended"
    late=$((late + 1))
    continue
  elif grep -qE "generation [0-9]+ (aborted|failed)" "$log" 2>/dev/null; then
    why="the checkpoint failed: $(grep -m1 -E "generation [0-9]+ (aborted|failed)" "$log" | cut -c25-)"
  else
    why_not=$(grep -m1 -o "test checkpoint at MPI call [0-9]*: .*" "$d/err1" | cut -d: -f2-)
    echo "$k no checkpoint${why_not:+:$why_not}"
    late=$((late + 1))
    continue
  fi
  echo "$k FAIL: $why"
  failed=$((failed + 1))
done

echo "$me: $restarted restarted, $refused refused, $late without a checkpoint, $failed failed"
[ "$failed" -eq 0 ] || exit 1
[ "$restarted" -ge "$min_restarts" ] || { echo "FAIL: fewer than $min_restarts restarts"; exit 1; }
exit 0
