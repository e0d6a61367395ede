#!/usr/bin/env bash
# Tachyon (Debian's ray-tracing library, MPICH flavour: libtachyon-mpich-0-dev) under mana:
# tachyon/tachyon_app.c renders an animation at 2 ranks natively, under both mana_launch forms
# and with checkpoints inside the run, once linked with libtachyon-mpich (MPI only) and once
# with libtachyon-mpich-thr (MPI beside the library's own pthreads, 2 a rank).  The library
# is C code nobody here wrote and makes every MPI call: MPI_Init and MPI_Finalize from
# rt_initialize and rt_finalize, MPI_Allgather and MPI_Barrier, and every frame's scanlines
# collected on rank 0 with persistent requests (MPI_Send_init/MPI_Recv_init,
# MPI_Startall/MPI_Start, MPI_Testsome, MPI_Waitall, MPI_Request_free).
#
#   usage: tests/realapps/tachyon.sh [--frames F] [--points P] [--rank1-points Q]
#                                    [--chain-points C] [MANA_BIN]
#     --frames F        frames of the animation (default 24; about 3 s natively at 2 ranks)
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
# Rank 0 prints one line per frame with a hash of the image it collected; the picture does
# not depend on the number of ranks or threads, so the native run of each binary must print
# a line for every frame and both binaries the same lines.  Under mana the exit status and
# stdout must equal the native run's byte for byte, in both launch forms and at every point
# of tests/restart/run_at_calls.sh (--refusals-fail: the library's state must be
# restartable).  MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with the
# command that reproduces it; the binaries live in the work directory, which
# MANA_REALAPPS_KEEP=1 keeps), 77 when libtachyon-mpich-0-dev or MPICH is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
frames=24 points=3 rank1_points=0 chain_points=2
while [ $# -gt 0 ]; do
  case "$1" in
    --frames) frames=$2; shift 2 ;;
    --points) points=$2; shift 2 ;;
    --rank1-points) rank1_points=$2; shift 2 ;;
    --chain-points) chain_points=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "tachyon.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
for n in "$frames" "$points" "$rank1_points" "$chain_points"; do
  case "$n" in ''|*[!0-9]*) echo "tachyon.sh: a count must be a whole number, not '$n'" >&2; exit 2 ;; esac
done
[ "$frames" -ge 1 ] || { echo "tachyon.sh: at least 1 frame" >&2; exit 2; }
bin=${1:-${MANA_BIN:-$top/build/bin}}
mpicc=${MPICC:-mpicc.mpich}
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
limit=${MANA_REALAPPS_TIMEOUT:-300}
src=$here/tachyon/tachyon_app.c
# the compiler prints the library's path when it finds it, else the bare name
have_lib() { [ "$("$mpicc" -print-file-name="lib$1.so" 2>/dev/null)" != "lib$1.so" ]; }
if ! command -v "$mpicc" >/dev/null || ! command -v "$mpiexec" >/dev/null ||
   ! echo '#include <tachyon.h>' | "$mpicc" -E -x c - >/dev/null 2>&1 ||
   ! have_lib tachyon-mpich || ! have_lib tachyon-mpich-thr; then
  echo "SKIP: $mpicc, $mpiexec, tachyon.h or libtachyon-mpich(-thr).so is missing (apt-get install libtachyon-mpich-0-dev mpich)"
  exit 77
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory
# UCX prints its warnings on stdout.
export UCX_LOG_LEVEL=error
shown_env="UCX_LOG_LEVEL=error" normalise="" ranks=2

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-tachyon.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0 flavour=""
fail() { echo "FAIL: ${flavour:+$flavour: }$*"; failures=$((failures + 1)); }
. "$here/forms_lib.sh"

# flavour NAME LIBRARY ARGS...: builds tachyon_app.c against LIBRARY into the work directory
# and runs it with ARGS as every check does; the native stdout is left in $work/NAME.out.
flavour() {
  flavour=$1
  local lib=$2 exe=$work/tachyon_app-$1
  shift 2
  tmp=$work/$flavour
  mkdir -p "$tmp"
  echo "== $flavour (-l$lib)"
  local build=("$mpicc" -std=c17 -Wall -Wextra -O2 -o "$exe" "$src" "-l$lib" -lm)
  if ! "${build[@]}" >"$tmp/build.log" 2>&1; then
    fail "tachyon_app.c does not build: $(head -3 "$tmp/build.log" | tr '\n' ' '); reproduce: ${build[*]}"
    return
  fi
  [ -s "$tmp/build.log" ] && { echo "note: compiler output:"; sed 's/^/  /' "$tmp/build.log"; }
  app=("$exe" -f "$frames" "$@")

  forms_native || return
  # a line for every frame, in order, or there is nothing to compare
  local want
  want=$(awk -v n="$frames" 'BEGIN { for (f = 0; f < n; f++) printf "%d\n", f }')
  if [ "$(sed -n 's/^frame \([0-9]*\): [0-9a-f]\{16\}$/\1/p' "$tmp/native/out")" != "$want" ] ||
     [ "$(wc -l <"$tmp/native/out")" != "$frames" ]; then
    fail "native: not one 'frame F: HASH' line for each of the $frames frames: $(head -2 "$tmp/native/out" | tr '\n' ' '); reproduce: $(cat "$tmp/native/cmd")"
    return
  fi
  cp "$tmp/native/out" "$work/$flavour.out"
  echo "native: exit 0, $frames frames, the last $(tail -1 "$tmp/native/out" | cut -d' ' -f3), $(cat "$tmp/native/time") s"
  forms_after_native "$points" "$rank1_points" "$chain_points"
}

flavour mpich tachyon-mpich
# the library's threads render each rank's scanlines beside MPI; 2, not one per CPU
flavour mpich-thr tachyon-mpich-thr -t 2
flavour=""
if [ -f "$work/mpich.out" ] && [ -f "$work/mpich-thr.out" ] &&
   ! cmp -s "$work/mpich.out" "$work/mpich-thr.out"; then
  fail "native: the threaded library's frames differ from the MPI-only library's: $(diff "$work/mpich.out" "$work/mpich-thr.out" | head -3 | tr '\n' ' ')"
fi

forms_verdict tachyon.sh
