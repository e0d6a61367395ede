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

say "checkpoint, kill and restart (one rank: the multi-rank safe point is not in this build)"
prog=$build/tests/restart/restart_basic
ckpt=$work/ckpt
run "$work/uninterrupted" mpiexec.mpich -n 1 "$prog" 100 40 "$work/log-native"
echo "\$ $bin/mana_launch --ckptdir $ckpt mpiexec.mpich -n 1 $prog 100 40 ...   (in the background)"
"$bin/mana_launch" --ckptdir "$ckpt" mpiexec.mpich -n 1 "$prog" 100 40 "$work/log-mana" \
  >"$work/restarted" &
job=$!
sleep 1.5
echo "\$ $bin/mana_status --ckptdir $ckpt"
"$bin/mana_status" --ckptdir "$ckpt"
echo "\$ $bin/mana_status --ckptdir $ckpt --checkpoint --kill --wait"
"$bin/mana_status" --ckptdir "$ckpt" --checkpoint --kill --wait || status=1
wait "$job" || status=1
echo "(the job printed $(wc -l <"$work/restarted") lines before it was checkpointed and killed)"
run "$work/restarted.tail" "$bin/mana_restart" --ckptdir "$ckpt" mpiexec.mpich -n 1
cat "$work/restarted.tail" >>"$work/restarted"
if cmp -s "$work/uninterrupted" "$work/restarted"; then
  echo "identical to the uninterrupted run: $(tail -1 "$work/restarted")"
else
  echo "DIFFERENT from the uninterrupted run"; diff "$work/uninterrupted" "$work/restarted" || true
  status=1
fi

if [ -x "$here/realapps/scalapack.sh" ]; then
  say "a real Debian program: ScaLAPACK's testers (scalapack-mpi-test) natively and under mana"
  "$here/realapps/scalapack.sh" "$bin" || status=1
fi
exit $status
