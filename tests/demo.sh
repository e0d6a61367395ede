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
# Wall time by the shell itself: /usr/bin/time is not on a minimal Debian.
run() {
  local out=$1 t0 t1
  shift
  echo "\$ $*"
  t0=$(date +%s%N)
  "$@" >"$out"
  t1=$(date +%s%N)
  printf '   (%d.%02d s)\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 10000000 % 100))
}

say "native MPICH"
run "$work/native" mpiexec.mpich -n 2 "$app" "$iters"
cat "$work/native"

say "under mana, launcher form"
run "$work/outer" "$bin/mana_launch" mpiexec.mpich -n 2 "$app" "$iters"
say "under mana, per-rank form"
run "$work/inner" mpiexec.mpich -n 2 "$bin/mana_launch" "$app" "$iters"

say "comparison"
status=0
for form in outer inner; do
  if cmp -s "$work/native" "$work/$form"; then
    echo "identical to native: $form form ($(wc -l <"$work/$form") lines)"
  else
    echo "DIFFERENT from native: $form form"; diff "$work/native" "$work/$form" || true
    status=1
  fi
done

say "checkpoint, kill and restart a 2-rank job, twice"
# The same stencil, longer: every checkpoint lands with halo messages, the Allreduce and the
# wildcard ring in flight; the collective clock finds the safe point, the drain empties the
# network, and each restart picks up from the images.  Results must equal the native run.
long=$((iters * 3))
ckpt=$work/ckpt
t0=$(date +%s%N)
run "$work/uninterrupted" mpiexec.mpich -n 2 "$app" "$long"
# A checkpoint a quarter of the way into each run: two cycles leave half of it for the end.
delay_ms=$((($(date +%s%N) - t0) / 4000000))
delay=$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))
checkpoint_kill() {
  local label=$1
  shift
  echo "\$ $*   (in the background)"
  "$@" >"$work/$label.out" 2>"$work/$label.err" &
  local job=$!
  sleep "$delay"
  echo "\$ $bin/mana_status --ckptdir $ckpt"
  "$bin/mana_status" --ckptdir "$ckpt" || true
  echo "\$ $bin/mana_status --ckptdir $ckpt --checkpoint --kill --wait"
  "$bin/mana_status" --ckptdir "$ckpt" --checkpoint --kill --wait || status=1
  wait "$job" || { status=1; tail -3 "$work/$label.err"; }
}
checkpoint_kill run "$bin/mana_launch" --ckptdir "$ckpt" mpiexec.mpich -n 2 "$app" "$long"
checkpoint_kill restart1 "$bin/mana_restart" --ckptdir "$ckpt" mpiexec.mpich -n 2
echo "\$ mpiexec.mpich -n 2 $bin/mana_restart --ckptdir $ckpt   (the per-rank form, to the end)"
run "$work/restarted" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ckpt"
ls "$ckpt"
cat "$work/restarted"
if cmp -s "$work/uninterrupted" "$work/restarted"; then
  echo "identical to the uninterrupted run after 2 checkpoint/kill/restart cycles"
else
  echo "DIFFERENT from the uninterrupted run"; diff "$work/uninterrupted" "$work/restarted" || true
  status=1
fi

if [ -x "$here/realapps/scalapack.sh" ]; then
  say "a real Debian program: ScaLAPACK's testers (scalapack-mpi-test) natively and under mana"
  "$here/realapps/scalapack.sh" "$bin" || status=1
fi
exit $status
