#!/usr/bin/env bash
# Runs hdf5_app.c, a parallel HDF5 program (Debian package libhdf5-mpich-dev), at 2 ranks
# natively, under both mana_launch forms and with checkpoints, kills and restarts inside the
# run, and checks that mana changes nothing.  HDF5's MPI-IO driver and ROMIO are code nobody
# here wrote: collective and independent MPI_File_* I/O, file views with derived datatypes,
# communicator and info duplicates, and the attribute HDF5 puts on MPI_COMM_SELF, whose delete
# callback shuts HDF5 down at MPI_Finalize.
#
#   usage: tests/realapps/hdf5.sh [MANA_BIN]
#     MANA_BIN  the directory with mana_launch and mana_restart (default: $MANA_BIN, else
#               build/bin)
#
# Checks: the native run exits 0 and its read-back verdict is PASS; under
# `mana_launch --ckptdir D mpiexec.mpich -n 2 APP` and `mpiexec.mpich -n 2 mana_launch
# --ckptdir D APP` the same exit status, the same stdout (the program prints per-step and
# read-back checksums, nothing that varies between runs), the same stderr and the same file
# content (`h5dump -p`, with the file name in its first line normalised; when h5dump, package
# hdf5-tools, is missing, only the program's own read-back checksums are compared); then
# tests/restart/run_at_calls.sh checkpoints the program at HDF5_POINTS (default 8) evenly
# spaced MPI calls, every third a plain checkpoint and the others a kill and a restart (both
# restart forms in turn), and compares each with native, a refusal being a failure; the file
# the last restarted run wrote must dump as the native one.
# HDF5_STEPS (default 24) sets the program's step count, MANA_REALAPPS_TIMEOUT (default 300)
# the limit of each run.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with
# the command that reproduces it), 77 when libhdf5-mpich-dev or MPICH is not installed.
# MANA_REALAPPS_KEEP=1 keeps the temporary directory with every run's output.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2
fi
bindir=${1:-${MANA_BIN:-$top/build/bin}}
launch=$bindir/mana_launch
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
at_calls=$top/tests/restart/run_at_calls.sh
steps=${HDF5_STEPS:-24}
points=${HDF5_POINTS:-8}
# A run longer than this is a hang.  Idle runs take 0.1-0.5 s (native, under mana), but on a
# 2-core machine shared with other work a collective can wait seconds for a descheduled rank.
limit=${MANA_REALAPPS_TIMEOUT:-300}
# UCX prints its warnings on stdout, which would make the outputs differ
export UCX_LOG_LEVEL=error

# h5pcc.mpich -shlib links the shared libhdf5_mpich, as pkg-config's flags do; the wrapper is
# preferred since it is what HDF5 documents, pkg-config is the fallback.
if command -v h5pcc.mpich >/dev/null; then
  compile=(h5pcc.mpich -shlib)
  libs=()
elif command -v mpicc.mpich >/dev/null && pkg-config --exists hdf5-mpich 2>/dev/null; then
  compile=(mpicc.mpich)
  read -r -a libs <<<"$(pkg-config --cflags --libs hdf5-mpich)"
else
  compile=()
fi
if [ ${#compile[@]} = 0 ] || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: parallel HDF5 (libhdf5-mpich-dev: h5pcc.mpich or pkg-config hdf5-mpich) or $mpiexec missing"
  exit 77
fi
if [ ! -x "$launch" ] || [ ! -x "$bindir/mana_restart" ]; then
  echo "FAIL: $launch or $bindir/mana_restart not found or not executable (build mana first)"; exit 1
fi
h5dump=$(command -v h5dump || true)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-hdf5.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

app=$tmp/hdf5_app
build=("${compile[@]}" -std=c17 -Wall -Wextra -O2 -o "$app" "$here/hdf5_app.c" "${libs[@]}")
# every reproducing command starts by building the program again
rebuild="cd \$(mktemp -d) && export UCX_LOG_LEVEL=error && ${build[*]}"
rebuild=${rebuild//"$app"/hdf5_app}
# in $tmp: h5pcc compiles with -c into ./hdf5_app.o and leaves it in the current directory
if ! (cd "$tmp" && "${build[@]}") >"$tmp/build.log" 2>&1; then
  fail "hdf5_app.c does not build: $(head -3 "$tmp/build.log" | tr '\n' ' '); reproduce: ${build[*]}"
  exit 1
fi
[ -s "$tmp/build.log" ] && { echo "note: compiler output:"; sed 's/^/  /' "$tmp/build.log"; }

file=hdf5_app.h5
forms=(native launcher per-rank)

# run FORM: runs the program in $tmp/FORM/, which it writes its file into; its stdout and
# stderr (mpiexec's and mana_launch's included) go to out and err there.
run() {
  local form=$1 dir=$tmp/$1
  mkdir -p "$dir"
  local cmd
  case $form in
    native)   cmd=("$mpiexec" -n 2 "$app" -s "$steps" "$file") ;;
    launcher) cmd=("$launch" -v --ckptdir "$dir/ck" "$mpiexec" -n 2 "$app" -s "$steps" "$file") ;;
    per-rank) cmd=("$mpiexec" -n 2 "$launch" -v --ckptdir "$dir/ck" "$app" -s "$steps" "$file") ;;
  esac
  local shown="${cmd[*]}"
  shown=${shown//"$dir/ck"/ck}
  echo "$rebuild && timeout $limit ${shown//"$app"/./hdf5_app}" >"$dir/cmd"
  local t0
  t0=$(date +%s.%N)
  (cd "$dir" && timeout -k 10 "$limit" "${cmd[@]}" </dev/null >out 2>err)
  echo $? >"$dir/rc"
  elapsed "$t0" >"$dir/time"
  # the file name is the one thing in the dump that may legitimately differ
  if [ -n "$h5dump" ] && [ -e "$dir/$file" ]; then
    (cd "$dir" && "$h5dump" -p "$file" 2>&1) | sed '1s/^HDF5 ".*" {$/HDF5 FILE {/' >"$dir/dump"
  fi
}

without_v() { grep -v '^mana_launch: running: ' "$1"; }
crash_re='Abort\(|Fatal error|Segmentation fault|core dumped|Killed|BAD TERMINATION|HDF5-DIAG|hdf5_app: rank'

# check FORM: one FAIL line per problem; returns 1 if there was any.
check() {
  local form=$1 nat=$tmp/native dir=$tmp/$1
  local repro; repro="reproduce: $(cat "$dir/cmd")"
  local bad=0 rc nrc
  rc=$(cat "$dir/rc"); nrc=$(cat "$nat/rc")
  local why=""; { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && why=" (timed out after ${limit}s)"
  local crash
  crash=$(without_v "$dir/err" | cat - "$dir/out" | grep -E "$crash_re" | head -2 | tr '\n' '|' | sed 's/|$//')
  if [ "$form" = native ]; then
    # the native run must be clean, otherwise there is nothing to compare with
    [ "$rc" = 0 ] || { fail "native: exit status $rc$why: the program fails without mana; $repro"; bad=1; }
    [ -z "$crash" ] || { fail "native: error output: $crash; $repro"; bad=1; }
    tail -1 "$dir/out" | grep -qx 'hdf5_app: PASS' ||
      { fail "native: no 'hdf5_app: PASS' verdict (last line: $(tail -1 "$dir/out")); $repro"; bad=1; }
    if [ -n "$h5dump" ] && ! grep -q 'DATASET "series"' "$dir/dump" 2>/dev/null; then
      fail "native: h5dump -p $file shows no dataset series: $(head -2 "$dir/dump" 2>/dev/null | tr '\n' ' ')"; bad=1
    fi
    return $bad
  fi
  if [ "$rc" != "$nrc" ]; then fail "$form: exit status $rc$why, native $nrc; $repro"; bad=1; fi
  [ -z "$crash" ] || { fail "$form: error output: $crash; $repro"; bad=1; }
  local got want=1
  got=$(grep -c '^mana_launch: running: .*/mana_lh ' "$dir/err")
  [ "$form" = per-rank ] && want=2
  if [ "$got" != "$want" ]; then
    fail "$form: $got 'mana_launch: running: ... mana_lh' line(s), expected $want: did mana run it?"; bad=1
  fi
  local d f
  for f in out err; do
    d=$(diff <(without_v "$nat/$f") <(without_v "$dir/$f") | grep '^[<>]' | head -4 | tr '\n' '|')
    [ -z "$d" ] || { fail "$form: $f differs from native (< native, > mana): ${d%|}; $repro"; bad=1; }
  done
  if [ -n "$h5dump" ]; then
    d=$(diff "$nat/dump" "$dir/dump" 2>&1 | grep '^[<>]' | head -4 | tr '\n' '|')
    [ -z "$d" ] || { fail "$form: h5dump -p of $file differs from native (< native, > mana): ${d%|}; $repro"; bad=1; }
  fi
  return $bad
}

echo "parallel HDF5: $(basename "${compile[0]}"), $steps steps, mana: $launch${h5dump:+, h5dump: $h5dump}"
[ -n "$h5dump" ] || echo "note: h5dump not found (package hdf5-tools): the file is compared through the program's read-back checksums only"
t_start=$(date +%s)
for form in "${forms[@]}"; do run "$form"; done
line=""
for form in "${forms[@]}"; do line="$line $form $(cat "$tmp/$form/time")s"; done
echo "runs:$line; native: $(grep -c '^step ' "$tmp/native/out") steps, $(grep -c ': ok$' "$tmp/native/out") read-back checks ok"
native_ok=1
if check native; then
  for form in launcher per-rank; do
    if check "$form"; then
      echo "ok   $form: same exit status, stdout, stderr${h5dump:+ and h5dump} as native"
    else
      echo "BAD  $form"
    fi
  done
else
  native_ok=0
fi

# ---- checkpoints, kills and restarts inside the run -------------------------------------
# The file lives outside run_at_calls.sh's work directory, which it removes when every point
# passed: what is left is the file of the last point's run, a restarted one.
if [ $native_ok = 1 ]; then
  mkdir -p "$tmp/at_calls"
  ac=("$at_calls" --bin "$bindir" --points "$points" --keep-every 3 --refusals-fail
      --timeout "$limit" "$app" -s "$steps" "$tmp/at_calls/$file")
  shown="${ac[*]}"
  shown=${shown//"$tmp/at_calls/$file"/$file}
  repro="reproduce: $rebuild && ${shown//"$app"/./hdf5_app}"
  t0=$(date +%s.%N)
  # each of the runs (native, counting, 2 per point) has the limit: the whole is bounded
  timeout -k 10 $(( limit * (2 * points + 3) )) "${ac[@]}" </dev/null >"$tmp/at_calls/log" 2>&1
  rc=$?
  t=$(elapsed "$t0")
  sed -n -e '/^[0-9]* /p' -e 's/^run_at_calls.sh: //p' "$tmp/at_calls/log" | sed 's/^/  /' | cut -c1-240
  last=$(grep -E '^[0-9]+ ' "$tmp/at_calls/log" | tail -1)
  if [ "$rc" != 0 ]; then
    why=$(sed -n 's/^run_at_calls.sh: FAIL: //p' "$tmp/at_calls/log" | tail -1 | cut -c1-600)
    kept=$(sed -n 's/^run_at_calls.sh: work directory kept: //p' "$tmp/at_calls/log")
    fail "checkpoints at MPI calls: run_at_calls.sh exited $rc after ${t}s: ${why:-$(tail -1 "$tmp/at_calls/log")}${kept:+ (its logs: $kept)}; $repro"
  elif ! grep -q 'PASS: every point identical to native' "$tmp/at_calls/log"; then
    fail "checkpoints at MPI calls: no PASS line from run_at_calls.sh; $repro"
  elif [ -n "$h5dump" ]; then
    case $last in
      *" restarted ["*)
        (cd "$tmp/at_calls" && "$h5dump" -p "$file" 2>&1) | sed '1s/^HDF5 ".*" {$/HDF5 FILE {/' >"$tmp/at_calls/dump"
        d=$(diff "$tmp/native/dump" "$tmp/at_calls/dump" 2>&1 | grep '^[<>]' | head -4 | tr '\n' '|')
        if [ -n "$d" ]; then
          fail "checkpoints at MPI calls: h5dump -p of the file of the last restarted run (${last%% *}) differs from native (< native, > restarted): ${d%|}; $repro"
        else
          echo "ok   checkpoints at MPI calls (${t}s); the file after the restart at call ${last%% *} dumps as native"
        fi ;;
      *) echo "ok   checkpoints at MPI calls (${t}s); the last point (${last:-none}) was not a restart: its file is not dumped" ;;
    esac
  else
    echo "ok   checkpoints at MPI calls (${t}s)"
  fi
fi
echo "hdf5: $failures failure(s), $(( $(date +%s) - t_start ))s"
[ $failures = 0 ]
