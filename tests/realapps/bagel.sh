#!/usr/bin/env bash
# BAGEL (Debian's bagel, a quantum chemistry program built with MPICH) under mana: ethylene,
# Hartree-Fock, MP2, CASSCF(2,2) and the CASSCF nuclear gradient at 2 ranks with 2 threads
# each, run natively, under both mana_launch forms and with checkpoints inside the run.
# BAGEL is C++ code nobody here wrote: MPI_Init_thread with MPI_THREAD_MULTIPLE, its own
# thread pool beside MPI, one-sided communication on MPI_Win_allocate windows under
# MPI_Win_lock_all with request-based MPI_Rget/MPI_Rput/MPI_Raccumulate, MPI_Cancel of
# posted receives, MPI_Comm_split, and collectives on large matrices.
#
#   usage: tests/realapps/bagel.sh [--points P] [--rank1-points Q] [--chain-points C] [MANA_BIN]
#     --points P        checkpoints at P evenly spaced MPI calls of rank 0, every third a
#                       plain checkpoint, the others a kill and a restart (default 3)
#     --rank1-points Q  the same on rank 1's calls (default 0: none)
#     --chain-points C  C kill points with forked writers and incremental checkpoints
#                       (MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1), each after a plain
#                       checkpoint at a fifth of the run: the restart reads a chain of two
#                       generations (default 2; 0: none)
#     MANA_BIN          the directory with mana_launch and mana_restart (default: $MANA_BIN,
#                       else build/bin)
#
# Every output is compared after its timings are removed (BAGEL ends most lines with the
# seconds a step took; the energies, gradients and iteration counts stay): the launch forms'
# and every restarted run's stdout must equal the native run's, with the native exit status.
# The checkpoints go through tests/restart/run_at_calls.sh (--refusals-fail: BAGEL's state
# must be restartable).  MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with the
# command that reproduces it), 77 when bagel or MPICH is not installed
# (tests/setup/install-deps.sh installs them).  MANA_REALAPPS_KEEP=1 keeps the work directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
points=3 rank1_points=0 chain_points=2
while [ $# -gt 0 ]; do
  case "$1" in
    --points) points=$2; shift 2 ;;
    --rank1-points) rank1_points=$2; shift 2 ;;
    --chain-points) chain_points=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "bagel.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
for n in "$points" "$rank1_points" "$chain_points"; do
  case "$n" in ''|*[!0-9]*) echo "bagel.sh: a point count must be a whole number, not '$n'" >&2; exit 2 ;; esac
done
bin=${1:-${MANA_BIN:-$top/build/bin}}
bagel=${BAGEL:-/usr/bin/BAGEL}
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
input=$here/bagel/ethylene.json
limit=${MANA_REALAPPS_TIMEOUT:-300}
if [ ! -x "$bagel" ] || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: $bagel or $mpiexec is not installed (apt-get install bagel mpich)"; exit 77
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory
# The thread count is part of the output ("using 2 threads per process"); BAGEL would
# otherwise take one per core.  UCX prints its warnings on stdout.
export BAGEL_NUM_THREADS=2 UCX_LOG_LEVEL=error
shown_env="BAGEL_NUM_THREADS=2 UCX_LOG_LEVEL=error"
# BAGEL's timings: a number with a decimal point at the end of a line, maybe followed by
# "sec."; every other number is a result.
normalise="sed -E 's/ +[0-9]+\\.[0-9]+( sec\\.)?\$//'"
app=("$bagel" "$input") ranks=2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-bagel.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
. "$here/forms_lib.sh"

forms_native || exit 1
# The native run must have computed what the input asks, or there is nothing to compare.
for want in 'MP2 total energy' 'Second-order optimization converged' 'Nuclear energy gradient' \
            'METHOD: FORCE'; do
  grep -q "$want" "$tmp/native/out" || { fail "native: no '$want' in BAGEL's output"; exit 1; }
done
mp2=$(awk '/MP2 total energy:/ { print $4 }' "$tmp/native/out")
echo "native: exit 0, $(wc -l <"$tmp/native/out") lines, MP2 total energy $mp2, $(cat "$tmp/native/time") s"
forms_after_native "$points" "$rank1_points" "$chain_points"
forms_verdict bagel.sh
