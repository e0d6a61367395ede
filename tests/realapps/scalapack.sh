#!/usr/bin/env bash
# Runs ScaLAPACK's own testers (Debian package scalapack-mpi-test, MPICH build) at 2 ranks
# natively and under both mana_launch forms, and checks that mana changes nothing: the
# tester output must be identical once the timing columns are removed (test parameters,
# residuals, PASSED/FAILED verdicts and the summary counts are kept; see
# scalapack_normalise.py), and so must every rank's standard error.
# The inputs are the small .dat files in dat/ (1x2 and 2x1 process grids).
#
#   usage: tests/realapps/scalapack.sh [MANA_BIN [TESTER...]]
#     MANA_BIN  the directory with mana_launch (default: $MANA_BIN, else build/bin)
#     TESTER    run only these testers (default: all of those listed below)
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with
# the command that reproduces it), 77 when the testers or MPICH are not installed.
# MANA_REALAPPS_KEEP=1 keeps the temporary directory with every run's output.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2
fi
bindir=${1:-${MANA_BIN:-$top/build/bin}}
[ $# -gt 0 ] && shift
launch=$bindir/mana_launch
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
testdir=${SCALAPACK_TESTS:-/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests}
python=${PYTHON:-python3}
normalise=$here/scalapack_normalise.py
datdir=$here/dat
# A run longer than this is a hang. Idle runs take 0.2-10 s, but on a 2-core machine
# shared with other work the same runs took up to 60 s natively (xdsep, xdtrd).
limit=${MANA_REALAPPS_TIMEOUT:-300}

# tester:input file.  xdllt runs without the condition-estimation and iterative-refinement
# tests: with them it hangs or aborts natively now and then (see dat/LLT.dat).
testers=(xdlu:LU xzlu:LU xdllt:LLT xdqr:QR xzqr:QR xdinv:INV xdls:LS xdbrd:BRD xdhrd:HRD
         xdtrd:TRD xdnep:NEP xdsep:SEP xddblu:BLU xdgblu:BLU xddtlu:BLU xdpbllt:BLLT
         xdptllt:BLLT)
if [ $# -gt 0 ]; then
  selected=()
  for want in "$@"; do
    found=""
    for t in "${testers[@]}"; do [ "${t%%:*}" = "$want" ] && found=$t; done
    [ -n "$found" ] || { echo "unknown tester $want"; exit 2; }
    selected+=("$found")
  done
  testers=("${selected[@]}")
fi

if [ ! -d "$testdir" ] || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: $testdir or $mpiexec missing (tests/setup/install-deps.sh installs them)"
  exit 77
fi
if [ ! -x "$launch" ]; then
  echo "FAIL: $launch not found or not executable (build mana first)"; exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-scalapack.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

forms=(native launcher per-rank)

# run FORM TESTER DAT: runs the tester in $tmp/TESTER.FORM/ with its input file there.
# Each rank's stdout and stderr go to their own files (out.RANK, err.RANK); mpiexec's
# (and mana_launch's) own output goes to out and err.
run() {
  local form=$1 tester=$2 dat=$3 dir=$tmp/$2.$1
  mkdir -p "$dir"
  cp "$datdir/$dat.dat" "$dir/"
  local files=(-outfile-pattern out.%r -errfile-pattern err.%r)
  local cmd
  case $form in
    native)   cmd=("$mpiexec" -n 2 "${files[@]}" "$testdir/$tester") ;;
    launcher) cmd=("$launch" -v "$mpiexec" -n 2 "${files[@]}" "$testdir/$tester") ;;
    per-rank) cmd=("$mpiexec" -n 2 "${files[@]}" "$launch" -v "$testdir/$tester") ;;
  esac
  echo "cd \$(mktemp -d) && cp $datdir/$dat.dat . && timeout $limit ${cmd[*]}" > "$dir/cmd"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$dir" && timeout -k 10 "$limit" "${cmd[@]}" </dev/null >out 2>err)
  echo $? > "$dir/rc"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' > "$dir/time"
  touch "$dir/out.0" "$dir/out.1" "$dir/err.0" "$dir/err.1"
  # rank 0 writes the report; the normalised form drops the timing columns
  "$python" "$normalise" "$dir/out.0" > "$dir/report" 2>&1
  "$python" "$normalise" --summary "$dir/out.0" > "$dir/summary" 2>&1
}

without_v() { grep -v '^mana_launch: running: ' "$1"; }
crash_re='BLACS ERROR|Abort\(|Fatal error|Segmentation fault|Program received signal|Backtrace for this error|core dumped|Killed|BAD TERMINATION|ILLEGAL GRID|Bad +grid'
# summary field
field() { sed -E -n "s/.*\\b$2=([0-9]+).*/\\1/p" "$1/summary"; }

# check TESTER FORM: one FAIL line per problem; returns 1 if there was any.
check() {
  local tester=$1 form=$2 nat=$tmp/$1.native dir=$tmp/$1.$2
  local repro; repro="reproduce: $(cat "$dir/cmd")"
  local bad=0 rc nrc
  rc=$(cat "$dir/rc"); nrc=$(cat "$nat/rc")
  local why=""; { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && why=" (timed out after ${limit}s)"
  local crash
  crash=$(cat "$dir/out" "$dir/err" "$dir"/out.? "$dir"/err.? | grep -v '^mana_launch: running: ' |
          grep -E "$crash_re" | head -2 | tr '\n' '|' | sed 's/|$//')
  if [ "$form" = native ]; then
    # the native run must be clean, otherwise there is nothing to compare with
    [ "$rc" = 0 ] || { fail "$tester native: exit status $rc$why: the tester fails without mana; $repro"; bad=1; }
    [ -z "$crash" ] || { fail "$tester native: error output: $crash; $repro"; bad=1; }
    if [ "$(field "$dir" complete)" != 1 ]; then
      fail "$tester native: no 'Finished N tests' / 'END OF TESTS' (incomplete run); $repro"; bad=1
    elif [ "$(field "$dir" failed)" != 0 ] || [ "$(field "$dir" rows_failed)" != 0 ]; then
      fail "$tester native: the tester reports failures ($(cat "$dir/summary")); $repro"; bad=1
    elif [ "$(field "$dir" passed)" = 0 ]; then
      fail "$tester native: no test passed ($(cat "$dir/summary")); $repro"; bad=1
    fi
    return $bad
  fi
  if [ "$rc" != "$nrc" ]; then fail "$tester $form: exit status $rc$why, native $nrc; $repro"; bad=1; fi
  [ -z "$crash" ] || { fail "$tester $form: error output: $crash; $repro"; bad=1; }
  local got want=1
  got=$(cat "$dir/err" "$dir"/err.? | grep -c '^mana_launch: running: .*/mana_lh ')
  [ "$form" = per-rank ] && want=2
  if [ "$got" != "$want" ]; then
    fail "$tester $form: $got 'mana_launch: running: ... mana_lh' line(s), expected $want: did mana run it?"; bad=1
  fi
  if ! cmp -s "$nat/summary" "$dir/summary"; then
    fail "$tester $form: summary $(cat "$dir/summary"), native $(cat "$nat/summary"); $repro"; bad=1
  fi
  local d
  d=$(diff "$nat/report" "$dir/report" | grep '^[<>]' | head -4 | tr '\n' '|')
  if [ -n "$d" ]; then
    fail "$tester $form: report differs from native in $(diff "$nat/report" "$dir/report" | grep -c '^>') line(s) (< native, > mana): ${d%|}; $repro"
    bad=1
  fi
  local f
  for f in out err out.1 err.0 err.1; do
    d=$(diff <(without_v "$nat/$f") <(without_v "$dir/$f") | grep '^[<>]' | head -2 | tr '\n' '|')
    [ -z "$d" ] || { fail "$tester $form: $f differs from native (< native, > mana): ${d%|}; $repro"; bad=1; }
  done
  return $bad
}

echo "ScaLAPACK testers: $testdir, mana: $launch"
t_start=$(date +%s)
for t in "${testers[@]}"; do
  tester=${t%%:*} dat=${t#*:}
  if [ ! -x "$testdir/$tester" ]; then fail "$tester: $testdir/$tester not found"; continue; fi
  for form in "${forms[@]}"; do run "$form" "$tester" "$dat"; done
  line="$tester ($dat.dat):"
  for form in "${forms[@]}"; do line="$line $form $(cat "$tmp/$tester.$form/time")s"; done
  ok=1
  if check "$tester" native; then
    for form in launcher per-rank; do check "$tester" "$form" || ok=0; done
  else
    ok=0
  fi
  s=$tmp/$tester.native
  counts="$(field "$s" passed) passed, $(field "$s" failed) failed, $(field "$s" skipped) skipped"
  if [ $ok = 1 ]; then
    echo "ok   $line; $counts, $(grep -c '^ROW' "$s/report") result rows, same under mana"
  else
    echo "BAD  $line; native: $counts"
  fi
done
echo "scalapack: $failures failure(s), $(( $(date +%s) - t_start ))s"
[ $failures = 0 ]
