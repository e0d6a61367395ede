#!/usr/bin/env bash
# Checkpoints at many deterministic points of a short program's MPI lifetime.
#
#   usage: run_trigger_range.sh [--keep-every M] MANA_BIN RANKS POINTS PROGRAM [ARGS...]
#
# The program runs natively once, then once under mana_launch with MANA_TEST_COUNT_CALLS to
# learn how many times rank 0 crosses into the lower half (N).  Then, for POINTS values of K
# spread evenly over 1..N, a run with MANA_TEST_CHECKPOINT_AT_CALL=K: a checkpoint with --kill
# at rank 0's K-th crossing, followed by mana_restart of what it committed; the two segments'
# stdout together must equal the native stdout and both must exit 0.  With --keep-every M,
# every M-th point instead takes a plain checkpoint (MANA_TEST_CHECKPOINT_KEEP=1) and the job
# must go on to the native output (the drain and the epochs put back in a running job).
# A K whose checkpoint is not taken (the program ended first) counts as skipped.
set -u
keep_every=0
if [ "${1:-}" = "--keep-every" ]; then
  keep_every=$2
  shift 2
fi
bin=$1 ranks=$2 points=$3
shift 3
work=$(mktemp -d)
# Kept when a point fails (the coordinator's log and the segments' stderr are in it).
fail() { echo "FAIL: $*; logs kept in $work"; exit 1; }
limit=${MANA_TEST_RUN_TIMEOUT:-120}

timeout "$limit" mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>"$work/native.err" ||
  fail "native run failed: $(tail -3 "$work/native.err")"
MANA_TEST_COUNT_CALLS="$work/counts" timeout "$limit" "$bin/mana_launch" --ckptdir "$work/c0" \
  mpiexec.mpich -n "$ranks" "$@" >"$work/mana" 2>"$work/mana.err" ||
  fail "run under mana failed: $(tail -3 "$work/mana.err")"
cmp -s "$work/native" "$work/mana" || fail "output under mana differs from the native one"
n=$(awk '$2 == 0 { print $4 }' "$work/counts")
[ -n "$n" ] && [ "$n" -gt 1 ] || fail "no call count from rank 0 ($(cat "$work/counts"))"
echo "rank 0 crosses into the lower half $n times; $points checkpoints"

passed=0 skipped=0
for i in $(seq 1 "$points"); do
  k=$(( (i * (n - 1)) / (points + 1) + 1 ))
  d="$work/k$k"
  keep=0 keepvar=MANA_TEST_UNUSED
  [ "$keep_every" -gt 0 ] && [ $((i % keep_every)) -eq 0 ] && keep=1 keepvar=MANA_TEST_CHECKPOINT_KEEP
  start=$(date +%s.%N)
  env MANA_TEST_CHECKPOINT_AT_CALL=$k "$keepvar=1" timeout "$limit" \
    "$bin/mana_launch" --ckptdir "$d" mpiexec.mpich -n "$ranks" "$@" >"$d.out1" 2>"$d.err1"
  rc1=$?
  [ $rc1 -eq 0 ] || { tail -n 5 "$d.err1" "$d/.mana/coordinator.log"; \
                      fail "K=$k: the checkpointed run exited $rc1"; }
  if [ ! -e "$d/LATEST" ]; then
    grep -h "aborted\|refused" "$d/.mana/coordinator.log" && fail "K=$k: the checkpoint failed"
    skipped=$((skipped + 1))
    cp "$d.out1" "$d.all"
  elif [ $keep -eq 1 ]; then
    cp "$d.out1" "$d.all"
  else
    # The killed job's coordinator must be gone (it holds the directory's lock until it has
    # exited): a restart that found it still there failed with "cannot read from the
    # coordinator: Connection reset by peer" (2 of about 120 restarts on a loaded machine).
    for _ in $(seq 1 100); do
      flock -n "$d/.mana/lock" true && break
      sleep 0.1
    done
    timeout "$limit" "$bin/mana_restart" --ckptdir "$d" mpiexec.mpich -n "$ranks" \
      >"$d.out2" 2>"$d.err2" || { tail -n 5 "$d.err2" "$d/.mana/coordinator.log"; \
                                  fail "K=$k: the restart failed"; }
    cat "$d.out1" "$d.out2" >"$d.all"
  fi
  cmp -s "$work/native" "$d.all" || { diff "$work/native" "$d.all" | head; \
                                      fail "K=$k: output differs from the native run"; }
  printf 'K=%s %s %.1f s\n' "$k" "$([ $keep -eq 1 ] && echo checkpoint || echo kill+restart)" \
    "$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')"
  passed=$((passed + 1))
  rm -rf "$d" "$d".*
done
rm -rf "$work"
echo "$passed passed ($skipped without a checkpoint), 0 failed"
