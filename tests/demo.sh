#!/usr/bin/env bash
# The demo: installs what is missing, builds mana, then
#   1. runs a real MPI program natively and under mana_launch (both forms): identical results;
#   2. launches a job under mana, checkpoints it in mid-run with mana_status, kills it,
#      restarts it with mana_restart, and shows that the result equals an uninterrupted run;
#   3. runs ScaLAPACK's testers (a real Debian MPI program) natively and under mana.
#   usage: tests/demo.sh [ITERATIONS]     (default 20000: a few seconds per run at 2 ranks)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
build=${MANA_BUILD_DIR:-$top/build}
iters=${1:-20000}

"$here/setup/install-deps.sh"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null

app=$build/tests/programs/iterative        # 1-D heat stencil: halo exchange, Allreduce, wildcard ring
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say() { printf '\n== %s\n' "$*"; }
failures=()
# failed WHAT: records a problem (all are listed again at the end) and goes on
failed() { echo "FAIL: $*"; failures+=("$*"); }
# Wall time by the shell itself: /usr/bin/time is not on a minimal Debian.
run() {
  local out=$1 t0 t1 rc=0
  shift
  echo "\$ $*"
  t0=$(date +%s%N)
  "$@" >"$out" || rc=$?
  t1=$(date +%s%N)
  printf '   (%d.%02d s)\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 10000000 % 100))
  return $rc
}

say "native MPICH"
run "$work/native" mpiexec.mpich -n 2 "$app" "$iters" || failed "the native run failed"
cat "$work/native"

say "under mana, launcher form"
# Checkpoint directories in the work directory, not ./mana-ckpt in the checkout.
run "$work/outer" "$bin/mana_launch" --ckptdir "$work/ckpt-outer" mpiexec.mpich -n 2 "$app" "$iters" ||
  failed "the launcher form failed"
say "under mana, per-rank form"
run "$work/inner" mpiexec.mpich -n 2 "$bin/mana_launch" --ckptdir "$work/ckpt-inner" "$app" "$iters" ||
  failed "the per-rank form failed"

say "comparison"
for form in outer inner; do
  if cmp -s "$work/native" "$work/$form"; then
    echo "identical to native: $form form ($(wc -l <"$work/$form") lines)"
  else
    echo "DIFFERENT from native: $form form"; diff "$work/native" "$work/$form" || true
    failed "the $form form's output differs from native"
  fi
done

say "checkpoint, kill and restart a 2-rank job, twice"
# The same stencil, longer: every checkpoint lands with halo messages, the Allreduce and the
# wildcard ring in flight; the collective clock finds the safe point, the drain empties the
# network, and each restart picks up from the images.  Results must equal the native run.
# The checkpoints are taken at progress points (the program's step lines on stderr), never
# after a wall-clock delay, so a busy machine changes only how long the demo takes.
long=$((iters * 3))
ckpt=$work/ckpt
run "$work/uninterrupted" mpiexec.mpich -n 2 "$app" "$long"
export ITERATIVE_PROGRESS=$((long / 100))
# A generous limit for a loaded 2-core machine; reaching it is reported, never waited out.
step_limit=${MANA_DEMO_STEP_LIMIT:-900}

# last_step FILE: the last step the job reported in FILE (0: none yet)
last_step() {
  sed -n 's/^iterative: step \([0-9]*\) of .*/\1/p' "$1" 2>/dev/null | tail -n 1 | grep . || echo 0
}
latest_gen() { cat "$ckpt/LATEST" 2>/dev/null || echo none; }

# checkpoint_kill LABEL STEP COMMAND...: runs COMMAND in the background, waits until it
# reports a step past STEP, checkpoints it with --kill and checks that a new generation
# was committed and the job ended.
checkpoint_kill() {
  local label=$1 step=$2 job before waited=0
  shift 2
  before=$(latest_gen)
  echo "\$ $*   (in the background)"
  "$@" >"$work/$label.out" 2>"$work/$label.err" &
  job=$!
  while [ "$(last_step "$work/$label.err")" -lt "$step" ]; do
    if ! kill -0 "$job" 2>/dev/null; then
      failed "$label: the job ended before reaching step $step: $(tail -n 3 "$work/$label.err")"
      wait "$job" || true
      return
    fi
    if [ "$waited" -ge $((step_limit * 10)) ]; then
      failed "$label: no step past $step within $step_limit s (last step $(last_step "$work/$label.err"))"
      kill "$job" 2>/dev/null; wait "$job" || true
      return
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "   (the job reported step $(last_step "$work/$label.err") of $long)"
  echo "\$ $bin/mana_status --ckptdir $ckpt"
  "$bin/mana_status" --ckptdir "$ckpt" || true
  echo "\$ $bin/mana_status --ckptdir $ckpt --checkpoint --kill --wait"
  "$bin/mana_status" --ckptdir "$ckpt" --checkpoint --kill --wait ||
    failed "$label: the checkpoint was not committed"
  wait "$job" || failed "$label: the job exited with status $? after the checkpoint: $(tail -n 3 "$work/$label.err")"
  if [ "$(latest_gen)" = "$before" ]; then
    failed "$label: no new generation was committed (LATEST is still $before)"
  else
    cycles=$((cycles + 1))
  fi
}
cycles=0
checkpoint_kill run $((long / 4)) "$bin/mana_launch" --ckptdir "$ckpt" mpiexec.mpich -n 2 "$app" "$long"
# the restarted job reports steps from where the checkpoint left it: past the half
checkpoint_kill restart1 $((long / 2)) "$bin/mana_restart" --ckptdir "$ckpt" mpiexec.mpich -n 2
echo "\$ mpiexec.mpich -n 2 $bin/mana_restart --ckptdir $ckpt   (the per-rank form, to the end)"
run "$work/restarted" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ckpt" ||
  failed "the per-rank restart of generation $(latest_gen) failed"
unset ITERATIVE_PROGRESS
ls "$ckpt"
cat "$work/restarted"
if ! cmp -s "$work/uninterrupted" "$work/restarted"; then
  echo "DIFFERENT from the uninterrupted run"; diff "$work/uninterrupted" "$work/restarted" || true
  failed "the restarted job's result differs from the uninterrupted run"
elif [ "$cycles" -eq 2 ]; then
  echo "identical to the uninterrupted run after $cycles checkpoint/kill/restart cycles (generations 1-$(latest_gen))"
else
  failed "identical to the uninterrupted run, but only $cycles of 2 checkpoint/kill/restart cycles committed a generation"
fi

if [ -x "$here/realapps/scalapack.sh" ]; then
  say "a real Debian program: ScaLAPACK's testers (scalapack-mpi-test) natively and under mana"
  "$here/realapps/scalapack.sh" "$bin" || failed "ScaLAPACK's testers (see the FAIL lines above)"
fi

say "demo result"
if [ ${#failures[@]} -eq 0 ]; then
  echo "demo: PASS (native and both launch forms identical, 2 checkpoint/kill/restart cycles identical, ScaLAPACK as native)"
  exit 0
fi
echo "demo: FAIL, ${#failures[@]} problem(s):"
printf '  - %s\n' "${failures[@]}"
exit 1
