#!/usr/bin/env bash
# The test command: installs what is missing, builds mana, and runs the default test suite
# (unit tests, and every integration program natively and under both mana_launch forms,
# compared with native output).  Slow suites are separate: see tests/README.md.
#   usage: tests/run-all.sh [--slow] [extra ctest arguments, e.g. -R mpi.p2p]
#          --slow runs the slow suites instead (more ranks, long chains, NetPIPE sweep)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
build=${MANA_BUILD_DIR:-$top/build}

"$here/setup/install-deps.sh"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANA_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
# mpiexec needs a writable HOME-less environment only; keep the ranks off each other's cores
# as little as possible with at most 4 ranks per test (tests/programs/CMakeLists.txt).
if [ "${1:-}" = --slow ]; then
  shift
  exec ctest --output-on-failure --timeout 900 -L 'slow' -LE 'slurm' "$@"
fi
ctest --output-on-failure --timeout 300 -LE 'slow' "$@"
