#!/usr/bin/env bash
# Yorick's MPI interpreter (Debian's yorick-mpy-mpich2: mpy.mpich2) under mana, running
# yorick's own parallel test suite (testmp.i, shipped by yorick-mpy-common) natively, under
# both mana_launch forms and with checkpoints inside the run.  mpy is C code nobody here wrote:
# rank 0 interprets the script and sends the others code to run; messages of every yorick
# type go with MPI_Isend/MPI_Irecv, are found with MPI_Probe/MPI_Iprobe from any source and
# completed with MPI_Testsome/MPI_Waitsome, on an MPI_Comm_dup of MPI_COMM_WORLD with
# MPI_ERRORS_RETURN; the mpool master/worker pool hands out jobs to whichever rank is free.
#
#   usage: tests/realapps/mpy.sh [--rounds R] [--ranks N] [--points P] [--rank1-points Q]
#                                [--chain-points C] [MANA_BIN]
#     --rounds R        rounds of testmp (default 1; about 4 s each natively at 2 ranks)
#     --ranks N         ranks (default 2)
#     --points P        checkpoints at P evenly spaced MPI calls of rank 0, every third a
#                       plain checkpoint, the others a kill and a restart (default 3)
#     --rank1-points Q  the same on rank 1's calls (default 0)
#     --chain-points C  C kill points with forked writers and incremental checkpoints, each
#                       after a plain checkpoint at a fifth of the run (default 0)
#     MANA_BIN          the directory with mana_launch and mana_restart (default: $MANA_BIN,
#                       else build/bin)
#
# The native run must report every test passed and no mpool error in each round; under mana
# the exit status and stdout must equal the native run's byte for byte (only rank 0 prints).
# MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with the
# command that reproduces it), 77 when yorick-mpy-mpich2 or MPICH is not installed
# (tests/setup/install-deps.sh installs them).  MANA_REALAPPS_KEEP=1 keeps the work directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rounds=1 ranks=2 points=3 rank1_points=0 chain_points=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --points) points=$2; shift 2 ;;
    --rank1-points) rank1_points=$2; shift 2 ;;
    --chain-points) chain_points=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "mpy.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
for n in "$rounds" "$ranks" "$points" "$rank1_points" "$chain_points"; do
  case "$n" in ''|*[!0-9]*) echo "mpy.sh: a count must be a whole number, not '$n'" >&2; exit 2 ;; esac
done
[ "$rounds" -ge 1 ] && [ "$ranks" -ge 2 ] || { echo "mpy.sh: at least 1 round and 2 ranks" >&2; exit 2; }
bin=${1:-${MANA_BIN:-$top/build/bin}}
# the real executable: /usr/bin/mpy.mpich2 is a symbolic link to it
mpy=${MPY:-/usr/lib/yorick/bin/mpy.mpich2}
testmp_gz=/usr/share/doc/yorick-mpy-common/examples/testmp.i.gz
mpiexec=${MPIEXEC:-mpiexec.mpich}
limit=${MANA_REALAPPS_TIMEOUT:-300}
if [ ! -x "$mpy" ] || [ ! -r "$testmp_gz" ] || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: $mpy, $testmp_gz or $mpiexec is missing (apt-get install yorick-mpy-mpich2 mpich)"
  exit 77
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-mpy.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
. "$here/forms_lib.sh"

gzip -dc "$testmp_gz" >"$tmp/testmp.i"
export MPY_ROUNDS=$rounds
shown_env="MPY_ROUNDS=$rounds" normalise=""
# -j: every rank includes testmp.i; -i: rank 0 then runs the rounds and quits
app=("$mpy" -j "$tmp/testmp.i" -i "$here/mpy/rounds.i")

forms_native || exit 1
# mpy reports a script error and still exits 0: the native run must show every round passed.
out=$tmp/native/out
passed=$(grep -c -E "^testmp[23] passed on all $ranks ranks$" "$out")
clean=$(grep -c -E '^mpool.* finished \(v(pack|save)\) nerrors=0$' "$out")
if [ "$passed" != $((2 * rounds)) ] || [ "$clean" != $((3 * rounds)) ] ||
   grep -q -E 'ERROR|failed' "$out"; then
  fail "native: testmp did not pass every round ($passed of $((2 * rounds)) tests passed, $clean of $((3 * rounds)) pools clean): $(grep -m2 -E 'ERROR|failed' "$out" | tr '\n' ' '); reproduce: $(cat "$tmp/native/cmd")"
  exit 1
fi
echo "native: exit 0, $rounds round(s) of testmp passed on $ranks ranks, $(cat "$tmp/native/time") s"
forms_after_native "$points" "$rank1_points" "$chain_points"
forms_verdict mpy.sh
