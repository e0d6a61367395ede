#!/usr/bin/env bash
# The demo: installs what is missing, builds mana, then runs a real MPI program natively and
# under mana_launch (both forms) and shows that the results are identical.
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
run() { local out=$1; shift; echo "\$ $*"; /usr/bin/time -f "   (%e s)" "$@" >"$out"; }

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

if [ -x "$here/realapps/scalapack.sh" ]; then
  say "a real Debian program: ScaLAPACK's testers (scalapack-mpi-test) natively and under mana"
  "$here/realapps/scalapack.sh" "$bin" || status=1
fi
exit $status
