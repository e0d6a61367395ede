#!/usr/bin/env bash
# Periodic checkpoints (mana_launch --interval) of a multi-rank job that keeps messages and
# collectives in flight: the job must end normally with native output, at least MIN
# generations must be committed, and the last one must verify.  A periodic checkpoint that
# meets the end of the job (ranks finalizing) is abandoned, never a crash.  PROGRAM is
# tests/programs/iterative: it holds at iteration MANA_INTERVAL_HOLD_STEP (ITERATIVE_HOLD)
# until MIN checkpoints were committed, so the count never depends on the machine's speed.
#   usage: run_interval.sh MANA_BIN RANKS INTERVAL MIN PROGRAM [ARGS...]
set -u
bin=$1 ranks=$2 interval=$3 min=$4
shift 4
work=$(mktemp -d)
job=""
trap '[ -n "$job" ] && kill "$job" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

t0=$(date +%s)
timeout 600 mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>/dev/null || fail "native run failed"
# A loaded machine is slow for both runs: the limit follows the native time.
limit=$(( ($(date +%s) - t0) * 4 + 60 ))
[ "$limit" -ge 120 ] || limit=120
# The job (iterative) holds half-way, still calling MPI, until MIN periodic checkpoints
# were committed: how long it runs does not decide how many happen.
hold_step=${MANA_INTERVAL_HOLD_STEP:?the iteration to hold at (iterative ITERS / 2)}
log=$work/ckpt/.mana/coordinator.log
committed() { local n; n=$(grep -c 'committed:' "$log" 2>/dev/null); echo "${n:-0}"; }
ITERATIVE_HOLD="$work/go:$hold_step" timeout "$limit" "$bin/mana_launch" --ckptdir "$work/ckpt" \
  --interval "$interval" mpiexec.mpich -n "$ranks" "$@" >"$work/mana" 2>"$work/mana.err" &
job=$!
waited=0
while [ "$(committed)" -lt "$min" ]; do
  kill -0 "$job" 2>/dev/null || { wait "$job"; fail "the job ended with $? before $min periodic checkpoints: $(tail -3 "$work/mana.err")"; }
  [ "$waited" -lt $((limit * 10)) ] || fail "$(committed) of $min periodic checkpoints within $limit s"
  sleep 0.1
  waited=$((waited + 1))
done
touch "$work/go"
wait "$job" || fail "the job ended with $?: $(tail -3 "$work/mana.err")"
grep -q "holding at step $hold_step" "$work/mana.err" || fail "the job never held at step $hold_step"
cmp -s "$work/native" "$work/mana" || { diff "$work/native" "$work/mana" | head; fail "output differs"; }
commits=$(grep -c 'committed:' "$work/ckpt/.mana/coordinator.log")
[ "$commits" -ge "$min" ] || fail "$commits periodic checkpoint(s) committed, expected at least $min"
"$bin/mana_restart" --ckptdir "$work/ckpt" --check >/dev/null || fail "the last generation does not verify"
echo "native output, $commits periodic checkpoints committed, the last one verifies"
