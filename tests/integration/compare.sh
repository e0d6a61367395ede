#!/usr/bin/env bash
# compare.sh - run an MPI program natively and under mana, and compare what it prints.
#
# usage: compare.sh [--ranks N] [--mode native|launch-outer|launch-inner]
#                   [--expect-exit CODE] [--timeout SECONDS] PROGRAM [ARGS...]
#
#   --ranks N          number of MPI processes (default 2)
#   --mode MODE        native        run natively only (checks exit status and RESULT line)
#                      launch-outer  also run  $MANA_BIN/mana_launch mpiexec.mpich -n N PROGRAM ARGS
#                      launch-inner  also run  mpiexec.mpich -n N $MANA_BIN/mana_launch PROGRAM ARGS
#                      (default native)
#   --expect-exit CODE expected exit status of every run: a number, or "nonzero" (default 0)
#   --timeout SECONDS  limit for each run (default $MANA_TEST_TIMEOUT, else 120); a run that
#                      exceeds it is killed and counts as a failure
#
# The native run always happens first. Under a mana mode, stdout of the two runs must be
# byte-for-byte identical (the test programs print deterministic output, so no normalisation
# is applied) and both exit statuses must be equal and match --expect-exit. On a mismatch the
# unified diff of stdout and the tail of each run's stderr are printed. Exit status: 0 when
# everything matched, 1 on any mismatch or failure, 2 on a usage error.
#
# MANA_BIN (environment) is the directory holding mana_launch; it defaults to <build>/bin
# when PROGRAM lives in <build>/tests/programs/.
set -u

ranks=2
mode=native
expect=0
limit=${MANA_TEST_TIMEOUT:-120}

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    --ranks=*) ranks=${1#*=}; shift ;;
    --mode) [ $# -ge 2 ] || usage; mode=$2; shift 2 ;;
    --mode=*) mode=${1#*=}; shift ;;
    --expect-exit) [ $# -ge 2 ] || usage; expect=$2; shift 2 ;;
    --expect-exit=*) expect=${1#*=}; shift ;;
    --timeout) [ $# -ge 2 ] || usage; limit=$2; shift 2 ;;
    --timeout=*) limit=${1#*=}; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "compare.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
program=$1
shift

case "$ranks" in ''|*[!0-9]*) echo "compare.sh: --ranks needs a positive integer" >&2; exit 2 ;; esac
case "$limit" in ''|*[!0-9]*) echo "compare.sh: --timeout needs a whole number of seconds" >&2; exit 2 ;; esac
case "$expect" in nonzero) ;; ''|*[!0-9]*) echo "compare.sh: --expect-exit needs a number or 'nonzero'" >&2; exit 2 ;; esac
case "$mode" in native|launch-outer|launch-inner) ;; *) echo "compare.sh: unknown mode '$mode'" >&2; exit 2 ;; esac

if [ ! -x "$program" ]; then
  echo "compare.sh: FAIL: program '$program' not found or not executable"
  exit 1
fi
case "$program" in /*) ;; *) program="$(cd "$(dirname "$program")" && pwd)/$(basename "$program")" ;; esac
name=$(basename "$program")

MPIEXEC=${MPIEXEC:-mpiexec.mpich}
if [ "$mode" != native ]; then
  if [ -z "${MANA_BIN:-}" ]; then
    case "$program" in
      */tests/programs/*) MANA_BIN="${program%/tests/programs/*}/bin" ;;
      *) echo "compare.sh: FAIL: MANA_BIN is not set and cannot be derived from $program"; exit 1 ;;
    esac
  fi
  launch="$MANA_BIN/mana_launch"
  if [ ! -x "$launch" ]; then
    echo "compare.sh: FAIL: $launch not found or not executable (set MANA_BIN)"
    exit 1
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-compare.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# the coordinator's files go with the rest, not into the directory the test runs in
export MANA_CKPTDIR=${MANA_CKPTDIR:-$work/mana-ckpt}
trap 'exit 1' INT TERM HUP

# run LABEL CMD... : runs the command with a timeout, stdin from /dev/null, stdout and stderr
# to files in $work; sets rc_LABEL and secs_LABEL
run() {
  local label=$1
  shift
  echo "compare.sh: [$label] $*"
  local t0 t1 rc
  t0=$(date +%s.%N)
  # timeout makes itself a process-group leader and signals the whole group, so the ranks
  # started by mpiexec are killed too; -k escalates to SIGKILL if SIGTERM is ignored.
  timeout -k 10 "$limit" "$@" </dev/null >"$work/$label.out" 2>"$work/$label.err"
  rc=$?
  t1=$(date +%s.%N)
  printf -v "rc_${label//-/_}" '%s' "$rc"
  printf -v "secs_${label//-/_}" '%s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
}

exit_ok() { # exit_ok RC
  if [ "$expect" = nonzero ]; then [ "$1" -ne 0 ]; else [ "$1" -eq "$expect" ]; fi
}

describe_rc() { # describe_rc RC
  case "$1" in
    124|137) echo "$1 (timed out after ${limit}s)" ;;
    *) echo "$1" ;;
  esac
}

show_stderr() { # show_stderr LABEL
  if [ -s "$work/$1.err" ]; then
    echo "---- stderr of the $1 run (last 30 lines) ----"
    tail -n 30 "$work/$1.err"
  fi
}

fail=0

run native "$MPIEXEC" -n "$ranks" "$program" "$@"
echo "compare.sh: [native] exit $(describe_rc "$rc_native"), $(wc -l <"$work/native.out") lines of stdout, ${secs_native} s"
if ! exit_ok "$rc_native"; then
  echo "compare.sh: FAIL: native exit status $(describe_rc "$rc_native"), expected $expect"
  fail=1
fi
if grep -q '^RESULT FAIL' "$work/native.out"; then
  echo "compare.sh: FAIL: the program reported failed checks natively:"
  grep -E '^(\[[0-9]+\] )?FAIL' "$work/native.out" | head -n 20
  fail=1
fi
if [ "$mode" = native ]; then
  if [ $fail -ne 0 ]; then
    echo "---- stdout of the native run ----"
    cat "$work/native.out"
    show_stderr native
    echo "compare.sh: $name (native, $ranks ranks): FAIL"
    exit 1
  fi
  echo "compare.sh: $name (native, $ranks ranks): PASS"
  exit 0
fi

if [ "$mode" = launch-outer ]; then
  run mana "$launch" "$MPIEXEC" -n "$ranks" "$program" "$@"
else
  run mana "$MPIEXEC" -n "$ranks" "$launch" "$program" "$@"
fi
echo "compare.sh: [mana] exit $(describe_rc "$rc_mana"), $(wc -l <"$work/mana.out") lines of stdout, ${secs_mana} s"

if [ "$rc_mana" -ne "$rc_native" ]; then
  echo "compare.sh: FAIL: exit status under mana $(describe_rc "$rc_mana") differs from native $rc_native"
  fail=1
elif ! exit_ok "$rc_mana"; then
  echo "compare.sh: FAIL: exit status under mana $(describe_rc "$rc_mana"), expected $expect"
  fail=1
fi
if ! cmp -s "$work/native.out" "$work/mana.out"; then
  echo "compare.sh: FAIL: stdout under mana differs from native:"
  diff -u --label "native: $name" --label "mana ($mode): $name" "$work/native.out" "$work/mana.out" | head -n 200
  fail=1
fi

if [ $fail -ne 0 ]; then
  show_stderr native
  show_stderr mana
  echo "compare.sh: $name ($mode, $ranks ranks): FAIL"
  exit 1
fi
echo "compare.sh: $name ($mode, $ranks ranks): PASS (native ${secs_native} s, mana ${secs_mana} s)"
exit 0
